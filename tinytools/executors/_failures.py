"""How a call can fail on its way to an executor and back, apart from the tool's own failures."""

from __future__ import annotations

from tinytools._errors import TinyToolsError
from tinytools._public import publish

__all__ = ["ExecutorError", "RemoteToolError"]


class ExecutorError(TinyToolsError):
    """The executor, not the tool, failed a call; the runner turns it into a result.

    Attributes:
        code: ``worker_lost``, ``executor_unavailable`` or ``executor_error``.
        reason: What happened, for the log (never shown to the model).
        may_have_acted: Whether the tool may have started before the failure.
    """

    def __init__(self, code: str, reason: str, *, may_have_acted: bool):
        self.code = code
        self.reason = reason
        self.may_have_acted = may_have_acted
        super().__init__(f"{code}: {reason}")


class RemoteToolError(TinyToolsError):
    """An exception a tool raised in a worker: its type and traceback, as text, for the log."""


publish("tinytools.executors", ExecutorError, RemoteToolError)
