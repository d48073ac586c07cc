"""One order for the keywords of a JSON Schema, so that equal schemas are written as equal bytes.

A provider caches a prompt by its bytes. Two schemas that differ only in the order their
keywords were inserted (a hand-written dict, a remote server's JSON, pydantic's alphabetical
output) mean the same, and are exported the same once their keywords are in `KEYWORD_ORDER`.
What a model generates in order stays in the author's order: the names inside ``properties``
(and the other maps of subschemas) and the items of every list. Data (``default``, ``enum``,
``const``, ``examples``) is left as it is.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KEYWORD_ORDER", "SCHEMA_LISTS", "SCHEMA_MAPS", "SINGLE_SCHEMAS", "in_keyword_order", "keyword_position"]

KEYWORD_ORDER = (
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef",
    "type", "format", "enum", "const",
    "properties", "patternProperties", "required", "additionalProperties", "propertyNames",
    "dependentRequired", "dependentSchemas", "minProperties", "maxProperties", "unevaluatedProperties",
    "prefixItems", "items", "contains", "minContains", "maxContains", "minItems", "maxItems",
    "uniqueItems", "unevaluatedItems",
    "minLength", "maxLength", "pattern", "contentEncoding", "contentMediaType", "contentSchema",
    "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment",
    "$defs", "definitions",
)  # fmt: skip
"""The order keywords are written in: what a value is, its shape, its bounds, then annotations.

Keywords not listed (a vendor's ``x-...``) come after these, by name.
"""

_RANK = {keyword: rank for rank, keyword in enumerate(KEYWORD_ORDER)}
SINGLE_SCHEMAS = frozenset(
    {"additionalProperties", "propertyNames", "unevaluatedProperties", "items", "contains", "unevaluatedItems"}
    | {"contentSchema", "not", "if", "then", "else"}
)
"""Keywords whose value is one subschema (``items`` as a list, from older drafts, is a list of them)."""
SCHEMA_LISTS = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
"""Keywords whose value is a list of subschemas."""
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
"""Keywords whose value maps names to subschemas."""


def in_keyword_order(schema: Any) -> Any:
    """``schema`` with the keywords of every subschema in `KEYWORD_ORDER`.

    Parts already in order are returned as they are (not copied); ``schema`` itself is never
    changed. A schema nested too deeply to walk is returned as it is.
    """
    try:
        return _ordered(schema)
    except RecursionError:
        return schema


def keyword_position(keyword: str) -> tuple[int, str]:
    """Where ``keyword`` goes among a schema's keywords (unknown ones last, by name)."""
    rank = _RANK.get(keyword)
    return (rank, "") if rank is not None else (len(_RANK), keyword)


def _ordered(schema: Any) -> Any:
    """``schema`` in order: the same object when nothing in it moved, else a new dict."""
    if schema.__class__ is not dict:
        return schema
    keys = sorted(schema, key=keyword_position)
    moved = keys != list(schema)
    out: dict[str, Any] = {}
    for key in keys:
        value = schema[key]
        out[key] = new = _subschemas(key, value)
        moved = moved or new is not value
    return out if moved else schema


def _subschemas(keyword: str, value: Any) -> Any:
    """The value of ``keyword`` with its subschemas in order (the same object when none moved)."""
    if keyword in SINGLE_SCHEMAS or keyword in SCHEMA_LISTS:
        if value.__class__ is not list:
            return _ordered(value)
        items = [_ordered(item) for item in value]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    if keyword in SCHEMA_MAPS and value.__class__ is dict:
        named = {name: _ordered(item) for name, item in value.items()}
        return named if any(named[name] is not value[name] for name in value) else value
    return value
