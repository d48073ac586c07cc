"""The read stage: a call's arguments decoded and validated once, against the schema this dispatcher enforces.

Every other stage may come back here: a call a middleware replaced, an approver's edit and a retry
are read the same way. A call whose arguments fail becomes `invalid`: its `InvalidToolArgs` event,
then the repairable result (or the raise of ``invalid_args="fail"``).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._errors import ArgumentsError, kept
from tinytools._events import InvalidToolArgs
from tinytools._results import ToolCall, ToolResult
from tinytools._run.plans import Read

if TYPE_CHECKING:
    from tinytools._run.call_state import CallState

__all__ = ["call_arguments", "invalid", "read_arguments", "started_arguments"]


def read_arguments(state: CallState, *, events: bool) -> Read | ToolResult:
    """Decode and validate the call's arguments against the schema this dispatcher enforces."""
    try:
        scope = state.scope  # a plan's step is read against the canonical schema; any other call as the plan says
        read = state.plan.read(
            state.call, canonical=scope.planned is not None and scope.is_step(state.call, state.plan.name)
        )
    except ArgumentsError as exc:
        read = kept(exc)  # kept, not raised: no frame of this call in it
    if read.__class__ is Read:
        return read
    return invalid(state, read, events=events)  # type: ignore[arg-type]


def invalid(state: CallState, error: ArgumentsError, *, events: bool) -> ToolResult:
    """The invalid-arguments stage: the event, then the repairable result (or the raise of ``fail``)."""
    if events:
        recovery = "fail" if state.plan.fail_invalid and error.keyword != "json" else "tool_error"
        elapsed = perf_counter_ns() - state.start
        call = state.call
        state.queued.append(InvalidToolArgs(call.id, state.plan.name, elapsed, call.arguments, error, recovery))
    return state.plan.invalid(state.call, error, state.start)


def started_arguments(read: Read, call: ToolCall) -> dict[str, Any]:
    """The arguments a `ToolStarted` event shows: as validated, or the call's own."""
    return read.arguments if read.arguments is not None else call_arguments(call)


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """The arguments of a call as data, for events and approvers (decoded when they are text)."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = msgspec.json.decode(arguments)
    except (ValueError, TypeError, RecursionError):  # DecodeError is a ValueError
        return {}
    return decoded if isinstance(decoded, dict) else {}
