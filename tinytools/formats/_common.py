"""What the three syntaxes share: reading a tool's schema, describing it, and naming found calls.

Schema reading here is for presentation and for coercing XML text, never for enforcement:
every parsed call still goes through the tool's validator when it is dispatched.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from tinytools._errors import counted, shorten
from tinytools._schema.fragments import json_type
from tinytools._tool import Tool
from tinytools._toolformat import ToolFormat

__all__ = [
    "ANY",
    "Found",
    "accepts",
    "allowed_types",
    "call_id",
    "describe",
    "example_arguments",
    "format_of",
    "item_schema",
    "json_text",
    "json_type",
    "parameter_lines",
    "property_schema",
    "resolve",
]

ANY = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})
"""Every JSON type: what a schema without type constraints allows."""

_MAX_DEPTH = 24  # schema walks stop here: recursive $defs have no bottom
_encode = msgspec.json.encode


class Found(msgspec.Struct):
    """One call found in text, before it becomes a `ToolCall`."""

    offset: int
    """Where the call's text starts."""
    raw: str
    """The call's text as the model wrote it."""
    name: str
    """The tool it names."""
    arguments: dict[str, Any] | None = None
    """The arguments, when the call could be read."""
    invalid: str | None = None
    """Why the call cannot be used, or None."""
    id: str | None = None
    """The id the model gave, if any."""


def format_of(tool: Tool[..., Any]) -> ToolFormat:
    """The tool's own format (JSON unless the tool says otherwise)."""
    found = getattr(tool, "format", None)
    return found if isinstance(found, ToolFormat) else ToolFormat.json()


def call_id(turn: str, offset: int, index: int, content: str) -> str:
    """The id of a call the model wrote without one: from its turn, position and text.

    Within one ``turn`` the same reply gives the same ids; another turn never shares one, so a
    journal that answers call ids it has seen never answers a new turn's call with an old result.
    """
    digest = hashlib.sha256(f"{turn}:{offset}:{index}:{content}".encode("utf-8", "surrogatepass"))
    return "call_" + digest.hexdigest()[:16]


def json_text(value: Any) -> str:
    """Compact JSON text of a value."""
    return _encode(value).decode()


def accepts(types: frozenset[str], value: Any) -> bool:
    """Whether a value's JSON type is among ``types`` (an integral float counts as an integer)."""
    kind = json_type(value)
    if kind in types:
        return True
    return kind == "number" and "integer" in types and float(value).is_integer()


def resolve(schema: Any, root: dict[str, Any]) -> Any:
    """Follow local ``$ref`` pointers (``#/$defs/Name``, ``#/...``) to the schema they name."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(schema, dict) or len(schema) != 1 or "$ref" not in schema:
            return schema
        schema = _pointer(root, schema["$ref"])
    return True


def _pointer(root: dict[str, Any], ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return True
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return True
    return node


def allowed_types(schema: Any, root: dict[str, Any], depth: int = 0) -> frozenset[str]:
    """The JSON types a schema can accept, read from ``type``, ``enum``, ``const`` and applicators."""
    schema = resolve(schema, root)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return ANY
    found = ANY
    if "type" in schema:
        declared = schema["type"]
        kinds = {declared} if isinstance(declared, str) else set(declared)
        if "number" in kinds:
            kinds.add("integer")
        found &= kinds
    if "const" in schema:
        found &= {json_type(schema["const"])} | _numeric(schema["const"])
    if isinstance(schema.get("enum"), list):
        found &= {kind for value in schema["enum"] for kind in {json_type(value)} | _numeric(value)}
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list):
            union: frozenset[str] = frozenset()
            for branch in schema[keyword]:
                union |= allowed_types(branch, root, depth + 1)
            found &= union
    for branch in schema.get("allOf", ()) if isinstance(schema.get("allOf"), list) else ():
        found &= allowed_types(branch, root, depth + 1)
    if "$ref" in schema:
        found &= allowed_types({"$ref": schema["$ref"]}, root, depth + 1)
    return found


def _numeric(value: Any) -> set[str]:
    return {"integer", "number"} if json_type(value) in ("integer", "number") else set()


def property_schema(schema: Any, key: str, root: dict[str, Any]) -> Any:
    """The schema a value under ``key`` of an object must match, or None when nothing says."""
    found = _collect(schema, root, lambda node: _property(node, key))
    return _combine(found)


def item_schema(schema: Any, index: int, root: dict[str, Any]) -> Any:
    """The schema item ``index`` of an array must match, or None when nothing says."""
    found = _collect(schema, root, lambda node: _item(node, index))
    return _combine(found)


def _property(node: dict[str, Any], key: str) -> Any:
    properties = node.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _item(node: dict[str, Any], index: int) -> Any:
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    items = node.get("items")
    return items if isinstance(items, dict) else None


def _collect(schema: Any, root: dict[str, Any], pick: Any, depth: int = 0) -> list[Any]:
    schema = resolve(schema, root)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return []
    found = []
    own = pick(schema)
    if own is not None:
        found.append(own)
    if "$ref" in schema:
        found += _collect({"$ref": schema["$ref"]}, root, pick, depth + 1)
    for keyword in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(keyword, ()) if isinstance(schema.get(keyword), list) else ():
            found += _collect(branch, root, pick, depth + 1)
    return found


def _combine(found: list[Any]) -> Any:
    if not found:
        return None
    return found[0] if len(found) == 1 else {"anyOf": found}


def describe(schema: Any, root: dict[str, Any], depth: int = 0) -> str:
    """A short type description for prompt text: ``array of string``, ``one of "c", "f"``."""
    schema = resolve(schema, root)
    if not isinstance(schema, dict) or depth > 3:
        return "any value" if depth <= 3 else "value"
    if "const" in schema:
        return json_text(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json_text(value) for value in schema["enum"])
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list):
            return " or ".join(describe(branch, root, depth + 1) for branch in schema[keyword])
    if "$ref" in schema:
        return describe({"$ref": schema["$ref"]}, root, depth + 1)
    declared = schema.get("type")
    if isinstance(declared, list):
        return " or ".join(describe({**schema, "type": kind}, root, depth) for kind in declared)
    if declared == "array":
        return _describe_array(schema, root, depth)
    if declared == "object":
        return _describe_object(schema, root, depth)
    if declared == "string" and isinstance(schema.get("format"), str):
        return f"string ({schema['format']})"
    return declared if isinstance(declared, str) else "any value"


def _describe_array(schema: dict[str, Any], root: dict[str, Any], depth: int) -> str:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return "array [" + ", ".join(describe(item, root, depth + 1) for item in prefix) + "]"
    items = schema.get("items")
    return f"array of {describe(items, root, depth + 1)}" if isinstance(items, dict) else "array"


def _describe_object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties and depth < 2:
        required = schema.get("required", ())
        fields = (
            f"{name}{'' if name in required else '?'}: {describe(value, root, depth + 1)}"
            for name, value in properties.items()
        )
        return "object {" + ", ".join(fields) + "}"
    extra = schema.get("additionalProperties")
    return f"object of {describe(extra, root, depth + 1)}" if isinstance(extra, dict) else "object"


_CONSTRAINTS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {}"),
    ("maxLength", "at most {}"),
    ("minItems", "at least {}"),
    ("maxItems", "at most {}"),
    ("pattern", "matching {}"),
)
_COUNTED = {"minLength": "character", "maxLength": "character", "minItems": "item", "maxItems": "item"}
"""Constraints that count something, and what they count."""


def parameter_lines(tool: Tool[..., Any]) -> list[str]:
    """One line per parameter: name, type, required or optional (with default), description."""
    root = tool.input_schema
    required = tool.schema.required
    lines = []
    for name, schema in tool.schema.properties.items():
        resolved = resolve(schema, root)
        notes = [describe(schema, root)]
        if name in required:
            notes.append("required")
        elif isinstance(resolved, dict) and "default" in resolved:
            notes.append(f"optional, default {shorten(json_text(resolved['default']), 60)}")
        else:
            notes.append("optional")
        if isinstance(resolved, dict):
            notes += [text.format(_constraint(key, resolved[key])) for key, text in _CONSTRAINTS if key in resolved]
        line = f"- {name} ({', '.join(notes)})"
        description = resolved.get("description") if isinstance(resolved, dict) else None
        lines.append(f"{line}: {description}" if isinstance(description, str) else line)
    return lines


def _constraint(keyword: str, value: Any) -> str:
    """A constraint's value as the model reads it: "1 character", "3 items", or the JSON."""
    noun = _COUNTED.get(keyword)
    return counted(value, noun) if noun is not None else json_text(value)


def example_arguments(tool: Tool[..., Any]) -> dict[str, Any]:
    """Arguments for the one example call in a declaration: the required ones (or the first)."""
    properties = tool.schema.properties
    names = [name for name in properties if name in tool.schema.required] or list(properties)[:1]
    return {name: _example(properties[name], tool.input_schema, 0) for name in names}


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    schema = resolve(schema, root)
    if not isinstance(schema, dict) or depth > 4:
        return "..."
    for keyword in ("examples", "enum"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            return schema[keyword][0]
    for keyword in ("default", "const"):
        if keyword in schema:
            return schema[keyword]
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            return _example(schema[keyword][0], root, depth + 1)
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((kind for kind in declared if kind != "null"), "null")
    return _typed_example(declared, schema, root, depth)


def _typed_example(declared: Any, schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if declared == "integer":
        for bound in ("minimum", "maximum"):
            if isinstance(schema.get(bound), int) and not isinstance(schema.get(bound), bool):
                return schema[bound]
        return 1
    if declared == "number":
        return 1.5
    if declared == "boolean":
        return True
    if declared == "null":
        return None
    if declared == "array":
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [_example(item, root, depth + 1) for item in prefix]
        items = schema.get("items")
        return [_example(items, root, depth + 1)] if isinstance(items, dict) else []
    if declared == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", ())
        return {key: _example(value, root, depth + 1) for key, value in properties.items() if key in required}
    if declared == "string" and schema.get("format") == "date":
        return "2024-05-01"
    return "text" if declared in ("string", None) else "..."
