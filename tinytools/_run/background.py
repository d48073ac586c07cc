"""Background calls: a ``@tool(background=True)`` call run on a daemon thread of its own, to its end.

The call parks pending (kind ``task``) before its thread starts, so it outlives its turn and the
event loop that dispatched it; the thread runs it through the pipeline's execution stage and
records its end. An expiry or a cancellation tells a task of this process through its token.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tinytools._results import ToolResult
from tinytools._run.drivers import drive
from tinytools._run.failures import as_unknown, failed

if TYPE_CHECKING:
    from tinytools._run.call_state import CallState

__all__ = ["BackgroundTasks"]


class BackgroundTasks:
    """One dispatcher's background calls running in this process, by their entry's key."""

    __slots__ = ("record", "running")

    def __init__(self, record: Callable[[CallState, ToolResult], Any]):
        self.record = record
        """Records a call's end in the journal (`JournalStage.record`)."""
        self.running: dict[str, tuple[threading.Thread, CallState]] = {}

    def start(self, state: CallState, run: Callable[[], Any]) -> None:
        """Run a parked background call to its end on a daemon thread of its own."""
        key = state.key or ""

        def task() -> None:
            try:
                run()
            except BaseException as exc:  # the application's configuration: the call still ends, once
                logging.getLogger("tinytools.journal").exception("background call %s failed", key)
                drive(self.record(state, _stopped(state, exc)))  # the task's driver is sync: nothing suspends
            finally:
                self.running.pop(key, None)

        context = contextvars.copy_context()  # the dispatching call's: request ids and spans go with the task
        thread = threading.Thread(target=context.run, args=(task,), name=f"tinytools-task-{key[:8]}", daemon=True)
        self.running[key] = (thread, state)
        thread.start()

    def stop(self, key: str) -> None:
        """Tell a background call of this process that it has ended (expired or cancelled)."""
        running = self.running.get(key)
        if running is not None and running[1].token is not None:
            running[1].token.cancel("cancelled")


def _stopped(state: CallState, exc: BaseException) -> ToolResult:
    """The end of a background call that raised out of the pipeline: failed, or unknown once it acted."""
    name = state.plan.name
    if not state.acted:
        message = f"Tool {name!r} could not start in the background: {type(exc).__name__}."
        return failed(state.call, name, "tool_error", message, state.start)
    message = f"Tool {name!r} stopped in the background; it may have acted."
    return as_unknown(failed(state.call, name, "outcome_unknown", message, state.start))
