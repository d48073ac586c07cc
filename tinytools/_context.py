"""Invocation context: who and where a tool runs, its progress channel, the application's stores.

These values come from the application and the dispatcher, never from the model. A tool
receives them by annotating a parameter with their type (no `Injected` marker needed):
`Invocation`, `Progress`, `Stores`, `CancellationToken` (and `ToolCall`). None of them appears
in a schema, so a model that sends ``run_id`` is refused like any unknown argument.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec

from tinytools._errors import CancelledCall, NeedsInput
from tinytools._events import ToolEvent, ToolOutputChunk, ToolProgress
from tinytools._public import publish
from tinytools._results import ToolCall

__all__ = [
    "SILENT_PROGRESS",
    "Ask",
    "CancellationToken",
    "CancelledCall",
    "Discovery",
    "IdempotencyKey",
    "Invocation",
    "PlanRun",
    "Progress",
    "RunContext",
    "Stores",
]


class RunContext(msgspec.Struct, frozen=True):
    """The trusted identity of a run, given to `Dispatcher(context=...)`."""

    run_id: str | None = None
    """This run of the agent."""
    session_id: str | None = None
    """The conversation or session the run belongs to."""
    agent_id: str | None = None
    """The agent making the calls."""
    workspace_id: str | None = None
    """The workspace the tools act on."""
    actor: str | None = None
    """Who the agent acts for (the authenticated caller)."""


class Invocation(msgspec.Struct, frozen=True):
    """The trusted, read-only identity of one execution of a tool."""

    call: ToolCall
    """The call being executed."""
    tool_name: str
    """The tool's canonical name."""
    run_id: str | None = None
    """From the dispatcher's `RunContext`."""
    step_id: str | None = None
    """The batch (or single call) this execution belongs to."""
    session_id: str | None = None
    """From the dispatcher's `RunContext`."""
    agent_id: str | None = None
    """From the dispatcher's `RunContext`."""
    workspace_id: str | None = None
    """From the dispatcher's `RunContext`."""
    actor: str | None = None
    """From the dispatcher's `RunContext`: the trusted caller identity."""
    attempt: int = 1
    """1 for the first try; more on retries."""
    max_inline_output_bytes: int | None = None
    """The dispatcher's inline output budget, if any."""
    deadline: float | None = None
    """``time.perf_counter()`` value after which the run starts no call, or None."""

    @property
    def time_left(self) -> float | None:
        """Seconds left before the run's deadline (never negative), or None without one."""
        if self.deadline is None:
            return None
        from time import perf_counter

        return max(0.0, self.deadline - perf_counter())


class IdempotencyKey(str):
    """The call's idempotency key, for a tool to pass on to an outside API (injected by type).

    It is made from the run and the call id, so a call sent again (after a crash, by a provider
    that retries) gets the same key in every process, and an API that deduplicates by key
    applies it once; two calls are two keys. A tool that declares ``@tool(idempotency_key=fn)``
    gets the key of the act ``fn`` names (its run, the tool and ``fn``'s value), the same for
    every call of that act.
    """

    __slots__ = ()


class Ask:
    """Asks the user for input from inside a tool (injected by type).

    ``ask(message, schema)`` returns the answer when the call was resumed with one, and
    otherwise raises `NeedsInput`, which ends the call's turn ``pending``. Questions are matched
    to answers by their order in the call; ``answers`` holds every answer given so far, and
    ``state`` what the tool kept with the question last answered (``ask(..., state=...)``).
    """

    __slots__ = ("answers", "asked", "state")

    def __init__(self, answers: list[Any] | tuple[Any, ...] = (), state: str | None = None):
        self.answers = list(answers)
        """The answers given so far, in the order the questions were asked."""
        self.asked = 0
        """How many questions this run of the tool has asked."""
        self.state = state
        """The ``state`` the tool kept with the question last answered (None if it kept none)."""

    def __call__(
        self,
        message: str,
        schema: dict[str, Any] | None = None,
        *,
        ttl: float | None = None,
        state: str | None = None,
        name: str | None = None,
    ) -> Any:
        """The answer to this question (validated against ``schema``), or `NeedsInput`.

        ``state`` is kept with the question, shown to no one, and read back as `Ask.state` by
        the run the answer resumes; ``name`` is what the question is called
        (`PendingRequest.name`: an MCP server's key for it).

        Raises:
            NeedsInput: The question has no answer yet.
        """
        index, self.asked = self.asked, self.asked + 1
        if index < len(self.answers):
            return self.answers[index]
        raise NeedsInput(message, schema, ttl=ttl, state=state, name=name)


class Discovery:
    """Finds deferred tools and reveals them for the rest of the run (injected by type).

    A search tool takes one: ``discovery.find(query, k)`` searches the deferred tools of the
    toolbox the call runs in (leaving out those a policy denies or this turn does not allow),
    reveals the ones it returns, and returns them; the run's later calls may then reach them.
    """

    __slots__ = ("_find",)

    def __init__(self, find: Callable[[str, int], list[Any]]):
        self._find = find

    def find(self, query: str, k: int = 5) -> list[Any]:
        """The ``k`` best deferred tools for ``query`` (`Tool` objects), revealed."""
        return self._find(query, k)


class PlanRun:
    """Runs the call plan a plan tool was called with, in the dispatcher that runs it (injected by type).

    The plan tool (`Toolbox.plan_tool`) takes one: ``await plan.run(steps, returns)`` runs the plan's steps,
    already checked, through the pipeline that runs the plan's call, and returns its `ToolOutput`.
    """

    __slots__ = ("_run",)

    def __init__(self, run: Callable[[Any, Any], Any]):
        self._run = run

    def run(self, steps: Any, returns: Any) -> Any:
        """The plan's ``steps`` and ``return`` (as the call sent them), run: an awaitable of its `ToolOutput`."""
        return self._run(steps, returns)


class Progress:
    """Lets a running tool report progress and partial output.

    ``progress.progress(3, total=10, message="parsing")`` and ``progress.emit("row", data)``
    become `ToolProgress` and `ToolOutputChunk` events in the dispatcher's stream, in order,
    between `ToolStarted` and `ToolCompleted`. Without an event sink both do nothing.
    """

    __slots__ = ("_call_id", "_send", "_start", "_tool_name")

    def __init__(self, call_id: str, tool_name: str, start: int, send: Callable[[ToolEvent], None] | None):
        self._call_id = call_id
        self._tool_name = tool_name
        self._start = start
        self._send = send

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report ``done`` units of work out of ``total`` (None when unknown)."""
        if self._send is not None:
            from time import perf_counter_ns

            elapsed = perf_counter_ns() - self._start
            self._send(ToolProgress(self._call_id, self._tool_name, elapsed, done, total, message))

    def emit(self, kind: str, data: Any) -> None:
        """Report a piece of partial output of some ``kind``."""
        if self._send is not None:
            from time import perf_counter_ns

            elapsed = perf_counter_ns() - self._start
            self._send(ToolOutputChunk(self._call_id, self._tool_name, elapsed, kind, data))


SILENT_PROGRESS = Progress("", "", 0, None)
"""A `Progress` that reports nothing (no sink)."""


class Stores(Mapping[str, Any]):
    """The application's named stores (``stores["memory"]``), read-only for tools."""

    def __init__(self, stores: Mapping[str, Any] | None = None):
        self._stores = dict(stores or {})

    def __getitem__(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            known = ", ".join(self._stores) or "none"
            raise KeyError(f"no store named {name!r} (registered: {known})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._stores)

    def __len__(self) -> int:
        return len(self._stores)


class CancellationToken:
    """A cancel signal that sync and async code can both check and wait on.

    ``token.cancelled`` to poll, ``token.wait(timeout)`` to block a thread,
    ``await token.wait_async()`` to wait in a coroutine. Children (one per call) are
    cancelled with their parent.
    """

    def __init__(self, parent: CancellationToken | None = None):
        self._event = threading.Event()
        self.cancelled = False
        """Whether cancellation was requested (read it; `cancel` sets it)."""
        self._callbacks: list[Callable[[], Any]] = []
        self._lock = threading.Lock()
        self.reason: str | None = None
        """Why it was cancelled (``"cancelled"``, ``"timeout"``), or None."""
        self._detach: Callable[[], None] = lambda: None
        if parent is not None:  # followed by weak references: no cycle keeps either token alive
            child, source = weakref.ref(self), weakref.ref(parent)

            def follow() -> None:
                me, origin = child(), source()
                if me is not None:
                    me.cancel((origin.reason if origin is not None else None) or "cancelled")

            self._detach = parent.on_cancel(follow)

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation; runs the registered callbacks once."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self.cancelled = True
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` when cancelled (at once if already cancelled).

        Returns:
            A function that unregisters the callback, for work that ended first.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], Any]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def detach(self) -> None:
        """Stop following the parent token (when the call this token belongs to is over)."""
        self._detach()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; returns `cancelled`."""
        return self._event.wait(timeout)

    async def wait_async(self) -> None:
        """Wait in a coroutine until cancelled."""
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake_future() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(wake_future)

        self.on_cancel(wake)
        await future

    def raise_if_cancelled(self) -> None:
        """Raise `CancelledCall` if cancellation was requested (for cooperative tools)."""
        if self.cancelled:
            raise CancelledCall(self.reason or "cancelled")


publish("tinytools", RunContext, Invocation, IdempotencyKey, Ask, Progress, Stores, CancellationToken)
