"""Builders of the `ToolResult` each way a call can end, shared by every dispatch path.

Each failure carries a `StructuredError` whose message is safe to show the model: it names
the tool, says what went wrong and how to repair it, and echoes at most a bounded amount of
what the model sent. Unexpected exceptions keep their text out of the result; it goes to the
``tinytools`` logger with an error id that the result also carries.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools.errors import ArgumentsError, ToolError, shorten
from tinytools.results import (
    ArtifactRef,
    Content,
    JsonContent,
    StructuredError,
    TextContent,
    ToolCall,
    ToolOutput,
    ToolResult,
)

if TYPE_CHECKING:
    import logging

    from tinytools.artifacts import ArtifactStore
    from tinytools.tool import Tool

__all__ = [
    "REDACTED",
    "argument_failure",
    "failed",
    "finish",
    "fit_budget",
    "propagates",
    "redact",
    "tool_failure",
    "unknown_tool",
]

_encode = msgspec.json.encode
REDACTED = "[redacted]"
"""What a secret value is replaced with in model-facing text."""
_PLAIN_OUTPUT = frozenset({dict, list, str, int, float, bool, type(None)})


def finish(
    call: ToolCall,
    tool: Tool[..., Any],
    output: Any,
    start: int,
    store: ArtifactStore | None = None,
) -> ToolResult:
    """Check a tool's return value and wrap it in a succeeded result.

    The value must encode as JSON (dataclasses, Structs, enums and the like become plain
    data); with ``@tool(validate_output=True)`` it must also match the output schema. A
    `ToolOutput` brings content and artifacts along; raw artifact bytes go to ``store``.
    """
    if output.__class__ is ToolOutput:
        return _finish_output(call, tool, output, start, store)
    try:
        if output.__class__ in _PLAIN_OUTPUT:
            _encode(output)
        else:
            output = msgspec.to_builtins(output)
            _encode(output)  # to_builtins passes some values through unchecked (an Enum's value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        return _unencodable(call, tool.name, output, exc, start)
    if tool.validate_output:
        problem = tool.output_problem(output)
        if problem is not None:
            return _mismatch(call, tool, problem, start)
    return ToolResult(
        call_id=call.id, name=tool.name, status="succeeded", output=output, elapsed=perf_counter_ns() - start
    )


def _finish_output(
    call: ToolCall, tool: Tool[..., Any], output: ToolOutput, start: int, store: ArtifactStore | None
) -> ToolResult:
    try:
        artifacts = _stored(output.artifacts, store, call, tool.name)
    except LookupError as exc:
        return failed(call, tool.name, "invalid_output", str(exc), start)
    result = finish(call, tool, output.value, start)
    if result.status == "succeeded":
        result.content = output.content
        result.artifacts = artifacts
    return result


def _mismatch(call: ToolCall, tool: Tool[..., Any], problem: str, start: int) -> ToolResult:
    message = f"Tool {tool.name!r} returned an output that does not match its output schema: {problem}"
    return failed(call, tool.name, "invalid_output", message, start)


def _stored(
    artifacts: list[ArtifactRef | tuple[bytes, str]], store: ArtifactStore | None, call: ToolCall, name: str
) -> list[ArtifactRef]:
    refs = []
    for artifact in artifacts:
        if isinstance(artifact, ArtifactRef):
            refs.append(artifact)
        elif store is None:
            raise LookupError(f"Tool {name!r} returned artifact data, but no artifact store is configured.")
        else:
            data, media_type = artifact
            refs.append(store.put(data, media_type, {"tool": name, "call_id": call.id}))
    return refs


def fit_budget(result: ToolResult, limit: int, store: ArtifactStore | None, start: int) -> ToolResult:
    """Keep an output within ``limit`` encoded bytes: inline as it is, or moved to ``store``.

    A moved output leaves a preview (cut at a UTF-8 boundary, at most ``limit`` bytes), the
    artifact's reference and a note saying so. Without a store an output over the budget
    fails with ``output_too_large``. Nothing is ever truncated silently.
    """
    if result.status != "succeeded":
        return result
    encoded = _encode(result.output)
    if len(encoded) <= limit:
        return result
    call = ToolCall(result.call_id, result.name)
    if store is None:
        message = (
            f"Tool {result.name!r} returned {len(encoded)} bytes, more than the {limit} bytes allowed "
            "inline, and no artifact store is configured."
        )
        return failed(call, result.name, "output_too_large", message, start)
    ref = store.put(encoded, "application/json", {"tool": result.name, "call_id": result.call_id})
    preview = encoded[:limit].decode("utf-8", "ignore")
    note = f"The output ({ref.size} bytes) was stored as artifact {ref.key} ({ref.media_type}); it begins: {preview}"
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        status="succeeded",
        content=[TextContent(note)],
        artifacts=[*result.artifacts, ref],
        elapsed=perf_counter_ns() - start,
    )


def redact(result: ToolResult, secrets: list[str], hook: Callable[[str], str] | None) -> ToolResult:
    """Scrub secret values (and whatever ``hook`` scrubs) from every model-facing string."""

    def scrub(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, REDACTED)
        return hook(text) if hook is not None else text

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {scrub(key): walk(item) for key, item in value.items()}
        return value

    try:
        error = result.error
        if error is not None:
            error = StructuredError(error.code, scrub(error.message), walk(error.details))
        content = result.content
        if content is not None:
            content = [
                TextContent(scrub(b.text)) if isinstance(b, TextContent) else _scrub_block(b, walk) for b in content
            ]
        output = walk(result.output)
    except Exception as exc:  # a hook that raised, or nesting too deep to walk: show nothing
        return _withheld(result, exc)
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        status=result.status,
        output=output,
        content=content,
        error=error,
        artifacts=result.artifacts,
        elapsed=result.elapsed,
    )


def _withheld(result: ToolResult, exc: Exception) -> ToolResult:
    """The result in place of one that could not be scrubbed: it says nothing the tool said."""
    error_id = os.urandom(6).hex()
    logger().error("redacting the result of tool %r failed (error id %s)", result.name, error_id, exc_info=exc)
    message = f"The result of {result.name!r} could not be checked for secrets and is withheld (error id {error_id})."
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        status="outcome_unknown" if result.status == "succeeded" else result.status,  # it may have acted
        error=StructuredError("redaction_failed", message, {"error_id": error_id}),
        elapsed=result.elapsed,
    )


def _scrub_block(block: Content, walk: Callable[[Any], Any]) -> Content:
    return JsonContent(walk(block.data)) if isinstance(block, JsonContent) else block


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
        if call.invalid is not None:  # a call written in text (JSON, XML or p-type) that did not parse
            reason = shorten(call.invalid)
            message = f"The call to tool {tool.name!r} could not be read ({reason}). Write the call again."
        else:
            message = (
                f"The arguments for tool {tool.name!r} could not be read as JSON ({shorten(error.reason)}). "
                "Send the arguments again as one JSON object."
            )
        return failed(call, tool.name, "malformed_arguments", message, start)
    parameter = error.parameter
    if parameter is None:
        message = f"Invalid arguments: {error}."
        details = {"pointer": error.pointer, "keyword": error.keyword}
    else:
        # the same text as str(error) and the argument's schema, from parts kept per argument:
        # this is the hot path of a bad call
        head, tail = tool.framing(parameter)
        message = f"{head}{error.pointer or '/'}: {error.reason}{tail}"
        details = {"pointer": error.pointer, "keyword": error.keyword, "parameter": parameter}
    return failed(call, tool.name, "invalid_arguments", message, start, details)


def propagates(exc: BaseException) -> bool:
    """Whether an exception from a tool must reach the caller rather than become a result.

    `KeyboardInterrupt` and `SystemExit` stop the program, and asyncio's ``CancelledError``
    stops the task awaiting the call. Anything else a tool raises, other `BaseException`
    subclasses included, is the tool's failure: it ends that call alone.
    """
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return True
    asyncio = sys.modules.get("asyncio")  # loaded whenever a CancelledError exists
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def tool_failure(call: ToolCall, name: str, exc: BaseException, start: int) -> ToolResult:
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
