"""Builders of the `ToolResult` for each way a call can end without a value, shared by every stage.

Each failure carries a `StructuredError` whose message is safe to show the model: it names the
tool, says what went wrong and how to repair it, and echoes at most a bounded amount of what the
model sent. Unexpected exceptions keep their text out of the result; it goes to the
``tinytools`` logger with an error id that the result also carries.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from tinytools._errors import InjectionError, ToolError, TransferError, shorten
from tinytools._results import Pending, PendingKind, PendingRequest, StructuredError, ToolCall, ToolResult
from tinytools._run.near_misses import closest_name
from tinytools.executors._failures import ExecutorError

if TYPE_CHECKING:
    import logging

    from tinytools._tool import Tool

__all__ = [
    "APPROVAL_SCHEMA",
    "as_unknown",
    "cancelled",
    "denied",
    "executor_failure",
    "failed",
    "hook_failure",
    "interrupts",
    "logger",
    "missing_value",
    "propagates",
    "run_cancellation",
    "timed_out",
    "tool_failure",
    "tool_raised",
    "unknown_tool",
    "waiting",
]


def failed(
    call: ToolCall,
    name: str,
    code: str,
    message: str,
    start: int,
    details: dict[str, Any] | None = None,
) -> ToolResult:
    """A failed result with a model-facing error."""
    return ToolResult(
        call_id=call.id,
        name=name,
        status="failed",
        error=StructuredError(code, message, details),
        elapsed=perf_counter_ns() - start,
    )


def as_unknown(result: ToolResult) -> ToolResult:
    """The result marked ``outcome_unknown``: the tool may have acted, and nobody can tell."""
    result.status = "outcome_unknown"
    return result


def unknown_tool(call: ToolCall, available: Iterable[str], start: int) -> ToolResult:
    """The result for a call to a name that is not offered, naming the near miss among ``available`` if any.

    ``available`` is what the model may call this turn, and all the message reveals.
    """
    available = list(available)
    listed = ", ".join(available) or "(none)"
    suggestion = closest_name(call.name, available)
    hint = "" if suggestion is None else f" Did you mean {suggestion!r}?"
    message = f"Unknown tool {shorten(call.name)!r}.{hint} Available tools: {listed}."
    return failed(call, call.name, "unknown_tool", message, start)


def propagates(exc: BaseException) -> bool:
    """Whether an exception must reach the caller rather than become a result.

    `KeyboardInterrupt` and `SystemExit` stop the program, and asyncio's ``CancelledError``
    stops the task awaiting the call. Anything else, other `BaseException` subclasses included,
    is a failure of the call it happened in, and ends that call alone.
    """
    return interrupts(exc) or _cancellation(exc)


def interrupts(exc: BaseException) -> bool:
    """Whether an exception stops the program (`KeyboardInterrupt`, `SystemExit`): it reaches the caller, always."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit))


def run_cancellation(exc: BaseException, run_cancelled: bool) -> bool:
    """Whether a propagating exception a tool raised ends its call ``cancelled`` instead of reaching the caller.

    Only asyncio's ``CancelledError``, and only when the run itself was cancelled while the tool
    ran; `KeyboardInterrupt` and `SystemExit` reach the caller whatever the run's state.
    """
    return run_cancelled and _cancellation(exc)


def _cancellation(exc: BaseException) -> bool:
    asyncio = sys.modules.get("asyncio")  # loaded whenever a CancelledError exists
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def tool_raised(
    call: ToolCall,
    tool: Tool[..., Any],
    exc: BaseException,
    start: int,
    run_cancelled: bool,
    exposed: tuple[type[BaseException], ...] = (),
) -> ToolResult:
    """The result of a tool that raised ``exc``, for every path that runs tools (what a raise means, once).

    The run's cancellation ends the call ``cancelled``; an executor's failure is the executor's
    (`executor_failure`: ``outcome_unknown`` when it may have acted); anything else is the tool's
    (`tool_failure`). What parks a call or is tried again is the caller's to look for first.

    Raises:
        TransferError: The application's configuration, as a missing injected value is.
        BaseException: What must reach the caller (`propagates`) and is not the run's cancellation.
    """
    if isinstance(exc, TransferError):
        raise exc
    if propagates(exc):
        if run_cancellation(exc, run_cancelled):
            return cancelled(call, tool, start, started=True)
        raise exc
    if isinstance(exc, ExecutorError):
        return executor_failure(exc, call, tool, start)
    return tool_failure(call, tool.name, exc, start, exposed)


def tool_failure(
    call: ToolCall, name: str, exc: BaseException, start: int, exposed: tuple[type[BaseException], ...] = ()
) -> ToolResult:
    """The result for a tool that raised: a `ToolError`'s text, an exposed type's, or a generic message."""
    if isinstance(exc, ToolError):
        return failed(call, name, exc.code, exc.message, start)
    if exposed and isinstance(exc, exposed):
        return failed(call, name, "tool_error", f"Tool {name!r} failed: {type(exc).__name__}: {exc}", start)
    error_id = os.urandom(6).hex()
    logger().error("tool %r failed (error id %s)", name, error_id, exc_info=exc)
    message = f"Tool {name!r} failed with an internal error (error id {error_id})."
    return failed(call, name, "tool_error", message, start, {"error_id": error_id})


def hook_failure(call: ToolCall, name: str, what: str, exc: BaseException, start: int) -> ToolResult:
    """The result for application code around the call (middleware) that raised."""
    error_id = os.urandom(6).hex()
    logger().error("%s failed on tool %r (error id %s)", what, name, error_id, exc_info=exc)
    message = f"The call to {name!r} could not be completed (error id {error_id})."
    return failed(call, name, "middleware_error", message, start, {"error_id": error_id})


def missing_value(call: ToolCall, exc: InjectionError, start: int, *, holder: str = "the application") -> ToolResult:
    """The result of a call whose injected value was not supplied: which parameter, and nothing else."""
    logger().error("call %r: %s", call.id, exc)
    message = f"Tool {exc.tool!r} cannot run: {holder} has no value for its injected parameter {exc.parameter!r}."
    return failed(call, exc.tool, "missing_injected_value", message, start)


def denied(call: ToolCall, name: str, rule: str, reason: str, start: int) -> ToolResult:
    """The ``policy_denied`` result for a call a rule refused."""
    message = f"The call to {name!r} was denied by policy ({rule}): {reason}."
    return failed(call, name, "policy_denied", message, start, {"rule": rule})


def timed_out(call: ToolCall, tool: Tool[..., Any], start: int) -> ToolResult:
    """The result for a call the dispatcher stopped waiting for at its timeout."""
    if tool.idempotent:
        message = f"Tool {tool.name!r} did not finish within {tool.timeout} seconds."
        return failed(call, tool.name, "timeout", message, start)
    message = (
        f"Tool {tool.name!r} did not finish within {tool.timeout} seconds; it may still have "
        "acted, so it was not retried."
    )
    return as_unknown(failed(call, tool.name, "timeout", message, start))


def cancelled(call: ToolCall, tool: Tool[..., Any], start: int, *, started: bool) -> ToolResult:
    """The result for a call the run's cancellation stopped (before or while it ran)."""
    if not started:
        return failed(call, tool.name, "cancelled", "The run was cancelled; the call was not made.", start)
    if tool.idempotent:
        return failed(call, tool.name, "cancelled", "The run was cancelled while the tool ran.", start)
    return as_unknown(
        failed(call, tool.name, "cancelled", "The run was cancelled while the tool ran; it may have acted.", start)
    )


def executor_failure(exc: ExecutorError, call: ToolCall, tool: Tool[..., Any], start: int) -> ToolResult:
    """The result when the executor, not the tool, failed: ``outcome_unknown`` when it may have acted."""
    error_id = os.urandom(6).hex()
    logger().error("executor failed tool %r (error id %s): %s", tool.name, error_id, exc.reason)
    unknown = exc.may_have_acted and not tool.idempotent
    if exc.code == "executor_unavailable":
        message = f"Tool {tool.name!r} could not be sent to its executor; the call was not made."
    else:
        lost = exc.code == "worker_lost"
        message = (
            f"The worker running tool {tool.name!r} was lost before it answered"
            if lost
            else f"Tool {tool.name!r} could not be run by its executor (error id {error_id})"
        )
        message += "; the tool may have acted, so it was not retried." if unknown else "."
    result = failed(call, tool.name, exc.code, message, start, {"error_id": error_id})
    return as_unknown(result) if unknown else result


def logger(name: str = "tinytools") -> logging.Logger:
    """The ``tinytools`` logger, or one below it (logging is imported on first use, not at import)."""
    import logging

    return logging.getLogger(name)


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}
"""The answer a deferred approval takes: ``{"approved": true}``, or false with a reason."""


def waiting(
    call: ToolCall,
    name: str,
    kind: PendingKind,
    message: str,
    schema: dict[str, Any] | None,
    ttl: float | None,
    question: str | None = None,
) -> ToolResult:
    """A call that ends its turn unfinished (``question``: what the tool calls what it asks).

    The journal stage gives it its handle and expiry.
    """
    expires_at = 0.0 if ttl is None else time.time() + ttl
    pending = Pending("", kind, PendingRequest(message, schema, question), expires_at)
    return ToolResult(call_id=call.id, name=name, status="pending", pending=pending)
