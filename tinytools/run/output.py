"""The output checks: what a tool returned becomes a succeeded result, or a failure that says why.

The value must encode as JSON (dataclasses, Structs, enums and the like become plain data); with
``@tool(validate_output=True)`` it must also match the output schema. A `ToolOutput` brings
content and artifacts along; raw artifact bytes go to the dispatcher's store, and a store that
fails ends the call ``artifact_store_failed`` (``outcome_unknown``: the tool did run).
"""

from __future__ import annotations

import os
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools.results import ArtifactRef, ToolCall, ToolOutput, ToolResult
from tinytools.run.outcomes import failed, logger

if TYPE_CHECKING:
    from tinytools.run.artifacts import ArtifactStore
    from tinytools.tool import Tool

__all__ = ["PLAIN_OUTPUT", "finish", "store_failure"]

PLAIN_OUTPUT = frozenset({dict, list, str, int, float, bool, type(None)})
"""Classes msgspec encodes as they are, with no conversion to plain data first."""
_encode = msgspec.json.encode


def finish(call: ToolCall, tool: Tool[..., Any], output: Any, start: int, store: ArtifactStore | None) -> ToolResult:
    """Check a tool's return value and wrap it in a succeeded result (or say why not)."""
    if output.__class__ is ToolOutput:
        return _finish_output(call, tool, output, start, store)
    try:
        if output.__class__ in PLAIN_OUTPUT:
            _encode(output)
        else:
            output = msgspec.to_builtins(output)
            _encode(output)  # to_builtins passes some values through unchecked (an Enum's value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        return _unencodable(call, tool.name, output, exc, start)
    if tool.validate_output:
        problem = tool.output_problem(output)
        if problem is not None:
            message = f"Tool {tool.name!r} returned an output that does not match its output schema: {problem}"
            return failed(call, tool.name, "invalid_output", message, start)
    return ToolResult(
        call_id=call.id, name=tool.name, status="succeeded", output=output, elapsed=perf_counter_ns() - start
    )


def _finish_output(
    call: ToolCall, tool: Tool[..., Any], output: ToolOutput, start: int, store: ArtifactStore | None
) -> ToolResult:
    refs: list[ArtifactRef] = []
    for artifact in output.artifacts:
        if isinstance(artifact, ArtifactRef):
            refs.append(artifact)
            continue
        if store is None:
            message = f"Tool {tool.name!r} returned artifact data, but no artifact store is configured."
            return failed(call, tool.name, "invalid_output", message, start)
        data, media_type = artifact
        try:
            refs.append(store.put(data, media_type, {"tool": tool.name, "call_id": call.id}))
        except Exception as exc:
            return store_failure(call, tool.name, exc, start)
    result = finish(call, tool, output.value, start, None)
    if result.status == "succeeded":
        result.content = output.content
        result.artifacts = refs
    return result


def store_failure(call: ToolCall, name: str, exc: BaseException, start: int) -> ToolResult:
    """The result when the artifact store failed after the tool ran: its outcome is not shown."""
    error_id = os.urandom(6).hex()
    logger().error("the artifact store failed for tool %r (error id %s)", name, error_id, exc_info=exc)
    message = f"Tool {name!r} ran, but its output could not be stored (error id {error_id})."
    result = failed(call, name, "artifact_store_failed", message, start, {"error_id": error_id})
    result.status = "outcome_unknown"
    return result


def _unencodable(call: ToolCall, name: str, output: Any, exc: Exception, start: int) -> ToolResult:
    type_name = type(output).__name__
    logger().error("tool %r returned a value that cannot be encoded: %s", name, exc)
    message = f"Tool {name!r} returned a value of type {type_name!r} that cannot be encoded as JSON."
    return failed(call, name, "invalid_output", message, start)
