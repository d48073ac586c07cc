"""`dispatch` and `adispatch`: run one tool call and always return one `ToolResult`.

The fast path is: look the tool up, decode the arguments (msgspec), validate them (the
compiled schema), convert and inject, call, encode the output. Every other branch ends in a
failed result that carries the call's id and a message the model can act on.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine, Iterable, Mapping
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools.errors import ArgumentsError, shorten
from tinytools.results import StructuredError, ToolCall, ToolResult
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

if TYPE_CHECKING:
    import logging

__all__ = ["adispatch", "dispatch"]

_decode = msgspec.json.decode
_encode = msgspec.json.encode
_PLAIN_OUTPUT = frozenset({dict, list, str, int, float, bool, type(None)})


def dispatch(
    call: ToolCall,
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from synchronous code and return its result.

    An async tool runs to completion on a private event loop (in a worker thread when this
    thread already runs a loop).

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    start = perf_counter_ns()
    prepared = _prepare(call, _toolbox(toolbox), inject, start)
    if isinstance(prepared, ToolResult):
        return prepared
    tool, kwargs = prepared
    try:
        output = tool.call(**kwargs)
        if tool.is_async:
            output = run_coroutine(output)
    except Exception as exc:
        return tool_failure(call, tool.name, exc, start)
    return finish(call, tool.name, output, start)


async def adispatch(
    call: ToolCall,
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from async code and return its result; sync tools run inline.

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    start = perf_counter_ns()
    prepared = _prepare(call, _toolbox(toolbox), inject, start)
    if isinstance(prepared, ToolResult):
        return prepared
    tool, kwargs = prepared
    try:
        output = tool.call(**kwargs)
        if tool.is_async:
            output = await output
    except Exception as exc:
        return tool_failure(call, tool.name, exc, start)
    return finish(call, tool.name, output, start)


def _toolbox(toolbox: Toolbox | Iterable[Tool[..., Any]]) -> Toolbox:
    return toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)


def _prepare(
    call: ToolCall, toolbox: Toolbox, inject: Mapping[str, Any] | None, start: int
) -> tuple[Tool[..., Any], dict[str, Any]] | ToolResult:
    """Look up, decode, validate, convert and inject; or the failed result that stops it."""
    tool = toolbox.get(call.name)
    if tool is None:
        return unknown_tool(call, toolbox, start)
    arguments = call.arguments
    if arguments.__class__ is not dict:
        if call.invalid is not None:
            return malformed(call, tool.name, call.invalid, start)
        try:
            arguments = _decode(arguments)
        except (msgspec.DecodeError, TypeError) as exc:
            return malformed(call, tool.name, str(exc), start)
    try:
        tool.schema.validate(arguments)
        return tool, tool.prepare(arguments, inject, call)
    except ArgumentsError as exc:
        exc.tool = tool.name
        return invalid_arguments(call, exc, start)


def finish(call: ToolCall, name: str, output: Any, start: int) -> ToolResult:
    """Encode a tool's return value and wrap it in a succeeded result."""
    if output.__class__ not in _PLAIN_OUTPUT:
        try:
            output = msgspec.to_builtins(output)
        except (TypeError, ValueError, OverflowError) as exc:
            return _unencodable(call, name, output, exc, start)
    else:
        try:
            _encode(output)
        except (TypeError, ValueError, OverflowError) as exc:
            return _unencodable(call, name, output, exc, start)
    return ToolResult(
        call_id=call.id,
        name=name,
        status="succeeded",
        output=output,
        elapsed=perf_counter_ns() - start,
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


def unknown_tool(call: ToolCall, toolbox: Toolbox, start: int) -> ToolResult:
    """The result for a call to a name the toolbox does not hold."""
    available = ", ".join(toolbox.names) or "(none)"
    message = f"Unknown tool {shorten(call.name)!r}. Available tools: {available}."
    return failed(call, call.name, "unknown_tool", message, start)


def malformed(call: ToolCall, name: str, reason: str, start: int) -> ToolResult:
    """The result for arguments that are not a JSON document; never replaced by ``{}``."""
    message = (
        f"The arguments for tool {name!r} could not be read as JSON ({shorten(reason)}). "
        "Send the arguments again as one JSON object."
    )
    return failed(call, name, "malformed_arguments", message, start)


def invalid_arguments(call: ToolCall, error: ArgumentsError, start: int) -> ToolResult:
    """The result for arguments that failed the schema, with what was expected."""
    message = f"Invalid arguments: {error}."
    if error.schema is not None and error.parameter is not None:
        fragment = shorten(_encode(error.schema).decode(), 400)
        message += f" Schema of {shorten(error.parameter)!r}: {fragment}"
    details = {"pointer": error.pointer, "keyword": error.keyword}
    if error.parameter is not None:
        details["parameter"] = error.parameter
    return failed(call, error.tool or call.name, "invalid_arguments", message, start, details)


def tool_failure(call: ToolCall, name: str, exc: Exception, start: int) -> ToolResult:
    """The result for a tool that raised: a `ToolError`'s text, or a generic message."""
    from tinytools.errors import ToolError

    if isinstance(exc, ToolError):
        return failed(call, name, exc.code, exc.message, start)
    error_id = os.urandom(6).hex()
    _logger().error("tool %r failed (error id %s)", name, error_id, exc_info=exc)
    message = f"Tool {name!r} failed with an internal error (error id {error_id})."
    return failed(call, name, "tool_error", message, start, {"error_id": error_id})


def _unencodable(call: ToolCall, name: str, output: Any, exc: Exception, start: int) -> ToolResult:
    type_name = type(output).__name__
    _logger().error("tool %r returned a value that cannot be encoded: %s", name, exc)
    message = f"Tool {name!r} returned a value of type {type_name!r} that cannot be encoded as JSON."
    return failed(call, name, "invalid_output", message, start)


def _logger() -> logging.Logger:
    import logging

    return logging.getLogger("tinytools")


def run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, whether or not a loop is running here.

    Inside a running loop the coroutine gets a loop of its own in a worker thread, so a sync
    caller never deadlocks the loop it is on.
    """
    import asyncio  # imported on first use: it alone costs more than importing tinytools
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tinytools") as pool:
        return pool.submit(asyncio.run, coroutine).result()
