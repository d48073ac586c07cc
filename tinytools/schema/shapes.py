"""Shapes the schema builder composes: unions, enums, defaults, and JSON type names.

Pure functions of schemas and values, shared by the builder (`tinytools.schema.hints`) and the
text formats, which name a value's JSON type in their messages.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Mapping
from typing import Any

import msgspec

from tinytools.errors import ToolDefinitionWarning

__all__ = ["enum_schema", "exact_types", "json_type", "resolved_text", "union_schema", "with_default"]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float,),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def union_schema(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for a union: a ``type`` list where the members allow it, else ``anyOf``.

    ``int | str`` becomes ``{"type": ["integer", "string"]}``, and ``T | None`` adds
    ``"null"`` to T's type (and to its ``enum``), which reads better and validates faster.
    """
    simple = [_simple_types(schema) for schema in schemas]
    if all(kinds is not None for kinds in simple):
        merged = list(dict.fromkeys(kind for kinds in simple for kind in kinds or ()))
        return {"type": merged[0] if len(merged) == 1 else merged}
    others = [schema for schema in schemas if schema != {"type": "null"}]
    if len(others) == 1 and len(schemas) == 2 and isinstance(others[0].get("type"), str):
        schema = {**others[0], "type": [others[0]["type"], "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": schemas}


def _simple_types(schema: dict[str, Any]) -> list[str] | None:
    """The ``type`` list of a schema that says nothing but its type, else None."""
    if set(schema) != {"type"}:
        return None
    kind = schema["type"]
    return list(kind) if isinstance(kind, list) else [kind]


def with_default(schema: dict[str, Any], default: Any, tool: str = "", parameter: str = "") -> dict[str, Any]:
    """Add ``default`` to a schema as JSON (a pydantic model's as its JSON data).

    A default with no JSON form is left out, with a `ToolDefinitionWarning`: the model only learns
    that the argument may be omitted.
    """
    pydantic = sys.modules.get("pydantic")
    try:
        if pydantic is not None and isinstance(default, pydantic.BaseModel):
            value = default.model_dump(mode="json", by_alias=True)
        else:
            value = msgspec.to_builtins(default)
        msgspec.json.encode(value)
    except (TypeError, ValueError) as exc:
        warnings.warn(
            f"tool {tool!r}: the default of {parameter!r} has no JSON form ({exc}); "
            "the model is not told what leaving it out means",
            ToolDefinitionWarning,
            stacklevel=2,
        )
        return schema
    return {**schema, "default": value}


def enum_schema(values: list[Any]) -> dict[str, Any]:
    """``enum``, with the values' ``type`` when they all share one (providers like to see it)."""
    kinds = {json_type(value) for value in values}
    if len(kinds) == 1 and kinds <= {"boolean", "integer", "number", "string"}:
        return {"type": kinds.pop(), "enum": values}
    return {"enum": values}


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (anything not scalar or a list is an object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def exact_types(schema: dict[str, Any]) -> tuple[type, ...]:
    """Python classes of JSON values that a simple member schema takes as they are."""
    kinds = _simple_types(schema)
    if kinds is None:
        return ()
    return tuple(cls for kind in kinds for cls in _JSON_TYPES[kind] if kind not in ("array", "object"))


def resolved_text(schema: Any, defs: Mapping[str, Any], limit: int) -> str:
    """The JSON text of ``schema`` with each ``$ref`` to ``defs`` shown as its definition, cut to ``limit`` characters.

    A recursive definition is shown once (its reference inside stays a ``$ref``), and three
    levels of definitions at most. The text is written only up to the cut (an ellipsis marks
    it), so definitions that share definitions, whose resolved text grows ten times a level,
    cost no more than the characters shown.
    """
    writer = _Writer(defs, limit)
    with contextlib.suppress(_Full):
        writer.write(schema, ())
    text = "".join(writer.pieces)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Full(Exception):
    """The text reached its limit: nothing more is written."""


class _Writer:
    """Writes resolved JSON text as msgspec would encode it, until past a limit."""

    __slots__ = ("defs", "limit", "pieces", "size")

    def __init__(self, defs: Mapping[str, Any], limit: int):
        self.defs = defs
        self.limit = limit
        self.pieces: list[str] = []
        self.size = 0

    def put(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        if self.size > self.limit:
            raise _Full

    def write(self, value: Any, seen: tuple[str, ...]) -> None:
        if isinstance(value, dict):
            self.put("{")
            for index, (key, item, where) in enumerate(self.entries(value, seen)):
                self.put(("," if index else "") + msgspec.json.encode(key).decode() + ":")
                self.write(item, where)
            self.put("}")
        elif isinstance(value, list):
            self.put("[")
            for index, item in enumerate(value):
                if index:
                    self.put(",")
                self.write(item, seen)
            self.put("]")
        else:
            self.put(msgspec.json.encode(value).decode())

    def entries(self, node: dict[str, Any], seen: tuple[str, ...]) -> list[tuple[str, Any, tuple[str, ...]]]:
        """A node's keys and values, a ``$ref`` replaced by its definition's (the keys beside it win)."""
        ref = node.get("$ref")
        name = ref[8:] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
        target = self.defs.get(name) if name is not None and name not in seen and len(seen) < 3 else None
        if name is None or not isinstance(target, dict):
            return [(key, value, seen) for key, value in node.items()]
        merged = {key: (value, where) for key, value, where in self.entries(target, (*seen, name))}
        merged.update((key, (value, seen)) for key, value in node.items() if key != "$ref")
        return [(key, value, where) for key, (value, where) in merged.items()]
