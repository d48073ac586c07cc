"""Shapes the schema builder composes: unions, enums, defaults, and JSON type names.

Pure functions of schemas and values, shared by the builder (`tinytools._schema.hints`) and the
text formats, which name a value's JSON type in their messages.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from tinytools._errors import ToolDefinitionWarning
from tinytools._schema.converters import JSON_SCALARS

__all__ = [
    "def_name",
    "enum_schema",
    "exact_types",
    "in_json_order",
    "json_type",
    "resolved_text",
    "same_json",
    "schema_at",
    "union_schema",
    "with_default",
]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (float,),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def def_name(ref: Any) -> str | None:
    """The name of the root ``$defs`` entry a ``$ref`` points at, or None for any other reference.

    The reference is a URI fragment holding a JSON pointer: ``#/$defs/A%20Node~1x`` names ``A Node/x``
    (percent-decoded, then ``~1`` and ``~0`` read as ``/`` and ``~``).
    """
    if ref.__class__ is not str or not ref.startswith("#/$defs/"):
        return None
    token = ref[8:]
    if "%" in token:
        from urllib.parse import unquote  # a reference written by hand, percent-encoded

        token = unquote(token)
    if "/" in token or not token:
        return None
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


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
        if others[0]["type"] == "null":  # a None of its own (annotated): it admits null already
            return others[0]
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
    that the argument may be omitted. A set (or frozenset) is written in one order, its items'
    (`in_json_order`), also inside lists, tuples and dicts: in the order it iterates in, the same
    default would be other bytes under another hash seed.
    """
    pydantic = sys.modules.get("pydantic")
    try:
        if pydantic is not None and isinstance(default, pydantic.BaseModel):
            value = default.model_dump(mode="json", by_alias=True)
        else:
            value = msgspec.to_builtins(_sets_in_order(default))
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


def in_json_order(items: Any) -> list[Any]:
    """JSON values (a set's items) in one order, whatever order they came in.

    ``null``, then booleans, numbers (by value), strings (by code point), and arrays and objects
    by their compact JSON text.

    Raises:
        TypeError: An item is not JSON data.
    """
    return sorted(items, key=_json_rank)


def _json_rank(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, msgspec.json.encode(value))


def _sets_in_order(value: Any) -> Any:
    """``value`` with each set in it (at the top, or in lists, tuples and dicts) a list `in_json_order`."""
    if isinstance(value, (set, frozenset)):
        return in_json_order(msgspec.to_builtins(_sets_in_order(item)) for item in value)
    if value.__class__ in (list, tuple):
        return [_sets_in_order(item) for item in value]
    if value.__class__ is dict:
        return {key: _sets_in_order(item) for key, item in value.items()}
    if value.__class__ in JSON_SCALARS:
        return value
    try:  # a dataclass, a Struct, a model: its sets (and maps) in a fixed order, its fields in theirs
        return msgspec.to_builtins(value, order="deterministic")
    except TypeError:
        return value


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


def same_json(left: Any, right: Any) -> bool:
    """Whether two decoded values are the same JSON value (``true`` is not ``1``)."""
    return left == right and (left.__class__ is bool) == (right.__class__ is bool)


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
        name = def_name(ref)
        target = self.defs.get(name) if name is not None and name not in seen and len(seen) < 3 else None
        if name is None or not isinstance(target, dict):
            return [(key, value, seen) for key, value in node.items()]
        merged = {key: (value, where) for key, value, where in self.entries(target, (*seen, name))}
        merged.update((key, (value, seen)) for key, value in node.items() if key != "$ref")
        return [(key, value, where) for key, (value, where) in merged.items()]


_MAX_BRANCHES = 8
"""How deep `schema_at` follows ``$ref`` and ``allOf``/``anyOf``/``oneOf`` for one step: a loop ends there."""
_PLAIN = frozenset({"$ref", "allOf", "anyOf", "oneOf"})


def schema_at(root: Any, tokens: Sequence[str | int]) -> Any:
    """The subschema of ``root`` that describes the value at ``tokens`` (keys and indexes into the value).

    Follows ``properties``, ``additionalProperties``, ``prefixItems``, ``items`` and local
    ``$ref``s, and the one branch of an ``anyOf``, ``oneOf`` or ``allOf`` that describes the place
    (the model of a ``Model | None``). None where no one subschema does: a key a
    ``patternProperties`` may match, two branches that both could, a place the schema says
    nothing about.
    """
    node = root
    for token in tokens:
        node = _child(root, node, token, 0)
        if node is None:
            return None
    return node


def _child(root: Any, node: Any, token: str | int, depth: int) -> Any:
    if depth > _MAX_BRANCHES or not isinstance(node, dict):
        return None
    if _PLAIN.isdisjoint(node):  # no reference, no branches: the node alone says
        return _own_child(node, token)
    found = [_own_child(node, token)]
    ref = node.get("$ref")
    if isinstance(ref, str):
        found.append(_child(root, _pointed(root, ref), token, depth + 1))
    for keyword in ("allOf", "anyOf", "oneOf"):
        branches = node.get(keyword)
        for branch in branches if isinstance(branches, list) else ():
            found.append(_child(root, branch, token, depth + 1))
    distinct = {id(each): each for each in found if each is not None}
    return next(iter(distinct.values())) if len(distinct) == 1 else None


def _own_child(node: dict[str, Any], token: str | int) -> Any:
    """The subschema ``node`` itself gives the value at ``token`` (not through a reference or branch)."""
    properties = node.get("properties")
    if isinstance(token, str) and isinstance(properties, dict) and token in properties:
        return properties[token]
    index = token if isinstance(token, int) else int(token) if token.isdigit() and token.isascii() else None
    if index is not None and ("prefixItems" in node or "items" in node):
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and index < len(prefix):
            return prefix[index]
        items = node.get("items")
        return items if isinstance(items, dict) else None
    extra = node.get("additionalProperties")
    if isinstance(token, str) and isinstance(extra, dict) and "patternProperties" not in node:
        return extra
    return None


def _pointed(root: Any, ref: str) -> Any:
    """What a local ``$ref`` (``#/$defs/Name``, ``#``) points at in ``root``, or None."""
    if ref.startswith("#/$defs/") and ref.count("/") == 2 and "~" not in ref and "%" not in ref:
        defs = root.get("$defs") if isinstance(root, dict) else None
        return defs.get(ref[8:]) if isinstance(defs, dict) else None  # what @tool writes
    if not ref.startswith("#"):
        return None
    from urllib.parse import unquote  # a reference written by hand

    node = root
    for part in unquote(ref[1:]).split("/")[1:] if ref != "#" else ():
        key: Any = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and key.isdigit():
            key = int(key)
            node = node[key] if key < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
    return node
