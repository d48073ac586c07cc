"""A piece of job the pipeline hands its driver, and how it ended.

`Job` is one bounded call: a tool's, or an approver's. `Outcome` says how it ended. `Channel`
carries the call's progress events while it runs. `call_work` runs it on the current thread and
remembers, for the run's cancellation, that this thread is inside it (`inside`): a tool that
cancels its own run still finishes its own call.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._context import CancellationToken  # at run time: the docs read a Struct's field types

if TYPE_CHECKING:
    from tinytools._events import ToolEvent

__all__ = [
    "CANCELLED",
    "RAISED",
    "REFUSED",
    "RETURNED",
    "TIMEOUT",
    "UNSTARTED",
    "Channel",
    "Job",
    "Outcome",
    "call_work",
    "in_task",
    "inside",
]

RETURNED, RAISED, TIMEOUT, CANCELLED, REFUSED = "returned", "raised", "timeout", "cancelled", "refused"


class Outcome(msgspec.Struct):
    """How one piece of job ended.

    ``returned`` (a value), ``raised`` (an exception), ``timeout``, ``cancelled`` (the run was)
    or ``refused`` (no thread could take it). A Struct, made in C: every call makes one.
    """

    kind: str
    value: Any = None


class Channel:
    """One call's progress events on their way to the sink: sealed, in order, none after the call ends.

    A tool's `Progress` (or its stream) sends from whatever thread the tool runs on; ``seal`` makes
    each event model-facing (a streamed piece may be held back, then let out with later ones), the
    driver running the call says how events reach the sink (`notify`), and `close` drops whatever
    comes later.
    """

    __slots__ = ("_buffer", "_lock", "_open", "notify", "seal")

    def __init__(self, seal: Callable[[ToolEvent | None], list[ToolEvent]]):
        self.seal = seal
        """Makes an event model-facing: the events to deliver now (None: the stream ended, let out the rest)."""
        self.notify: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._buffer: list[ToolEvent] = []
        self._open = True

    def send(self, event: ToolEvent | None) -> None:
        """Queue an event (the `Progress` callback); None when the call's stream ended.

        Sealed under the channel's lock: events sent from several threads leave in one order.
        """
        with self._lock:
            if not self._open:
                return
            events = self.seal(event)
            if not events:
                return
            self._buffer += events
            notify = self.notify
        if notify is not None:
            notify()

    def take(self) -> list[ToolEvent]:
        """The events queued so far, in order."""
        with self._lock:
            events, self._buffer = self._buffer, []
        return events

    def close(self) -> list[ToolEvent]:
        """Stop taking events; the ones still queued, in order."""
        with self._lock:
            self._open = False
            events, self._buffer = self._buffer, []
        return events


class Job(msgspec.Struct):
    """One bounded piece of job: a tool's call, or an approver's answer (a Struct, made in C)."""

    fn: Callable[..., Any]
    args: Any
    kwargs: dict[str, Any]
    name: str
    """The tool's name, for logs."""
    is_async: bool
    """Whether ``fn`` returns an awaitable."""
    timeout: float | None
    """Seconds to wait, or None."""
    token: CancellationToken
    """The run's token: its cancellation ends the wait."""
    channel: Channel | None = None
    """The call's progress events, delivered while the job runs."""


_here = threading.local()
in_task: contextvars.ContextVar[object] = contextvars.ContextVar("tinytools_work", default=None)
"""The call whose code this is: the job an async tool's task runs, or the express path's mark of
its call (inherited by the call's sub-tasks and threads). A run's cancellation skips the call
that cancelled it, whichever path each call took."""


def inside(job: Job) -> bool:
    """Whether this code runs inside ``job`` (its thread, or its task)."""
    return getattr(_here, "job", None) is job or in_task.get() is job


UNSTARTED: Outcome = Outcome(CANCELLED, "unstarted")
"""A job whose run was cancelled before a thread took it: `call_work` did not start it (its call was not made)."""


def call_work(job: Job) -> Any:
    """Run sync job on this thread, in the context copied for it: this job's code, not its caller's (`in_task`).

    Work whose run was cancelled before a thread took it does not start: its value is `UNSTARTED`.
    """
    if job.token.cancelled:  # the caller may not have heard yet (its loop is busy): no tool starts after the cancel
        return UNSTARTED
    _here.job = job
    in_task.set(job)  # a call its tool makes (a nested `dispatch`) and cancels the run with is not its caller's own
    try:
        return job.fn(*job.args, **job.kwargs)
    finally:
        _here.job = None
