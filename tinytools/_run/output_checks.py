"""The output checks: what a tool returned becomes a succeeded result, or a failure that says why.

The value must encode as JSON: the types tinytools takes as inputs (dataclasses, Structs, enums,
pydantic models and the like) become plain data, and so do the types the application gave
encoders for (`tinytools._encoding.OutputEncoder`, one per dispatcher). A value that cannot (an
encoder that raises, whatever it raises, included) fails ``invalid_output`` naming the innermost
type at fault and its JSON pointer, and so does a NaN or an infinity (JSON has no such number;
msgspec would write ``null``): the value is searched for
one only when its JSON holds a ``null``. ``output`` is then the value as plain data, except that
a plain dict or list that encodes as it is stays the tool's own object (no copy on the fast
path), so a key may be a number, an enum, a UUID or a date that JSON writes as a string. With
``@tool(validate_output=True)`` the output must also match the output schema. A `ToolOutput` brings
content and artifacts along; raw artifact bytes go to the dispatcher's store, and a store that
fails ends the call ``artifact_store_failed`` (``outcome_unknown``: the tool did run).
"""

from __future__ import annotations

import os
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._encoding import OutputEncoder
from tinytools._results import ArtifactRef, ToolCall, ToolOutput, ToolResult
from tinytools._run.failures import failed, logger

if TYPE_CHECKING:
    from tinytools._run.artifacts import ArtifactStore
    from tinytools._tool import Tool

__all__ = ["DEFAULT_ENCODER", "PLAIN_OUTPUT", "finish", "store_failure"]

PLAIN_OUTPUT = frozenset({dict, list, str, int, float, bool, type(None)})
"""Classes msgspec encodes as they are, with no conversion to plain data first."""
DEFAULT_ENCODER = OutputEncoder()
"""The encoder of a dispatcher without encoders of its own or its toolbox's: built-in rules only."""
_encode = msgspec.json.encode
_HOLDERS = frozenset({dict, list})  # converted outputs that may hold a null (a scalar is the value itself)


def finish(
    call: ToolCall,
    tool: Tool[..., Any],
    output: Any,
    start: int,
    store: ArtifactStore | None,
    encoder: OutputEncoder = DEFAULT_ENCODER,
) -> ToolResult:
    """Check a tool's return value and wrap it in a succeeded result (or say why not).

    ``encoder`` turns what is not plain data into plain data (the plan's, `Plan.encoder`).
    """
    if output.__class__ is ToolOutput:
        return _finish_output(call, tool, output, start, store, encoder)
    original = output
    try:
        if output.__class__ not in PLAIN_OUTPUT or tool.validate_output:
            output = encoder.to_builtins(output)  # the validator needs JSON data: no datetime inside a dict
            text = _encode(output) if output is None or output.__class__ in _HOLDERS else b""
        else:
            try:
                text = _encode(output)  # a dict or list that encodes stays as it is: its JSON is the same
            except TypeError:  # it holds values that are not plain data (a pydantic model, a Fraction)
                output = encoder.to_builtins(output)
                text = _encode(output)
    except Exception as exc:  # an application's encoder may fail in any way: the output is still unencodable
        return _unencodable(call, tool.name, output, exc, start, encoder)
    if text.find(b"null") >= 0:  # JSON writes NaN and the infinities as null: only then is the value searched
        refusal = _non_finite(call, tool.name, original, start, encoder)
        if refusal is not None:
            return refusal
    if tool.validate_output:
        problem = tool.output_problem(output)
        if problem is not None:
            message = f"Tool {tool.name!r} returned an output that does not match its output schema: {problem}"
            return failed(call, tool.name, "invalid_output", message, start)
    return ToolResult(
        call_id=call.id, name=tool.name, status="succeeded", output=output, elapsed=perf_counter_ns() - start
    )


def _finish_output(
    call: ToolCall,
    tool: Tool[..., Any],
    output: ToolOutput,
    start: int,
    store: ArtifactStore | None,
    encoder: OutputEncoder,
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
    result = finish(call, tool, output.value, start, None, encoder)
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


def _non_finite(call: ToolCall, name: str, output: Any, start: int, encoder: OutputEncoder) -> ToolResult | None:
    """The refusal of an output holding a NaN or an infinity, which JSON has no number for; else None."""
    try:
        data = msgspec.to_builtins(output, str_keys=True, enc_hook=encoder.hook)  # floats kept as they are
    except Exception:  # a key msgspec writes only after conversion, or an encoder that fails this way only
        data = output
    try:
        pointer = _non_finite_at(data, "")
    except RecursionError:  # it encoded once, so this is a walk deeper than Python's stack: the nulls stand
        return None
    if pointer is None:
        return None
    message = (
        f"Tool {name!r} returned a number JSON cannot hold (NaN or an infinity) at {pointer or '/'}; "
        "return null or a string for it."
    )
    return failed(call, name, "invalid_output", message, start, {"pointer": pointer, "type": "float"})


def _non_finite_at(value: Any, pointer: str) -> str | None:
    if isinstance(value, float):
        return None if value - value == 0 else pointer
    if isinstance(value, dict):
        items: Any = ((str(key).replace("~", "~0").replace("/", "~1"), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for token, item in items:
        found = _non_finite_at(item, f"{pointer}/{token}")
        if found is not None:
            return found
    return None


def _unencodable(
    call: ToolCall, name: str, output: Any, exc: Exception, start: int, encoder: OutputEncoder
) -> ToolResult:
    found = encoder.locate(output)
    logger().error(
        "tool %r returned a value that cannot be encoded: %s.%s at %r (%s: %s); "
        "give the dispatcher or toolbox an encoder for it: encoders={%s: ...}",
        name,
        found.module,
        found.type_name,
        found.pointer,
        type(exc).__name__,
        exc,
        found.type_name,
    )
    return failed(call, name, "invalid_output", found.describe(name), start, found.details())
