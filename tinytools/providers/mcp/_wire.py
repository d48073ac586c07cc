"""MCP's wire shapes: ``tools/list`` entries, ``tools/call`` requests and ``CallToolResult``s.

A tool's ``outputSchema`` and ``structuredContent`` follow one rule: an output that is a JSON
object is the structured content as it is; any other output is wrapped as ``{"result": ...}``
(MCP before 2026-07-28 takes objects only). A tool whose declared output may be either is
listed without an ``outputSchema``. Output that does not match the declared schema is answered
with ``isError`` and code ``invalid_output`` instead of reaching the client (`check_output`).

Tool annotations carry what the tool's policy declares (``readOnlyHint``, ``destructiveHint``,
``idempotentHint``, ``openWorldHint``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from tinytools._errors import SchemaError
from tinytools._public import publish
from tinytools._results import ImageContent, ResourceContent, StructuredError, ToolCall, ToolResult
from tinytools._schema.fragments import def_name
from tinytools._schema.input_schema import compile_validator
from tinytools._schema.strict_json import repeats_a_key
from tinytools._tool import Tool
from tinytools.policy import SideEffect
from tinytools.providers._common import Media, arguments, field, media, result_text, sequence, shown

__all__ = [
    "PENDING_META",
    "check_output",
    "export_tools",
    "object_text",
    "read_calls",
    "sent_arguments",
    "tool_annotations",
    "write_results",
]

PENDING_META = "tinytools/pending"
"""The ``_meta`` key of a pending result's `Pending` record."""


class _Output:
    """How one tool's output is declared and checked (built once per tool)."""

    __slots__ = ("check", "schema")

    def __init__(self, schema: dict[str, Any] | None, check: Callable[[object], None] | None):
        self.schema = schema
        self.check = check


_OUTPUTS: weakref.WeakKeyDictionary[Tool[..., Any], _Output] = weakref.WeakKeyDictionary()


def export_tools(tools: Iterable[Tool[..., Any]], *, revealed: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The ``tools`` of a ``tools/list`` result, in MCP's wire shape (camelCase keys).

    Args:
        tools: A `Toolbox` or any iterable of tools.
        revealed: Deferred tools to list, after the others; the other deferred tools are left
            out (a served toolbox's ``search_tools`` finds them).
    """
    listed = []
    for tool in shown(tools, revealed):
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        output = _output(tool).schema
        if output is not None:
            entry["outputSchema"] = output
        entry["annotations"] = tool_annotations(tool)
        listed.append(entry)
    return listed


def tool_annotations(tool: Tool[..., Any]) -> dict[str, bool]:
    """MCP tool annotations from the tool's policy.

    What an unclassified tool leaves out, a client assumes at its worst (possibly destructive,
    open world).
    """
    policy = tool.policy
    hints = {"idempotentHint": bool(tool.idempotent or policy.runtime.idempotent)}
    if policy.is_classified:
        effects = policy.side_effects
        read_only = effects <= {SideEffect.READ_ONLY}
        hints["readOnlyHint"] = read_only
        if not read_only:
            hints["destructiveHint"] = SideEffect.DESTRUCTIVE in effects
        hints["openWorldHint"] = bool(effects & {SideEffect.NETWORK, SideEffect.EXTERNAL_SERVICE})
    return hints


def lists_output(tool: Tool[..., Any] | None) -> bool:
    """Whether the tool is listed with an ``outputSchema``: a result that is not an error must then carry it."""
    return tool is not None and _output(tool).schema is not None


def _output(tool: Tool[..., Any]) -> _Output:
    cached = _OUTPUTS.get(tool)
    if cached is None:
        schema = _output_schema(tool.output_schema)
        try:
            check = None if schema is None else compile_validator(schema)
        except SchemaError:
            schema = check = None
        cached = _OUTPUTS[tool] = _Output(schema, check)
    return cached


def _output_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The declared output as MCP lists it: an object as is, anything else as ``{"result"}``."""
    if schema is None:
        return None
    defs = schema.get("$defs", {})
    body = {k: v for k, v in schema.items() if k != "$defs"}
    name = def_name(body.get("$ref"))
    if set(body) == {"$ref"} and name is not None:
        target = defs.get(name)
        if isinstance(target, dict) and target.get("type") == "object":
            body = {key: value for key, value in target.items() if key != "$anchor"}  # the definition keeps it
    if body.get("type") == "object":
        return {**body, "$defs": defs} if defs else body
    if _is_object(body, defs, {}) is not False or _points_past_defs(body):
        return None  # may or may not be an object, or a reference would point into the wrapper
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": body}, "required": ["result"]}
    return {**wrapped, "$defs": defs} if defs else wrapped


def _points_past_defs(schema: Any) -> bool:
    """Whether a ``$ref`` in ``schema`` points anywhere but into the root ``$defs`` (``#``, ``#/items``...)."""
    if isinstance(schema, list):
        return any(map(_points_past_defs, schema))
    if not isinstance(schema, dict):
        return False
    ref = schema.get("$ref")
    return (isinstance(ref, str) and def_name(ref) is None) or any(map(_points_past_defs, schema.values()))


def _is_object(schema: Any, defs: Mapping[str, Any], known: dict[str, bool | None]) -> bool | None:
    """True if every value ``schema`` accepts is an object, False if none is, None if unsure.

    ``known`` holds each definition's answer once found (None while it is being found, so a
    loop is unsure): definitions shared by many branches are looked at once.
    """
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return True if kinds == ["object"] else (None if "object" in kinds else False)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return False if not any(isinstance(value, dict) for value in values) else None
    ref = schema.get("$ref", "")
    name = def_name(ref)
    if name is not None:
        if ref not in known:
            known[ref] = None
            known[ref] = _is_object(defs.get(name), defs, known)
        return known[ref]
    if "anyOf" in schema:
        answers = {_is_object(branch, defs, known) for branch in schema["anyOf"]}
        return answers.pop() if len(answers) == 1 else None
    return None


def read_calls(request: Any) -> list[ToolCall]:
    """The calls in ``tools/call`` requests (JSON-RPC dicts, their params, or SDK objects).

    The JSON-RPC id becomes the call id (``mcp-<index>`` when there is none).
    """
    calls = []
    for index, item in enumerate(sequence(request)):
        params = field(item, "params") or item
        request_id = field(item, "id")
        call_id = f"mcp-{index}" if request_id is None else str(request_id)
        sent = field(params, "arguments")
        calls.append(ToolCall(call_id, str(field(params, "name") or ""), arguments({} if sent is None else sent)))
    return calls


class _Sent(msgspec.Struct):
    """A request body as sent, its params kept as their own JSON text."""

    id: int | str | None = None
    method: str = ""
    params: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


_READ_SENT = msgspec.json.Decoder(_Sent).decode


def sent_arguments(body: bytes, request_id: object) -> bytes | None:
    """The JSON text of the ``arguments`` object of ``body``, if it is ``request_id``'s ``tools/call`` request.

    A call made from this text is decoded as strictly as any call's text: a key sent twice is
    refused (``malformed_arguments``), where the dict the SDK parsed kept one of its values. A
    request that names a key twice outside the arguments (``arguments`` or ``params`` itself)
    gives its whole text, refused the same way.
    """
    try:
        sent = _READ_SENT(body)
    except (msgspec.DecodeError, msgspec.ValidationError):  # not one request (a batch, say): the SDK's dict
        return None
    if sent.method != "tools/call" or sent.id != request_id or isinstance(sent.id, bool):
        return None
    if repeats_a_key(body):  # "arguments" (or "params") sent twice: the SDK kept one; nothing is guessed
        return body  # read as the call's text, it is refused as malformed (a key sent twice)
    return object_text(sent.params.get("arguments"))


def object_text(raw: msgspec.Raw | None) -> bytes | None:
    """``raw`` JSON as bytes if it is an object, else None."""
    if raw is None:
        return None
    text = bytes(raw)
    return text if text[:1] == b"{" else None


def write_results(results: Iterable[ToolResult], *, artifacts: Any = None) -> list[dict[str, Any]]:
    """One ``CallToolResult`` per result (camelCase keys), in order.

    The text content is `ToolResult.text`. ``structuredContent`` is `ToolResult.structured`
    when the model reads the output itself: as it is when it is an object, else as
    ``{"result": output}``. A result whose content stands in for its output (a summary, a stored
    output's note) has none. Failures set ``isError``. A pending result reads ``Pending: ...``,
    is not an error, and carries its `Pending` record in ``_meta["tinytools/pending"]`` (a server
    marks it an error for a tool listed with an ``outputSchema``, whose results that are not errors
    must carry structured content, which a waiting call has not got yet). With
    the dispatcher's ``artifacts`` store, a result's images, audio and resources follow its text as
    ``image``, ``audio`` and embedded ``resource`` content (a text resource as ``text``, any other
    as a base64 ``blob``).
    """
    written = []
    for result in results:
        payload: dict[str, Any] = {"content": [{"type": "text", "text": result_text(result)}]}
        payload["content"] += map(_content, media(result, artifacts))
        if result.is_error:
            payload["isError"] = True
        elif result.pending is not None:  # not done: the text says what it waits for
            payload["isError"] = False
            payload["_meta"] = {PENDING_META: msgspec.to_builtins(result.pending)}
        else:
            if result.content is None:
                output = result.structured()
                payload["structuredContent"] = output if isinstance(output, dict) else {"result": output}
            payload["isError"] = False
        written.append(payload)
    return written


def _content(item: Media) -> dict[str, Any]:
    """An image, a sound or a resource as MCP content."""
    if isinstance(item.block, ResourceContent):
        text = item.text
        resource = {"uri": item.block.uri, "mimeType": item.media_type}
        resource.update({"text": text} if text is not None else {"blob": item.base64})
        return {"type": "resource", "resource": resource}
    kind = "image" if isinstance(item.block, ImageContent) else "audio"
    return {"type": kind, "data": item.base64, "mimeType": item.media_type}


def check_output(result: ToolResult, tool: Tool[..., Any] | None) -> ToolResult:
    """Refuse output that does not match the declared schema, which the client would reject.

    An output that holds values JSON writes differently (a datetime or a set inside a dict, its
    text already right) is checked, and sent, as the JSON data the client receives.
    """
    if tool is None or result.status != "succeeded":  # a pending call has no output yet
        return result
    check = _output(tool).check
    output = result.output
    try:
        if check is not None:
            try:
                check(output if isinstance(output, dict) else {"result": output})
            except ValueError:
                output = msgspec.json.decode(msgspec.json.encode(output))
                check(output if isinstance(output, dict) else {"result": output})
                result = msgspec.structs.replace(result, output=output)
    except ValueError:
        message = f"Tool {tool.name!r} returned output that does not match its declared output schema."
        error = StructuredError("invalid_output", message)
        return ToolResult(
            call_id=result.call_id, name=result.name, status="failed", error=error, elapsed=result.elapsed
        )
    return result


publish("tinytools.providers.mcp", export_tools, tool_annotations, read_calls, write_results)
