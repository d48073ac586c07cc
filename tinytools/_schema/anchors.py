"""Plain-name anchors: each ``$anchor`` written out as the JSON pointer of the subschema it names.

In 2020-12, ``"$anchor": "node"`` names its subschema, and ``{"$ref": "#node"}`` refers to it.
tinytools refuses ``$id``, so a schema is one resource and every anchor in it names a place a JSON
pointer names too: `pointed` rewrites each ``#node`` reference as ``#/$defs/Node`` (or wherever the
anchor stood) and keeps the anchors, as names nothing refers to by then (a 2020-12 client keeps
them). The meaning is the same; every reader of a schema after this (the validator, the messages,
the provider exports) follows JSON pointers only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from tinytools._errors import SchemaError
from tinytools._schema.keyword_order import SCHEMA_LISTS, SCHEMA_MAPS, SINGLE_SCHEMAS

__all__ = ["anchored", "pointed"]

MAX_DEPTH = 128
"""As deep as `tinytools._schema.input_schema` takes schemas to nest."""
_NAME = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")
"""What 2020-12 allows an ``$anchor`` to be."""
_FRAGMENT_SAFE = "/~!$&'()*+,;=:@?"
"""What a URI fragment holds as it is (RFC 3986, besides letters, digits and ``-._~``): the rest is %-encoded."""


def anchored(schema: Any) -> bool:
    """Whether ``schema`` has an ``$anchor`` or a ``$ref`` to a plain name anywhere in its subschemas."""
    return any(_named(node) for node, _ in _nodes(schema, "", 0))


def _named(node: dict[str, Any]) -> bool:
    ref = node.get("$ref")
    return "$anchor" in node or (
        isinstance(ref, str) and ref.startswith("#") and not ref.startswith("#/") and ref != "#"
    )


def pointed(schema: Any) -> Any:
    """``schema`` (not changed) with each reference to an ``$anchor`` written as the pointer it stands for.

    Raises:
        SchemaError: An anchor is not a valid name or is given twice, or a reference names no anchor.
    """
    if not anchored(schema):
        return schema
    places: dict[str, str] = {}
    for node, pointer in _nodes(schema, "", 0):
        name = node.get("$anchor")
        if name is None:
            continue
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise SchemaError(
                f"$anchor {name!r} is not a name (a letter or '_', then letters, digits, '-', '.', '_')",
                pointer=f"{pointer}/$anchor",
            )
        if name in places:
            raise SchemaError(f"$anchor {name!r} is given twice", pointer=f"{pointer}/$anchor")
        places[name] = pointer
    return _rewritten(schema, places, "")  # no deeper than _nodes walked


def _rewritten(node: Any, places: dict[str, str], pointer: str) -> Any:
    if node.__class__ is not dict:
        return node
    out: dict[str, Any] = {}
    for keyword, value in node.items():
        if (
            keyword == "$ref"
            and isinstance(value, str)
            and value.startswith("#")
            and not value.startswith("#/")
            and value != "#"
        ):
            name = value[1:]
            if name not in places:
                raise SchemaError(f"$ref {value!r} names no $anchor in this schema", pointer=f"{pointer}/$ref")
            value = "#" + quote(places[name], safe=_FRAGMENT_SAFE)
        elif keyword in SINGLE_SCHEMAS and value.__class__ is dict:
            value = _rewritten(value, places, f"{pointer}/{keyword}")
        elif keyword in SINGLE_SCHEMAS | SCHEMA_LISTS and value.__class__ is list:
            value = [_rewritten(item, places, f"{pointer}/{keyword}/{index}") for index, item in enumerate(value)]
        elif keyword in SCHEMA_MAPS and value.__class__ is dict:
            value = {
                name: _rewritten(item, places, f"{pointer}/{keyword}/{_escape(name)}") for name, item in value.items()
            }
        out[keyword] = value
    return out


def _nodes(node: Any, pointer: str, depth: int) -> Iterator[tuple[dict[str, Any], str]]:
    """Every subschema that is an object, with its JSON pointer (data such as ``default`` is not walked).

    Raises:
        SchemaError: Subschemas nest deeper than any schema tinytools takes.
    """
    if node.__class__ is not dict:
        return
    if depth > MAX_DEPTH:
        raise SchemaError(f"schemas nest deeper than {MAX_DEPTH} levels", pointer=pointer)
    yield node, pointer
    for keyword, value in node.items():
        if keyword in SINGLE_SCHEMAS and value.__class__ is dict:
            yield from _nodes(value, f"{pointer}/{keyword}", depth + 1)
        elif keyword in SINGLE_SCHEMAS | SCHEMA_LISTS and value.__class__ is list:
            for index, item in enumerate(value):
                yield from _nodes(item, f"{pointer}/{keyword}/{index}", depth + 1)
        elif keyword in SCHEMA_MAPS and value.__class__ is dict:
            for name, item in value.items():
                yield from _nodes(item, f"{pointer}/{keyword}/{_escape(name)}", depth + 1)


def _escape(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")
