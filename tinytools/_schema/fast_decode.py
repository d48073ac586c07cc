"""The fast way in: a call's JSON text read straight into the function's positional arguments.

For a tool whose input schema is plain (every argument one of the shapes below, no nested
objects with named properties, no ``$ref``, no combinators), msgspec can decode the text into a
Struct and check it in C, in one pass, faster than decoding to a dict alone. The reader built
here does that, then applies the tool's converters and the function's defaults.

It rests on two promises, which `tests/schema/test_reader.py` checks against the compiled validator
(property tests, and the JSON Schema Test Suite): the typed decoder never accepts text the
schema refuses, and what it accepts decodes to the same values, class and all, as untyped
decoding does. It may refuse text the schema accepts (``1.0`` for an integer, an integer
beyond 64 bits for a bounded parameter): the reader then answers None and the call takes the
general way (`Tool.bind`), which gives every schema error and every accepted edge case exactly
as before. Two checks run in the reader itself, with the general way's own code and wording: a
repeated key (msgspec keeps the last value; the colon count finds it), and the tool's
converters; a value that cannot become its declared type sends the call the general way too,
which lists it beside every other failing argument.

Plain shapes, per ``type`` (or list of types): ``string`` with minLength, maxLength, pattern;
``integer`` with minimum, maximum, exclusiveMinimum, exclusiveMaximum, an integer multipleOf;
``number`` with the four bounds; ``boolean``; ``null``; ``array`` with items (a plain shape),
minItems, maxItems; ``object`` with additionalProperties (a plain shape), minProperties,
maxProperties; ``enum`` or ``const`` of strings, integers and null; and the annotations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, Union

import msgspec

from tinytools._schema.strict_json import SHORT_ENOUGH, could_nest_too_deep, refuse_repeated_keys

if TYPE_CHECKING:
    from tinytools._results import ToolCall

__all__ = ["Direct", "Reader", "defaulted", "direct", "positional_reader", "refuse_repeated", "typed_decoder"]

Reader = Callable[["ToolCall"], "tuple[Any, ...] | list[Any] | None"]
"""Reads a call into positional arguments, or answers None: take the general way."""


class Direct(NamedTuple):
    """The parts of a reader that converts no argument, for the sync express path to write it out.

    Such a reader's whole work is: text (``bytes`` or ``str``) of a call with no ``invalid`` that
    cannot nest too deeply (`could_nest_too_deep`) is decoded, ``astuple(decode(text))``; a
    ``ValueError`` or ``RecursionError`` leaves the call to the general way; arguments left out
    (``left_out``; None when none may be) are counted, and when the text's colons do not number
    the arguments (``names``) less those, `refuse_repeated` looks for a repeated key; left-out
    arguments get their defaults (`defaulted`). Written out in the caller's frame, a call costs a
    frame less.
    """

    decode: Callable[[str | bytes], Any]
    names: tuple[str, ...]
    left_out: Callable[[tuple[Any, ...]], bool] | None
    defaults: tuple[Any, ...]


def refuse_repeated(text: str | bytes, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """`refuse_repeated_keys` for a reader's decoded ``values`` of arguments ``names`` (those left out skipped).

    Raises:
        ArgumentsError: The text names a key twice.
    """
    refuse_repeated_keys(text, {n: v for n, v in zip(names, values, strict=True) if v is not _UNSET})


def defaulted(values: tuple[Any, ...], defaults: tuple[Any, ...]) -> list[Any]:
    """A reader's decoded ``values``, each one left out (`msgspec.UNSET`) given the function's own default."""
    return [default if value is _UNSET else value for value, default in zip(values, defaults, strict=True)]


def direct(reader: Reader | None) -> Direct | None:
    """The parts of ``reader`` when it converts no argument (see `Direct`), else None."""
    return getattr(reader, "direct", None)


_UNSET = msgspec.UNSET
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "deprecated", "$comment"})
_ROOT = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern"}),
    "integer": _BOUNDS | {"multipleOf"},
    "number": _BOUNDS,
    "boolean": frozenset(),
    "null": frozenset(),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"additionalProperties", "minProperties", "maxProperties"}),
}
_DEPTH = 16


class _NotPlain(Exception):
    pass


def typed_decoder(schema: dict[str, Any], names: list[str]) -> msgspec.json.Decoder[Any] | None:
    """A decoder of the arguments object into a Struct with fields ``names``, or None.

    None when the schema is not plain (see the module's docstring) or its properties are not
    exactly ``names`` in that order. An omitted optional argument decodes as ``msgspec.UNSET``.
    """
    typed = _typed(schema, names)
    return None if typed is None else typed[0]


def _typed(schema: dict[str, Any], names: list[str]) -> tuple[msgspec.json.Decoder[Any], list[set[type]]] | None:
    """`typed_decoder`, and the classes each argument's decoded value may have (``object``: any)."""
    properties = schema.get("properties", {})
    if (
        schema.keys() - _ROOT
        or schema.get("additionalProperties") is not False
        or not isinstance(properties, dict)
        or list(properties) != names
    ):
        return None
    required = set(schema.get("required", ()))
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    classes = []
    try:
        for name, node in properties.items():
            annotation = _annotation(node, 0)
            classes.append(_classes(node))
            if name in required:
                fields.append((name, annotation))
            else:
                fields.append((name, Union[annotation, msgspec.UnsetType], _UNSET))  # noqa: UP007 - a runtime type
        struct = msgspec.defstruct("Arguments", fields, kw_only=True, forbid_unknown_fields=True)
        if struct.__struct_fields__ != tuple(names):
            return None
        return msgspec.json.Decoder(struct), classes
    except Exception:  # not plain, or beyond what msgspec can hold (an enum member past 64 bits): the general way
        return None


def _annotation(node: Any, depth: int) -> Any:
    if node is True:
        return Any
    if node.__class__ is not dict or depth > _DEPTH:
        raise _NotPlain
    keys = node.keys() - _ANNOTATIONS
    if not keys:
        return Any
    if "enum" in keys or "const" in keys:
        return _choice(node, keys)
    types = node.get("type")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else None
    if not isinstance(names, list) or not names or len(set(names)) != len(names) or not set(names) <= _KEYWORDS.keys():
        raise _NotPlain
    if "integer" in names and "number" in names:
        names.remove("integer")
    allowed = frozenset({"type"}).union(*(_KEYWORDS[name] for name in names))
    if keys - allowed:
        raise _NotPlain
    branches = [branch for name in names for branch in _branches(name, node, depth)]
    return Union[tuple(branches)] if len(branches) > 1 else branches[0]  # noqa: UP007 - built at run time


def _choice(node: dict[str, Any], keys: set[str]) -> Any:
    if keys - {"enum", "const", "type"} or {"enum", "const"} <= keys:
        raise _NotPlain
    members = node["enum"] if "enum" in node else [node["const"]]
    if not isinstance(members, list) or not members:
        raise _NotPlain
    kinds = {"string" if m.__class__ is str else "integer" if m.__class__ is int else "null" for m in members}
    if not all(m.__class__ in (str, int) or m is None for m in members):
        raise _NotPlain
    if "type" in node:
        types = node["type"]
        allowed = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else set()
        if "number" in allowed:
            allowed.add("integer")
        if not kinds <= allowed:
            raise _NotPlain
    values = tuple(dict.fromkeys(m for m in members if m is not None))
    if not values:
        return None
    literal = Literal[values]  # type: ignore[valid-type]
    return literal | None if None in members else literal


def _branches(name: str, node: dict[str, Any], depth: int) -> list[Any]:
    if name == "string":
        pattern = node.get("pattern")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise _NotPlain
            from tinytools._schema.patterns import translate_pattern  # patterns load with the first one read

            pattern = translate_pattern(pattern)  # what the validator compiles: `$` already reads as \Z
        meta = msgspec.Meta(min_length=_count(node, "minLength"), max_length=_count(node, "maxLength"), pattern=pattern)
        return [Annotated[str, meta]]
    if name == "integer" or name == "number":
        low, high = _integer_bounds(node)
        step = node.get("multipleOf")
        if step is not None and (name == "number" or step.__class__ is not int or step <= 0):
            raise _NotPlain
        whole = Annotated[int, msgspec.Meta(ge=low, le=high, multiple_of=step)]
        if name == "integer":
            return [whole]
        fraction = Annotated[float, msgspec.Meta(**_float_bounds(node))]
        return [whole, fraction]
    if name == "boolean":
        return [bool]
    if name == "null":
        return [None]
    if name == "array":
        items = _annotation(node.get("items", True), depth + 1)
        meta = msgspec.Meta(min_length=_count(node, "minItems"), max_length=_count(node, "maxItems"))
        return [Annotated[list[items], meta]]  # type: ignore[valid-type]
    values = _annotation(node.get("additionalProperties", True), depth + 1)
    meta = msgspec.Meta(min_length=_count(node, "minProperties"), max_length=_count(node, "maxProperties"))
    return [Annotated[dict[str, values], meta]]  # type: ignore[valid-type]


def _count(node: dict[str, Any], key: str) -> int | None:
    value = node.get(key)
    if value is None:
        return None
    if value.__class__ is float and value.is_integer():
        value = int(value)
    if value.__class__ is not int or value < 0:
        raise _NotPlain
    return value


def _number(node: dict[str, Any], key: str) -> int | float | None:
    value = node.get(key)
    if value is not None and (value.__class__ not in (int, float) or not math.isfinite(value)):
        raise _NotPlain
    return value


def _integer_bounds(node: dict[str, Any]) -> tuple[int | None, int | None]:
    """The least and greatest integer the four bounds allow (None: unbounded)."""
    lows, highs = [], []
    if (value := _number(node, "minimum")) is not None:
        lows.append(math.ceil(value))
    if (value := _number(node, "exclusiveMinimum")) is not None:
        lows.append(math.floor(value) + 1)
    if (value := _number(node, "maximum")) is not None:
        highs.append(math.floor(value))
    if (value := _number(node, "exclusiveMaximum")) is not None:
        highs.append(math.ceil(value) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _float_bounds(node: dict[str, Any]) -> dict[str, float]:
    """The bounds as floats, when each is exactly a float (a float compares with it exactly)."""
    bounds = {}
    for key, meta in (("minimum", "ge"), ("exclusiveMinimum", "gt"), ("maximum", "le"), ("exclusiveMaximum", "lt")):
        value = _number(node, key)
        if value is None:
            continue
        if value.__class__ is int and float(value) != value:
            raise _NotPlain
        bounds[meta] = float(value)
    if "ge" in bounds and "gt" in bounds:  # Meta takes one lower bound: keep the tighter
        bounds.pop("ge" if bounds["gt"] >= bounds["ge"] else "gt")
    if "le" in bounds and "lt" in bounds:
        bounds.pop("le" if bounds["lt"] <= bounds["le"] else "lt")
    return bounds


def positional_reader(
    schema: dict[str, Any],
    names: Sequence[str],
    defaults: Sequence[Any],
    converters: Sequence[tuple[str, Callable[[Any], Any], frozenset[type]]],
) -> Reader | None:
    """The fast reader of calls to a function taking ``names`` by position, or None.

    Args:
        schema: The canonical input schema; None comes back unless it is plain.
        names: The function's parameters, in order: exactly the schema's properties.
        defaults: Each parameter's own default object, passed when a call leaves it out.
        converters: (name, converter, classes it keeps as they are) of the arguments to convert.
    """
    typed = _typed(schema, list(names))
    if typed is None:
        return None
    decoder, classes = typed
    index = {name: i for i, name in enumerate(names)}
    converting = tuple(
        (index[name], convert, keep)
        for name, convert, keep in converters
        if not classes[index[name]] <= keep  # a converter that would never change a value is left out
    )
    required = set(schema.get("required", ()))
    left_out = _left_out_test(tuple(i for i, name in enumerate(names) if name not in required))
    return _reader(decoder, tuple(defaults), converting, left_out)


@lru_cache(maxsize=1024)
def _left_out_test(positions: tuple[int, ...]) -> Callable[[tuple[Any, ...]], bool] | None:
    """A test of whether decoded values hold `msgspec.UNSET` at any of ``positions``; None for none.

    One expression made once per set of positions (the last 1,024 kept: tools share them): ``values.count(UNSET)``
    compares every value with ``==``, about 13 ns each, where this asks ``is`` of the optional ones
    alone, about 35 ns for three. Only when one was left out are they counted.
    """
    if not positions:
        return None
    test = " or ".join(f"values[{i}] is unset" for i in positions)
    return eval(f"lambda values: {test}", {"unset": _UNSET})  # type: ignore[no-any-return]


_TYPE_CLASSES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def _classes(node: Any) -> set[type]:
    """The classes a value read for a plain ``node`` may have (``object`` when anything goes)."""
    if node is True or not node.keys() - _ANNOTATIONS:
        return {object}
    if "enum" in node or "const" in node:
        return {member.__class__ for member in (node["enum"] if "enum" in node else [node["const"]])}
    types = node["type"]
    return {kind for name in ([types] if isinstance(types, str) else types) for kind in _TYPE_CLASSES[name]}


def _reader(
    decoder: msgspec.json.Decoder[Any],
    defaults: tuple[Any, ...],
    converters: tuple[tuple[int, Callable[[Any], Any], frozenset[type]], ...],
    left_out: Callable[[tuple[Any, ...]], bool] | None,
) -> Reader:
    """The reader (see `positional_reader`); ``left_out`` tells whether any argument was (None: none may be)."""
    decode = decoder.decode
    astuple = msgspec.structs.astuple
    names = decoder.type.__struct_fields__
    size = len(names)
    unset = _UNSET

    def read(call: ToolCall) -> tuple[Any, ...] | list[Any] | None:
        text = call.arguments
        kind = text.__class__
        if kind is bytes:
            colon: str | bytes = b":"
        elif kind is str:
            colon = ":"
        else:
            return None
        if call.invalid is not None or (len(text) > SHORT_ENOUGH and could_nest_too_deep(text)):
            return None  # the general way decides and explains
        try:
            values: Any = astuple(decode(text))
        except (ValueError, RecursionError):  # refused, or unsure: the general way decides and explains
            return None
        missing = values.count(unset) if left_out is not None and left_out(values) else 0
        if text.count(colon) != size - missing:  # nested objects, colons in strings, or a repeated key
            refuse_repeated(text, names, values)
        if converters:
            values = list(values)
            for i, convert, keep in converters:
                value = values[i]
                if value.__class__ not in keep and value is not _UNSET:
                    try:
                        values[i] = convert(value)
                    except Exception:  # cannot become its type: the general way lists it with any other failure
                        return None
        if missing:  # an omitted argument gets the function's own default object, as if left out
            values = defaulted(values, defaults)
        return values  # type: ignore[no-any-return]

    if not converters:  # what it does is plain enough to be written out where it is called (`Direct`)
        read.direct = Direct(decode, names, left_out, defaults)  # type: ignore[attr-defined]
    return read
