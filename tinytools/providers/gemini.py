"""Google Gemini: function declarations, ``functionCall`` parts, ``functionResponse`` parts.

```python
from google.genai import types
from tinytools.providers import gemini as adapter

config = types.GenerateContentConfig(tools=adapter.export_tools(toolbox))
response = client.models.generate_content(model=model, contents=contents, config=config)
contents.append(response.candidates[0].content)
calls = adapter.read_calls(response)
results = [dispatch(call, toolbox) for call in calls]
contents.append(types.Content(role="user", parts=adapter.write_results(results)))
```

Each declaration carries the tool's own JSON Schema as ``parametersJsonSchema`` (its output's as
``responseJsonSchema``), so the model is shown what the validator enforces. For models that take
only the OpenAPI-subset ``parameters``, ``export_tools(toolbox, schema_format="openapi")``
translates instead: types become ``STRING``, ``OBJECT``, ...; ``null`` in a type becomes
``nullable: true``; a union becomes ``anyOf``; ``$ref`` is inlined (a recursive type is
refused); enums become strings with ``format: "enum"``; and constraints the subset lacks
(``exclusiveMinimum``, ``multipleOf``, ``uniqueItems``, other formats) are stated in the
description. The validator still enforces the canonical schema. What cannot be translated
(``allOf``, ``oneOf``, ``not``, ``if``, tuples, pattern properties, ...) is refused with a
`SchemaError`.

Gemini may send calls without ids. Such a call gets the id ``gemini:<turn>:<index>-<digest>``,
unique within the run: ``<turn>`` is the ``turn=`` given to `read_calls`, else the response's
``responseId`` (so reading the same response again gives the same ids), else a random token of
that read; the digest is six hex digits of the call's name and arguments (the chunks of one
streamed response share its id and number their parts from 0). Its response part is written
without an id (Gemini matches it by name and order).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from tinytools._errors import SchemaError
from tinytools._results import ImageContent, ToolCall, ToolResult
from tinytools._schema.fragments import def_name
from tinytools._tool import Tool
from tinytools.providers._common import arguments, field, media, result_text, sentence, sequence, shown

__all__ = ["LOCAL_ID_PREFIX", "export_tools", "read_calls", "schema", "write_results"]

LOCAL_ID_PREFIX = "gemini:"
"""Prefix of the ids given to calls that Gemini sent without one."""
MAX_INLINED = 10_000
"""Most schemas one translation writes: definitions that share definitions grow tenfold a level once inlined."""

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
_SAME = {
    "description", "title", "pattern", "minimum", "maximum", "minItems", "maxItems", "minLength",
    "maxLength", "minProperties", "maxProperties", "default",
}  # fmt: skip
_IGNORED = {
    "$comment", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    "contentSchema", "$schema", "$defs", "required", "$anchor",
}  # fmt: skip
_STRUCTURE = {
    "type",
    "enum",
    "const",
    "anyOf",
    "allOf",
    "properties",
    "items",
    "additionalProperties",
    "$ref",
}
_STATED = {
    "exclusiveMinimum": "Must be greater than {}.",
    "exclusiveMaximum": "Must be less than {}.",
    "multipleOf": "Must be a multiple of {}.",
    "format": "Format: {}.",
}
_FORMATS = {"STRING": {"date-time", "enum"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}


def export_tools(
    tools: Iterable[Tool[..., Any]],
    *,
    revealed: Iterable[str] = (),
    schema_format: Literal["json_schema", "openapi"] = "json_schema",
) -> list[dict[str, Any]]:
    """The ``tools=`` of a request: one ``Tool`` holding every function declaration.

    By default each declaration carries the tool's own JSON Schema as ``parametersJsonSchema``
    (and its output's as ``responseJsonSchema``): what the model sees is what is enforced,
    recursive types, tuples and every keyword included. ``schema_format="openapi"`` sends the
    older OpenAPI-subset ``parameters`` instead, for models that take only that: a translation
    (`schema`) that refuses what it cannot express, leaves out a vendor's ``x-`` keywords, and
    declares a tool without parameters without them (Gemini refuses an empty object there).

    Args:
        tools: A `Toolbox` or any iterable of tools.
        revealed: Deferred tools to show, after the others (``dispatcher.revealed``); the
            other deferred tools are left out.
        schema_format: ``"json_schema"`` (current models) or ``"openapi"`` (the subset).

    Raises:
        SchemaError: With ``"openapi"``, a schema uses something Gemini's ``Schema`` cannot express.
        ValueError: ``schema_format`` is neither.
    """
    if schema_format not in ("json_schema", "openapi"):
        raise ValueError(f"schema_format is 'json_schema' or 'openapi', not {schema_format!r}")
    declarations = []
    for tool in shown(tools, revealed):
        declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if schema_format == "json_schema":
            declaration["parametersJsonSchema"] = tool.input_schema
            if tool.output_schema is not None:
                declaration["responseJsonSchema"] = tool.output_schema
        elif tool.input_schema.get("properties"):
            declaration["parameters"] = schema(tool)
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}]


def schema(tool: Tool[..., Any]) -> dict[str, Any]:
    """A tool's input schema translated into Gemini's ``Schema`` (camelCase keys).

    Raises:
        SchemaError: Something in it cannot be expressed; the message names the tool,
            the parameter and the pointer.
    """
    return _Translator(tool.name, tool.input_schema.get("$defs", {})).node(tool.input_schema, "", ())


class _Translator:
    def __init__(self, tool: str, defs: dict[str, Any]):
        self.tool = tool
        self.defs = defs
        self.left = MAX_INLINED

    def fail(self, reason: str, pointer: str) -> SchemaError:
        parameter = pointer.split("/")[2] if pointer.startswith("/properties/") else None
        return SchemaError(f"Gemini: {reason}", pointer=pointer, tool=self.tool, parameter=parameter)

    def node(self, schema: Any, pointer: str, seen: tuple[str, ...]) -> dict[str, Any]:
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            raise self.fail("a schema that accepts nothing cannot be expressed", pointer)
        if "$ref" in schema:
            return self.node(self.inline(schema, pointer, seen), pointer, (*seen, schema["$ref"]))
        self.left -= 1
        if self.left < 0:
            reason = f"more than {MAX_INLINED} schemas once its $refs are inlined (Gemini's schema has no references)"
            raise self.fail(reason + "; export with schema_format='json_schema'", pointer)
        out: dict[str, Any] = {}
        notes: list[str] = []
        for keyword, value in schema.items():
            if keyword in _SAME:
                out[keyword] = value
            elif keyword == "uniqueItems":
                notes += ["Items must be unique."] if value else []
            elif keyword not in _IGNORED | _STRUCTURE | _STATED.keys() and not keyword.startswith("x-"):
                raise self.fail(f"{keyword!r} has no equivalent in Gemini's schema", f"{pointer}/{keyword}")
        nullable = self.structure(schema, pointer, seen, out)
        for keyword, template in _STATED.items():
            value = schema.get(keyword)
            if keyword == "format" and value in _FORMATS.get(out.get("type", ""), ()):
                out["format"] = value
            elif value is not None:
                notes.append(template.format(value if isinstance(value, str) else _json(value)))
        if "type" in out:
            out = {"type": out.pop("type"), **out}
        if nullable:
            out["nullable"] = True
        if notes:
            out["description"] = sentence(out.get("description", ""), " ".join(notes))
        return out

    def inline(self, schema: dict[str, Any], pointer: str, seen: tuple[str, ...]) -> dict[str, Any]:
        """The definition a ``$ref`` names, with the keywords beside the ``$ref`` laid over it."""
        ref = schema["$ref"]
        name = def_name(ref)
        if name is None or name not in self.defs:
            raise self.fail(f"$ref {ref!r} must name an entry of the root $defs", f"{pointer}/$ref")
        if ref in seen:
            reason = f"recursive type {name!r} cannot be expressed (Gemini's schema has no references)"
            raise self.fail(reason, f"{pointer}/$ref")
        target = self.defs[name]
        if not isinstance(target, dict):
            return {} if target is True else {"not": {}}
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}

    def structure(self, schema: dict[str, Any], pointer: str, seen: tuple[str, ...], out: dict[str, Any]) -> bool:
        """Translate type, enum, unions, properties and items into ``out``; return nullability."""
        kinds = schema.get("type", [])
        kinds = list(kinds) if isinstance(kinds, list) else [kinds]
        nullable = "null" in kinds and len(kinds) > 1
        kinds = [kind for kind in kinds if kind != "null"] if nullable else kinds
        if "enum" in schema or "const" in schema:
            nullable |= self.enum(schema, pointer, kinds, out)
        if "allOf" in schema:
            if len(schema["allOf"]) != 1:
                raise self.fail("allOf has no equivalent in Gemini's schema", f"{pointer}/allOf")
            out.update(self.node(schema["allOf"][0], f"{pointer}/allOf/0", seen))
        if "anyOf" in schema:
            nullable |= self.union(schema["anyOf"], f"{pointer}/anyOf", seen, out)
        if len(kinds) == 1:
            out["type"] = _TYPES[kinds[0]]
        elif kinds:
            if "anyOf" in out:
                raise self.fail("a type list beside anyOf cannot be expressed", f"{pointer}/type")
            out["anyOf"] = [{"type": _TYPES[kind]} for kind in kinds]
        if "properties" in schema:
            out["properties"] = {
                name: self.node(sub, f"{pointer}/properties/{name}", seen) for name, sub in schema["properties"].items()
            }
            if schema.get("required"):
                out["required"] = list(schema["required"])
        if "items" in schema:
            if schema["items"] is False:
                raise self.fail("tuples (prefixItems) have no equivalent in Gemini's schema", pointer)
            out["items"] = self.node(schema["items"], f"{pointer}/items", seen)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out["additionalProperties"] = self.node(extra, f"{pointer}/additionalProperties", seen)
        return nullable

    def enum(self, schema: dict[str, Any], pointer: str, kinds: list[str], out: dict[str, Any]) -> bool:
        """Gemini enums are strings (``format: "enum"``), also for numbers; returns nullability."""
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        present = [value for value in values if value is not None]
        found = {_kind(value) for value in present}
        if len(found) > 1 or "" in found:
            raise self.fail("an enum must hold values of one type (string, number or boolean)", pointer)
        kind = found.pop() if found else "null"
        if not kinds:
            kinds.append(kind)
        if kind == "boolean":
            out["description"] = sentence(out.get("description", ""), f"One of: {_json(present)}.")
        elif present:
            out["enum"] = [value if isinstance(value, str) else _json(value) for value in present]
            out["format"] = "enum"
        return len(present) < len(values)

    def union(self, branches: list[Any], pointer: str, seen: tuple[str, ...], out: dict[str, Any]) -> bool:
        """``anyOf`` without its ``null`` branch (which becomes ``nullable``); returns nullability."""
        translated = [self.node(branch, f"{pointer}/{index}", seen) for index, branch in enumerate(branches)]
        kept = [branch for branch in translated if branch != {"type": "NULL"}]
        if len(kept) == 1:
            out.update({**kept[0], **out})
        elif kept:
            out["anyOf"] = kept
        return len(kept) < len(translated)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number" if isinstance(value, float) else "integer"
    return "string" if isinstance(value, str) else ""


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def read_calls(response: Any, *, turn: str | None = None) -> list[ToolCall]:
    """The ``functionCall`` parts of a response, in order.

    Takes a ``GenerateContentResponse`` (the SDK's object or its JSON as a dict; the first
    candidate is read), a candidate, a ``Content``, or a list of parts. ``args`` is already an
    object and passes through; a call without ``args`` has none. A call Gemini sent without an
    id gets ``gemini:<turn>:<index>-<digest>``: ``turn`` as given (anything unique in the run:
    the turn's number, or the chunk's for a streamed response), else the response's
    ``responseId``, else a random token, so that two turns never share an id (a journal answers
    a call id it has seen).
    """
    calls = []
    made: str | None = None
    for index, part in enumerate(_parts(response)):
        call = field(part, "function_call", "functionCall")
        if call is None:
            continue
        call_id = field(call, "id")
        sent = field(call, "args")
        if not call_id:
            if made is None:
                made = f"{LOCAL_ID_PREFIX}{_turn(response, turn)}:"
            call_id = f"{made}{index}-{_digest(field(call, 'name'), sent)}"
        calls.append(ToolCall(str(call_id), str(field(call, "name") or ""), arguments({} if sent is None else sent)))
    return calls


def _turn(response: Any, given: str | None) -> str:
    """What tells this response's calls from every other turn's: the turn given, its id, or a random token."""
    if given is not None:
        return given
    found = None if isinstance(response, list) else field(response, "response_id", "responseId")
    return str(found) if found else os.urandom(8).hex()


def _digest(name: Any, arguments: Any) -> str:
    """Six hex digits of what a call says: chunks of one streamed response number their parts from 0 each."""
    try:
        said = msgspec.json.encode([name, arguments], order="sorted")
    except (TypeError, ValueError):
        said = repr((name, arguments)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(said).hexdigest()[:6]


def _parts(response: Any) -> list[Any]:
    if isinstance(response, list):
        return response
    candidates = sequence(field(response, "candidates"))
    if candidates:
        response = candidates[0]
    content = field(response, "content")
    parts = field(content if content is not None else response, "parts")
    return sequence(parts) if parts is not None else [response]


def write_results(results: Iterable[ToolResult], *, artifacts: Any = None) -> list[dict[str, Any]]:
    """One ``functionResponse`` part per result, in order: the parts of the next user turn.

    A result is ``{"output": value}``: its `ToolResult.structured` value when it has one, else its
    text; a failure is ``{"error": {"code", "message"}}`` with the text the model reads. With
    the dispatcher's ``artifacts`` store, a result's images (`ImageContent`) and PDF resources
    (`ResourceContent` of ``application/pdf``) go as the response's ``parts`` (``inlineData``);
    audio and other resources have no part here.
    """
    parts = []
    for result in results:
        if result.error is not None:
            payload: dict[str, Any] = {"error": {"code": result.error.code, "message": result_text(result)}}
        else:
            structured = result.structured()
            payload = {"output": result_text(result) if structured is None and result.content else structured}
        response: dict[str, Any] = {"name": result.name, "response": payload}
        if not result.call_id.startswith(LOCAL_ID_PREFIX):
            response["id"] = result.call_id
        inline = [
            {"inlineData": {"mimeType": item.media_type, "data": item.base64}}
            for item in media(result, artifacts)
            if isinstance(item.block, ImageContent) or item.media_type == "application/pdf"
        ]
        if inline:
            response["parts"] = inline
        parts.append({"functionResponse": response})
    return parts
