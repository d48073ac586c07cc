"""Drivers: how the one pipeline waits, from sync code and from async code.

The pipeline (`tinytools._run.pipeline`) is written once, as coroutines, and never waits on
anything itself: every wait goes through its driver. `AsyncDriver` serves async entry points
(``adispatch``, batches, the MCP server): a sync tool runs on a pool thread, never on the event
loop's thread; an async tool runs in a task of its own. `SyncDriver` serves sync entry points: it
runs the pipeline's coroutine to its end without an event loop, calling a sync tool inline on the
caller's thread (on a pool thread when it has a timeout, so the wait can end), and using this
thread's own loop only for what is async (an async tool, middleware or sink).

Both bound a call by its timeout and by the run's cancellation, and a call that ends before its
job does leaves the job behind, reported: a thread becomes a stray (`tinytools._run.threads`), a
task that ignores its cancellation is logged. Faults of sinks stay in the event.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tinytools._run.failures import interrupts, logger, propagates
from tinytools._run.jobs import (
    CANCELLED,
    RAISED,
    REFUSED,
    RETURNED,
    TIMEOUT,
    UNSTARTED,
    Channel,
    Job,
    Outcome,
    call_work,
    in_task,
    inside,
)
from tinytools._run.threads import (
    UNTAKEN,
    Done,
    Raised,
    ThreadsExhausted,
    abandon_task,
    run_coroutine,
    tool_threads,
)

if TYPE_CHECKING:
    import asyncio

    from tinytools._context import CancellationToken
    from tinytools._events import EventSink, ToolEvent

__all__ = ["GRACE_SECONDS", "AsyncDriver", "Driver", "SyncDriver", "drive", "in_place", "on_a_thread"]

GRACE_SECONDS = 0.1
"""How long a cancelled async tool may take to stop before its call ends without it."""


class Driver(ABC):
    """What the pipeline awaits; each entry point's driver decides how (see the module)."""

    asynchronous: bool
    """Whether the pipeline runs on an event loop (and may suspend)."""

    def __init__(self, sink: EventSink | None):
        self.sink = sink
        put = getattr(sink, "put_nowait", None)  # an asyncio.Queue
        self._send: Callable[[ToolEvent], Any] = put if put is not None else sink  # type: ignore[assignment]

    @abstractmethod
    async def wait_for(self, value: Awaitable[Any]) -> Any:
        """A hook's awaitable answer, awaited."""

    @abstractmethod
    def emit(self, event: ToolEvent) -> Awaitable[None] | None:
        """Hand an event to the sink (faults logged, never fatal); what is left to await, if anything."""

    @abstractmethod
    def start(self, job: Job) -> Outcome | Awaitable[Outcome]:
        """Run the job, bounded by its timeout and the run's cancellation: its outcome, or what to await."""

    @abstractmethod
    async def pause(self, seconds: float, token: CancellationToken) -> None:
        """Wait between attempts; the run's cancellation ends the wait early."""

    def deliver(self, event: ToolEvent) -> Awaitable[Any] | None:
        """Call the sink; what it returns when that is awaitable (faults logged, not raised)."""
        try:
            answer = self._send(event)
        except BaseException as exc:
            if propagates(exc):
                raise
            _sink_failed(event)
            return None
        return None if answer is None or not inspect.isawaitable(answer) else answer


class SyncDriver(Driver):
    """Runs the pipeline for sync entry points, on the caller's thread (see the module)."""

    asynchronous = False
    """Nothing may suspend: a journal is called through its sync methods."""

    async def wait_for(self, value: Awaitable[Any]) -> Any:
        """A hook's awaitable answer, run to its end on this thread's loop."""
        return run_coroutine(_awaited(value))

    def emit(self, event: ToolEvent) -> None:
        """Call the sink on this thread (an async sink runs on this thread's loop)."""
        if self.sink is None:
            return
        pending = self.deliver(event)
        if pending is not None:
            run_coroutine(_guarded(pending, event))

    def start(self, job: Job) -> Outcome:
        """A sync tool inline (on a pool thread under a timeout); an async one on this thread's loop."""
        if job.is_async:  # an async tool needs a loop: this thread's own
            return run_coroutine(AsyncDriver(self.sink).execute(job))  # type: ignore[no-any-return]
        if job.timeout is None:
            return self._inline(job)
        return self._threaded(job)

    def _inline(self, job: Job) -> Outcome:
        channel = job.channel
        if channel is not None:
            channel.notify = lambda: self._flush(channel)
        try:  # on this very thread: a cancellation here can only be the tool's own
            return Outcome(RETURNED, job.fn(*job.args, **job.kwargs))
        except BaseException as exc:
            if interrupts(exc):
                raise
            return Outcome(RAISED, exc)  # a CancelledError too: the attempt's end decides, as for a thread's

    def _threaded(self, job: Job) -> Outcome:
        wake = threading.Event()
        try:
            future = tool_threads().submit(call_work, job, name=job.name)
        except ThreadsExhausted as exc:
            return Outcome(REFUSED, exc)
        future.add_done_callback(lambda _: wake.set())
        cancelled: list[bool] = []

        def on_cancel() -> None:
            if not inside(job):  # a tool that cancels its own run still finishes its call
                cancelled.append(True)
                wake.set()

        forget = job.token.on_cancel(on_cancel)
        if job.channel is not None:
            job.channel.notify = wake.set
        deadline = _now() + job.timeout  # type: ignore[operator]
        try:
            while True:
                wake.wait(max(0.0, deadline - _now()))
                wake.clear()
                if job.channel is not None:
                    self._flush(job.channel)
                if cancelled:  # the run was cancelled while the tool ran: whatever it did is unknown
                    return UNSTARTED if _abandon(future) == UNTAKEN else Outcome(CANCELLED)
                if future.done():
                    return _outcome_of(future.result())
                if _now() >= deadline:
                    _abandon(future)
                    return Outcome(TIMEOUT)
        finally:
            forget()

    def _flush(self, channel: Channel) -> None:
        for event in channel.take():
            self.emit(event)

    async def pause(self, seconds: float, token: CancellationToken) -> None:
        """Block this thread until the pause is over or the run is cancelled."""
        token.wait(seconds)


class AsyncDriver(Driver):
    """Runs the pipeline for async entry points, on the running loop (see the module)."""

    asynchronous = True
    """On the running loop: a journal's async face is awaited where it has one."""

    async def wait_for(self, value: Awaitable[Any]) -> Any:
        """A hook's awaitable answer, awaited on the running loop."""
        return await value

    def emit(self, event: ToolEvent) -> Awaitable[None] | None:
        """Call the sink; an async sink's answer is left to await."""
        if self.sink is None:
            return None
        pending = self.deliver(event)
        return None if pending is None else _guarded(pending, event)

    def start(self, job: Job) -> Awaitable[Outcome]:
        """The job's run on this loop, to await (see `execute`)."""
        return self.execute(job)

    async def execute(self, job: Job) -> Outcome:
        """A sync tool on a pool thread, an async one in a task of its own (in this task without a timeout)."""
        import asyncio

        if job.channel is None:
            if job.is_async:
                if job.timeout is None:
                    return await in_place(job)
            else:
                return await on_a_thread(job)
        loop = asyncio.get_running_loop()
        if job.is_async:
            task: asyncio.Future[Any] = loop.create_task(_guarded_call(job))
        else:
            try:
                future = tool_threads().submit(call_work, job, name=job.name)
            except ThreadsExhausted as exc:
                return Outcome(REFUSED, exc)
            task = asyncio.wrap_future(future)
        relay = _Relay(self, job.channel, loop) if job.channel is not None else None
        try:
            stop = await _first_of(task, job, loop)
            if stop is None:
                return _outcome_of(task.result())
            await _stop(task, job, future if not job.is_async else None)
            return Outcome(stop)
        except BaseException:  # the caller itself was cancelled: the job must not run on unseen
            await _stop(task, job, future if not job.is_async else None, wait=False)
            raise
        finally:
            if relay is not None:
                await relay.drain()

    async def pause(self, seconds: float, token: CancellationToken) -> None:
        """Wait on the loop until the pause is over or the run is cancelled."""
        import asyncio

        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        timer = loop.call_later(seconds, _resolve, waiter, None)
        forget = token.on_cancel(lambda: loop.call_soon_threadsafe(_resolve, waiter, None))
        try:
            await waiter
        finally:
            timer.cancel()
            forget()


class _Relay:
    """Delivers a call's progress events from any thread to the sink, in order, on the loop."""

    def __init__(self, driver: AsyncDriver, channel: Channel, loop: asyncio.AbstractEventLoop):
        self.driver = driver
        self.channel = channel
        self.loop = loop
        self.tail: asyncio.Future[None] | None = None
        channel.notify = self.wake

    def wake(self) -> None:
        """Schedule delivery on the loop (called from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for this call any more
            self.loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        self.tail = self.loop.create_task(self._after(self.tail))

    async def _after(self, previous: asyncio.Future[None] | None) -> None:
        if previous is not None:
            await previous
        for event in self.channel.take():
            pending = self.driver.emit(event)
            if pending is not None:
                await pending

    async def drain(self) -> None:
        """Deliver every event sent so far, before the call's last events."""
        import asyncio

        await asyncio.sleep(0)  # let events sent from threads reach the loop
        if self.tail is not None:
            await self.tail
        for event in self.channel.take():
            pending = self.driver.emit(event)
            if pending is not None:
                await pending


async def in_place(job: Job) -> Outcome:
    """Await an async tool with no timeout in this very task; the run's cancellation cancels it here.

    No task of its own: its cancellation is this task's, caught here and taken back (`uncancel`),
    unless something else cancelled this task too.
    """
    import asyncio

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    state = {"ended": False, "cancelled": False}
    # the cancellations the task had before (caught, not taken back): none of them is one from outside
    before = task.cancelling() if task is not None and hasattr(task, "cancelling") else 0

    def cancel_here() -> None:
        if not state["ended"] and task is not None:
            state["cancelled"] = True
            task.cancel()

    def on_cancel() -> None:
        if not inside(job):  # a tool that cancels its own run still finishes its call
            loop.call_soon_threadsafe(cancel_here)

    forget = job.token.on_cancel(on_cancel)
    entered = in_task.set(job)
    try:
        value = await job.fn(*job.args, **job.kwargs)
    except asyncio.CancelledError:
        if not state["cancelled"]:
            raise
        state["cancelled"] = False  # taken back here
        if task is not None and hasattr(task, "uncancel") and task.uncancel() > before:
            raise  # cancelled from outside as well: that cancellation goes on
        return Outcome(CANCELLED)
    except BaseException as exc:  # GeneratorExit included: it is the tool's, raised up to here
        if propagates(exc):
            raise
        return Outcome(RAISED, exc)
    finally:
        state["ended"] = True
        forget()
        in_task.reset(entered)
        if state["cancelled"] and task is not None and hasattr(task, "uncancel"):
            task.uncancel()  # the run's cancellation reached the tool, which ended otherwise: taken back
    return Outcome(RETURNED, value)


async def on_a_thread(job: Job) -> Outcome:
    """A sync tool on a pool thread, which wakes this task once: its end, its timeout or the run's cancellation.

    The thread answers through the loop with a `Done`; a timeout or the run's cancellation answers
    first with its mark, and the thread runs on as a stray. So does one whose caller was cancelled.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def on_cancel() -> None:
        if not inside(job):  # a tool that cancels its own run still finishes its call
            loop.call_soon_threadsafe(_resolve, waiter, CANCELLED)

    forget = job.token.on_cancel(on_cancel)
    timer = loop.call_later(job.timeout, _resolve, waiter, TIMEOUT) if job.timeout is not None else None
    threads = tool_threads()
    try:  # handed over last: the thread wakes as this task goes back to the loop, not while it runs on
        key = threads.submit_to(waiter, call_work, job, name=job.name)
    except BaseException as exc:
        forget()
        if timer is not None:
            timer.cancel()
        if isinstance(exc, ThreadsExhausted):
            return Outcome(REFUSED, exc)
        raise
    try:
        got = await waiter
    except BaseException:  # the caller itself was cancelled: the thread runs on, unseen, as a stray
        threads.abandon(key)
        raise
    finally:
        forget()
        if timer is not None:
            timer.cancel()
    if got.__class__ is Done:
        return _outcome_of(got.value)
    if threads.abandon(key) == UNTAKEN and got == CANCELLED:
        return UNSTARTED  # no thread took the work before the run was cancelled: the call was not made
    return Outcome(got)


async def _first_of(task: asyncio.Future[Any], job: Job, loop: asyncio.AbstractEventLoop) -> str | None:
    """Wait for the job, its timeout or the run's cancellation: None when the job ended first."""
    waiter = loop.create_future()
    task.add_done_callback(lambda _: _resolve(waiter, None))

    def on_cancel() -> None:
        if not inside(job):  # a tool that cancels its own run still finishes its call
            loop.call_soon_threadsafe(_resolve, waiter, CANCELLED)

    forget = job.token.on_cancel(on_cancel)
    timer = loop.call_later(job.timeout, _resolve, waiter, TIMEOUT) if job.timeout is not None else None
    try:
        return await waiter  # type: ignore[no-any-return]
    finally:
        forget()
        if timer is not None:
            timer.cancel()


async def _stop(task: asyncio.Future[Any], job: Job, future: Any, *, wait: bool = True) -> None:
    """End the wait for job that has not finished: cancel a task, leave a thread as a stray."""
    import asyncio

    if future is not None:  # a thread cannot be stopped; its token (if any) was told
        task.cancel()
        _abandon(future)
        return
    task.cancel()
    if wait:
        done, _ = await asyncio.wait({task}, timeout=GRACE_SECONDS)
        if not done:
            abandon_task(task, job.name)
        elif not task.cancelled() and task.exception() is None:  # it ended otherwise than cancelled
            _outcome_of(task.result())  # raises an exit: it reaches the caller whatever the run's state


def _resolve(waiter: Any, value: Any) -> None:
    if not waiter.done():
        waiter.set_result(value)


async def _guarded_call(job: Job) -> Any:
    """Await an async tool inside its task; what it raises comes back as a `Raised`."""
    import asyncio

    in_task.set(job)
    try:
        return await job.fn(*job.args, **job.kwargs)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # GeneratorExit included: thrown up the task it would close the caller
        return Raised(exc)


def _abandon(future: Any) -> str | None:
    """Stop waiting for a pool thread's work; an exit it raised as the call ended still reaches the caller.

    (Work still running is a stray, and an exit it raises later is logged: `tinytools._run.threads.unheard`.)
    Returns what `ToolThreads.abandon` says of it.
    """
    abandoned = tool_threads().abandon(future)
    if abandoned or future.cancelled():  # a stray now, or it never ran
        return abandoned
    _outcome_of(future.result())  # set by now, or as soon as its thread lets go of the pool: raises an exit
    return None


def _outcome_of(value: Any) -> Outcome:
    if value is UNSTARTED:  # the work did not start: its run was cancelled first
        return UNSTARTED  # type: ignore[no-any-return]  # (mypy takes both sides of `is` for Any)
    if value.__class__ is Raised:
        if interrupts(value.exception):
            raise value.exception
        return Outcome(RAISED, value.exception)
    return Outcome(RETURNED, value)


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


async def _guarded(pending: Awaitable[Any], event: ToolEvent) -> None:
    try:
        await pending
    except BaseException as exc:
        if propagates(exc):
            raise
        _sink_failed(event)


def _sink_failed(event: ToolEvent) -> None:
    logger().exception("event sink failed on %s for call %r", type(event).__name__, event.call_id)


def drive(coroutine: Any) -> Any:
    """Run a coroutine of the pipeline under a `SyncDriver` to its end, with no event loop.

    Under a `SyncDriver` nothing in the pipeline suspends: every wait is the driver's, and the
    driver's waits block this thread instead.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a pipeline step suspended under the sync driver")


def _now() -> float:
    from time import monotonic

    return monotonic()
