"""Threads the pipeline runs on: sync tools' worker threads, and event loops for sync callers.

`ToolThreads` is one process-wide pool of daemon threads for sync tools (and sync approvers),
each run in a copy of its submitter's `contextvars` (a request id, a tracing span reach the tool):
a thread is reused when idle, so a batch does not start a thread per call, and a tool that
never returns cannot keep the interpreter from exiting. When a call stops waiting for its thread
(its timeout passed, or the run was cancelled) while the tool runs on, the thread becomes a
*stray*: it no longer counts against the dispatcher's concurrency, it is logged, and it counts
against `MAX_STRAY_THREADS`. Past that limit a new threaded call is refused
(``executor_unavailable``) rather than adding threads without end.

`run_coroutine` runs a coroutine to completion from sync code on this thread's own loop.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from tinytools._public import publish
from tinytools._run.failures import interrupts

if TYPE_CHECKING:
    import concurrent.futures
    import queue

__all__ = [
    "IDLE_NAME",
    "MAX_STRAY_THREADS",
    "STRAY",
    "UNTAKEN",
    "Done",
    "Raised",
    "Strays",
    "ThreadsExhausted",
    "ToolThreads",
    "abandon_task",
    "run_coroutine",
    "stray_tasks",
    "strays",
    "tool_threads",
    "unheard",
]

MAX_STRAY_THREADS = 64
"""How many threads may still run tools whose calls ended before a new threaded call is refused."""
IDLE_NAME = "tinytools-idle"
"""The name of a pool thread waiting for work; one running a tool is named ``tinytools:<tool>``."""
IDLE_SECONDS = 30.0
"""How long an idle worker thread waits for work before it ends."""
LEFTOVER_GRACE = 1.0
"""Seconds a sync caller's loop waits for tasks a call left behind, once cancelled."""


STRAY, UNTAKEN = "stray", "untaken"
"""What `ToolThreads.abandon` says of work its caller stopped waiting for: a thread runs it on, or none ever will."""


class Raised:
    """What a worker thread's future holds when the work raised: the exception, not re-raised.

    A future never holds the tool's exception itself: asyncio would read a
    ``concurrent.futures.CancelledError`` the tool raised as the cancellation of its waiter.
    """

    __slots__ = ("exception",)

    def __init__(self, exception: BaseException):
        self.exception = exception


class ThreadsExhausted(Exception):
    """No thread can take the call: too many strays still run, or the process may start no more threads.

    The call was not started.
    """


class Done:
    """What a pool thread hands a loop's waiter when its work ended: the value, or a `Raised`."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


class _Submitted:
    __slots__ = ("abandoned", "args", "context", "fn", "future", "name", "started", "waiter")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], name: str, waiter: Any = None):
        self.fn = fn
        self.args = args
        self.name = name
        self.context = contextvars.copy_context()  # the submitter's: request ids and spans reach the tool
        self.waiter = waiter
        """An asyncio future the thread resolves with `Done` through its loop; or None, and `future`."""
        if waiter is None:
            import concurrent.futures  # loaded with the first thread a tool needs

            self.future: Any = concurrent.futures.Future()
        else:
            self.future = self  # the key this work is known by
        self.abandoned = False
        self.started = False
        """Whether a thread took it: work its caller abandoned before then never starts, and is no stray."""


class ToolThreads:
    """A pool of reusable daemon threads with a visible count of strays (see the module)."""

    def __init__(self, stray_limit: int = MAX_STRAY_THREADS):
        self.stray_limit = stray_limit
        """Strays allowed before new threaded calls are refused."""
        self._empty()

    def _empty(self) -> None:
        """No threads, no work, no strays: as made, and in a child made by fork (the parent's threads are not there)."""
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Submitted | None]] = []
        self._strays = 0
        self._running: dict[Any, _Submitted] = {}
        """Work running or waiting for a thread, by its key (its future, or itself)."""

    @property
    def strays(self) -> int:
        """Threads still running tools whose calls have ended."""
        return self._strays

    @property
    def busy(self) -> int:
        """Threads running work now (strays included); the others wait, idle, for work."""
        return len(self._running)

    def submit(self, fn: Callable[..., Any], *args: Any, name: str = "tool") -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on a pool thread; the future's value is the result or a `Raised`.

        Raises:
            ThreadsExhausted: `stray_limit` strays are running, or no thread could be started.
        """
        return self._hand(_Submitted(fn, args, name))  # type: ignore[no-any-return]

    def submit_to(self, waiter: Any, fn: Callable[..., Any], *args: Any, name: str = "tool") -> Any:
        """Run ``fn(*args)`` on a pool thread, which resolves the asyncio future ``waiter`` with a `Done`.

        One hop back to the loop, where `submit` and ``asyncio.wrap_future`` take three. Returns the
        key to `abandon` the work by.

        Raises:
            ThreadsExhausted: `stray_limit` strays are running, or no thread could be started.
        """
        return self._hand(_Submitted(fn, args, name, waiter))

    def _hand(self, work: _Submitted) -> Any:
        with self._lock:
            if self._strays >= self.stray_limit:
                raise ThreadsExhausted(
                    f"{self._strays} threads are still running tools whose calls ended (the limit is "
                    f"{self.stray_limit}); give those tools timeouts they honour (a CancellationToken)"
                )
            self._running[work.future] = work
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            import queue  # loaded with the first thread a tool needs

            inbox = queue.SimpleQueue()
            try:
                threading.Thread(target=self._serve, args=(inbox,), name=IDLE_NAME, daemon=True).start()
            except RuntimeError as exc:  # the process may start no more threads: the call is not made
                with self._lock:
                    del self._running[work.future]
                raise ThreadsExhausted(f"no thread could be started for the tool ({exc})") from None
        inbox.put(work)
        return work.future

    def abandon(self, future: concurrent.futures.Future[Any]) -> str | None:
        """The caller stops waiting for ``future``; a thread still running it becomes a stray (`STRAY`).

        Work no thread took yet never starts (`UNTAKEN`, and no stray). None when its work had ended
        already: what it ended with is, or is about to be, the future's result, the caller's to read.
        """
        with self._lock:
            work = self._running.get(future)
            if work is None:
                return None
            if work.abandoned:
                return STRAY if work.started else UNTAKEN
            work.abandoned = True
            if not work.started:  # no thread took it yet: none will, and it is no stray
                return UNTAKEN
            self._strays += 1
            strays = self._strays
        _logger().warning(
            "tool %r is still running in a thread after its call ended (%d such threads; the limit is %d)",
            work.name,
            strays,
            self.stray_limit,
        )
        return STRAY

    def _serve(self, inbox: queue.SimpleQueue[_Submitted | None]) -> None:
        import queue  # already loaded: this thread's inbox is one

        empty = queue.Empty
        while True:
            try:
                work = inbox.get(timeout=IDLE_SECONDS)
            except empty:
                with self._lock:
                    if inbox in self._idle:  # nobody handed it work meanwhile: end this thread
                        self._idle.remove(inbox)
                        return
                work = inbox.get()  # work is on its way
            if work is None:
                return
            self._run(work, inbox)

    def _run(self, work: _Submitted, inbox: queue.SimpleQueue[_Submitted | None]) -> None:
        """Run one piece of work; this thread is idle again before its answer goes out.

        Idle first: the answer wakes the waiting thread, which then finds this one already on its
        way back to its inbox rather than holding the interpreter to get there.
        """
        waiter = work.waiter
        with self._lock:
            started = work.started = not work.abandoned and (
                waiter is not None or work.future.set_running_or_notify_cancel()
            )
            if not started:  # its caller stopped waiting (a timeout, a cancellation) before a thread took it
                self._running.pop(work.future, None)
                self._idle.append(inbox)
        if not started:
            return
        thread = threading.current_thread()
        thread.name = f"tinytools:{work.name}"  # a thread dump shows which tool a thread runs
        try:
            outcome = work.context.run(work.fn, *work.args)
        except BaseException as exc:
            outcome = Raised(exc)
        thread.name = IDLE_NAME
        with self._lock:
            del self._running[work.future]
            abandoned = work.abandoned
            if abandoned:
                self._strays -= 1
            self._idle.append(inbox)
        if abandoned:
            unheard(work.name, outcome)
        if waiter is None:
            work.future.set_result(outcome)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            waiter.get_loop().call_soon_threadsafe(_settle, waiter, Done(outcome), None if abandoned else work.name)


def _settle(waiter: Any, done: Done, name: str | None) -> None:
    """Hand the work's end to its waiter; ``name`` unless the work was abandoned (and so logged already)."""
    if not waiter.done():
        waiter.set_result(done)
    elif name is not None:  # the call ended first (a timeout, the run's cancellation) as the work ended
        unheard(name, done.value)


def unheard(name: str, outcome: Any) -> None:
    """Log an exit (`KeyboardInterrupt`, `SystemExit`) a tool raised after its call ended: nobody hears it.

    ``outcome`` is what the tool's work ended with: a `Raised`, or the value it returned.
    """
    if outcome.__class__ is Raised and interrupts(outcome.exception):
        _logger().warning("tool %r raised %s after its call ended", name, type(outcome.exception).__name__)


_THREADS = ToolThreads()
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_THREADS._empty)


def tool_threads() -> ToolThreads:
    """The process's pool of tool threads."""
    return _THREADS


_STRAY_TASKS: weakref.WeakSet[Any] = weakref.WeakSet()
"""Tasks of async tools that ignored their cancellation: their calls ended without them."""


def abandon_task(task: Any, name: str) -> None:
    """The call of an async tool stops waiting for its task, which ignored its cancellation: a stray.

    It is logged like a stray thread, and a sync caller's loop does not wait for it again.
    """
    _STRAY_TASKS.add(task)
    _logger().warning(
        "tool %r is still running in a task after its call ended: it ignored its cancellation (%d such tasks)",
        name,
        stray_tasks(),
    )


class Strays(NamedTuple):
    """Tool work still running after its calls ended (see `strays`)."""

    threads: int
    """Threads running sync tools whose calls stopped waiting (a timeout, a cancelled run)."""
    tasks: int
    """Tasks of async tools that ignored their cancellation past the grace."""
    busy_threads: int
    """Pool threads running work now, strays included."""


def strays() -> Strays:
    """How much tool work this process still runs for calls that already ended.

    A stray is logged when it starts; this is the count to watch (in a health check, say): past
    `MAX_STRAY_THREADS` stray threads a new threaded call is refused with ``executor_unavailable``.
    """
    return Strays(_THREADS.strays, stray_tasks(), _THREADS.busy)


def stray_tasks() -> int:
    """Tasks of async tools still running after their calls ended (they ignored their cancellation)."""
    return sum(1 for task in list(_STRAY_TASKS) if not task.done())


def _logger() -> Any:
    import logging

    return logging.getLogger("tinytools")


def run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, whether or not a loop is running here.

    Each thread keeps one event loop for this (`_ThreadLoop`): starting and closing a loop per
    call costs about 0.1 ms. Inside a running loop the coroutine gets a loop of its own in a
    pool thread, so a sync caller never deadlocks the loop it is on.
    """
    import asyncio  # imported on first use: it alone costs more than importing tinytools

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _ThreadLoop.here().run(coroutine)
    outcome = _THREADS.submit(asyncio.run, coroutine, name="run_coroutine").result()
    if outcome.__class__ is Raised:
        raise outcome.exception
    return outcome


class _ThreadLoop:
    """This thread's event loop for sync callers, closed when the thread ends or Python exits.

    Like `asyncio.run`, each run ends by cancelling whatever tasks it left behind, so no task
    outlives the call that started it; one that ignores its cancellation is waited for
    `LEFTOVER_GRACE` seconds, then left (and logged). A process made by fork makes a loop of its own.
    """

    _local = threading.local()
    _open: ClassVar[weakref.WeakSet[_ThreadLoop]] = weakref.WeakSet()

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._open.add(self)

    @classmethod
    def here(cls) -> _ThreadLoop:
        """The calling thread's loop, made on first use."""
        made: _ThreadLoop | None = getattr(cls._local, "loop", None)
        if made is None or made.loop.is_closed() or made.pid != os.getpid():
            made = cls._local.loop = cls()
            cls._local.ending = _Ending(made)  # held by this thread alone: it goes when the thread ends
        return made

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        import asyncio

        task = self.loop.create_task(coroutine)
        try:
            return self.loop.run_until_complete(task)
        except BaseException:
            task.cancel()  # interrupted (Ctrl-C): the call stops here, as under asyncio.run
            raise
        finally:
            self._cancel_leftovers(asyncio.all_tasks(self.loop))

    def _cancel_leftovers(self, left: set[Any]) -> None:
        left = {task for task in left if task not in _STRAY_TASKS}  # already given their grace, and logged
        if not left:
            return
        import asyncio

        for leftover in left:
            leftover.cancel()
        _, pending = self.loop.run_until_complete(asyncio.wait(left, timeout=LEFTOVER_GRACE))
        if pending:
            _logger().warning("%d task(s) ignored their cancellation and are left pending", len(pending))

    def close(self) -> None:
        if self.loop.is_closed() or self.loop.is_running() or self.pid != os.getpid():
            return  # not this process's, or a daemon thread still runs it at exit
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # this thread runs no loop: the async generators can be closed here
            with contextlib.suppress(RuntimeError):
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()  # collected on a thread that runs another loop: closed as it is

    def __del__(self) -> None:  # the thread that owned it has ended
        self.close()


class _Ending:
    """Closes a thread's loop when the thread ends, even while something else still holds the loop.

    A task the application kept (its exception's traceback holds the frames that ran it) keeps
    the `_ThreadLoop` alive; this object is held by the thread's local storage alone.
    """

    __slots__ = ("made",)

    def __init__(self, made: _ThreadLoop):
        self.made = made

    def __del__(self) -> None:
        self.made.close()


@atexit.register
def _close_thread_loops() -> None:
    for loop in list(_ThreadLoop._open):
        loop.close()


publish("tinytools", Strays, strays)
