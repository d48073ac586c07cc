"""Builders of the `ToolResult` each way a call can end, shared by every dispatch path.

Each failure carries a `StructuredError` whose message is safe to show the model: it names
the tool, says what went wrong and how to repair it, and echoes at most a bounded amount of
what the model sent. Unexpected exceptions keep their text out of the result; it goes to the
``tinytools`` logger with an error id that the result also carries.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools.errors import ArgumentsError, ToolError, shorten
from tinytools.results import StructuredError, ToolCall, ToolResult

if TYPE_CHECKING:
    import logging

    from tinytools.tool import Tool

__all__ = [
    "argument_failure",
    "failed",
    "finish",
    "tool_failure",
    "unknown_tool",
]

_encode = msgspec.json.encode
_PLAIN_OUTPUT = frozenset({dict, list, str, int, float, bool, type(None)})


def finish(call: ToolCall, name: str, output: Any, start: int) -> ToolResult:
    """Check a tool's return value encodes as JSON, and wrap it in a succeeded result.

    Dataclasses, Structs, enums and other values msgspec understands become plain JSON data.
    """
    try:
        if output.__class__ in _PLAIN_OUTPUT:
            _encode(output)
        else:
            output = msgspec.to_builtins(output)
    except (TypeError, ValueError, OverflowError) as exc:
        return _unencodable(call, name, output, exc, start)
    return ToolResult(
        call_id=call.id, name=name, status="succeeded", output=output, elapsed=perf_counter_ns() - start
    )


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


def unknown_tool(call: ToolCall, available: Iterable[str], start: int) -> ToolResult:
    """The result for a call to a name that is not offered."""
    listed = ", ".join(available) or "(none)"
    message = f"Unknown tool {shorten(call.name)!r}. Available tools: {listed}."
    return failed(call, call.name, "unknown_tool", message, start)


def argument_failure(call: ToolCall, tool: Tool[..., Any], error: ArgumentsError, start: int) -> ToolResult:
    """The result for arguments that are not JSON, or that failed the schema."""
    error.tool = tool.name
    if error.keyword == "json":
        message = (
            f"The arguments for tool {tool.name!r} could not be read as JSON ({shorten(error.reason)}). "
            "Send the arguments again as one JSON object."
        )
        return failed(call, tool.name, "malformed_arguments", message, start)
    message = f"Invalid arguments: {error}."
    if error.parameter is not None:
        fragment = tool.fragment(error.parameter)
        if fragment is not None:
            message += f" Schema of {shorten(error.parameter)!r}: {fragment}"
    details = {"pointer": error.pointer, "keyword": error.keyword}
    if error.parameter is not None:
        details["parameter"] = error.parameter
    return failed(call, tool.name, "invalid_arguments", message, start, details)


def tool_failure(call: ToolCall, name: str, exc: Exception, start: int) -> ToolResult:
    """The result for a tool that raised: a `ToolError`'s text, or a generic message."""
    if isinstance(exc, ToolError):
        return failed(call, name, exc.code, exc.message, start)
    error_id = os.urandom(6).hex()
    logger().error("tool %r failed (error id %s)", name, error_id, exc_info=exc)
    message = f"Tool {name!r} failed with an internal error (error id {error_id})."
    return failed(call, name, "tool_error", message, start, {"error_id": error_id})


def _unencodable(call: ToolCall, name: str, output: Any, exc: Exception, start: int) -> ToolResult:
    type_name = type(output).__name__
    logger().error("tool %r returned a value that cannot be encoded: %s", name, exc)
    message = f"Tool {name!r} returned a value of type {type_name!r} that cannot be encoded as JSON."
    return failed(call, name, "invalid_output", message, start)


def logger() -> logging.Logger:
    """The ``tinytools`` logger (logging is imported on first failure, not at import)."""
    import logging

    return logging.getLogger("tinytools")
