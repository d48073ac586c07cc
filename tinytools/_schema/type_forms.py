"""How the typing forms a schema is built from are recognised, and what their values can be.

The tables name the forms (unions, ``Literal``, wrappers like ``Required``, sequences, mappings,
``Self``) and the classes written as JSON strings (`STRING_TYPES`: read by the schema builder and
the converters for arguments, and by the output encoder for results); the functions say what a
type's values are: whether they hash (a set needs that),
which JSON values a ``Literal`` member takes exactly, which keys a TypedDict requires.
"""

from __future__ import annotations

import collections.abc as cabc
import datetime
import decimal
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
import typing_extensions

from tinytools._schema import converters as _convert
from tinytools._schema.annotations import split_annotated
from tinytools._schema.converters import Converter

__all__ = [
    "LATER_STRING_TYPES",
    "LITERALS",
    "MAPPINGS",
    "SCALAR_VALUES",
    "SELF_TYPES",
    "SEQUENCES",
    "STRING_TYPES",
    "UNIONS",
    "WRAPPERS",
    "StringType",
    "exact_values",
    "is_dataclass",
    "required_keys",
    "string_form",
    "unhashable",
]

UNIONS: tuple[Any, ...] = (typing.Union, types.UnionType)
LITERALS = (typing.Literal, typing_extensions.Literal)
WRAPPERS = (
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
    typing.Final,
    typing.ClassVar,
)

SEQUENCES: dict[Any, Callable[[Any], Any]] = {
    list: list,
    cabc.Sequence: list,
    cabc.MutableSequence: list,
    cabc.Iterable: list,
    cabc.Collection: list,
    set: set,
    cabc.Set: frozenset,
    cabc.MutableSet: set,
    frozenset: frozenset,
}
MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)
SELF_TYPES = tuple({typing_extensions.Self, getattr(typing, "Self", typing_extensions.Self)})
SCALAR_VALUES = frozenset({str, int, float, bool})


class StringType(NamedTuple):
    """A class whose values travel as JSON strings: how the schema says it, reads it and writes it."""

    format: str
    """The schema's ``format``."""
    expected: str
    """What a wrong value is told it should be."""
    parse: Callable[[str], Any]
    """Text to a value; raises ``ValueError``, ``TypeError`` or ``msgspec.ValidationError`` for bad text."""
    write: Callable[[Any], str] | None = None
    """A value to its text; None where msgspec writes the class itself."""


def _by_msgspec(target: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return msgspec.convert(text, target)

    return parse


def _from_text(cls: type) -> Callable[[str], Any]:
    """Read by the class from its text, and from nothing else."""

    def parse(text: str) -> Any:
        if not isinstance(text, str):  # the address classes read integers and bytes too
            raise TypeError("an address is written as a string")
        return cls(text)

    return parse


STRING_TYPES: dict[type, StringType] = {
    datetime.datetime: StringType("date-time", "an RFC 3339 date-time string", _by_msgspec(datetime.datetime)),
    datetime.date: StringType("date", "an ISO 8601 date string (YYYY-MM-DD)", _by_msgspec(datetime.date)),
    datetime.time: StringType("time", "an ISO 8601 time string with seconds (HH:MM:SS)", _by_msgspec(datetime.time)),
    datetime.timedelta: StringType("duration", "an ISO 8601 duration string", _by_msgspec(datetime.timedelta)),
    uuid.UUID: StringType("uuid", "a UUID string", _by_msgspec(uuid.UUID)),
    decimal.Decimal: StringType("decimal", "a decimal number as a string", _by_msgspec(decimal.Decimal)),
}
"""Classes written as JSON strings, for arguments and outputs alike: a new one is a line here (or in
`LATER_STRING_TYPES`), and read through `string_form`."""
LATER_STRING_TYPES: dict[tuple[str, str], tuple[str, str]] = {
    ("ipaddress", "IPv4Address"): ("ipv4", "an IPv4 address"),
    ("ipaddress", "IPv6Address"): ("ipv6", "an IPv6 address"),
}
"""Classes written as JSON strings whose module a program may never load (module, name) -> (format,
expected): each goes into `STRING_TYPES` when first asked for, read by the class from its text and
written as ``str(value)``."""


def string_form(cls: Any) -> StringType | None:
    """How values of ``cls`` travel as JSON strings, or None when they do not."""
    form = STRING_TYPES.get(cls)
    if form is None and isinstance(cls, type) and cls.__module__.__class__ is str:  # a class may set it to anything
        row = LATER_STRING_TYPES.get((cls.__module__, cls.__qualname__))
        if row is not None:
            form = STRING_TYPES[cls] = StringType(row[0], row[1], _from_text(cls), str)
    return form


def is_dataclass(cls: type) -> bool:
    """Whether ``cls`` is a stdlib dataclass: asked without importing `dataclasses` (which made it, if it is)."""
    return hasattr(cls, "__dataclass_fields__")


def unhashable(hint: Any, seen: frozenset[Any] = frozenset()) -> str | None:
    """What in ``hint`` would make a set of its values fail (a list, a dict, a mutable class), or None.

    A class whose instances hash (a NamedTuple, a frozen dataclass, Struct or pydantic model) is
    looked into: its hash is its fields', so one list among them fails it too.
    """
    hint = split_annotated(hint)[0]
    origin = typing_extensions.get_origin(hint)
    args = typing_extensions.get_args(hint)
    if origin in WRAPPERS or origin in UNIONS or origin is tuple:
        return _first([arg for arg in args if arg is not Ellipsis], seen)
    if origin in LITERALS:
        return None
    kind = origin or hint
    if kind in MAPPINGS or typing_extensions.is_typeddict(kind):
        return "objects"
    if kind in SEQUENCES and SEQUENCES[kind] is not frozenset:
        return "arrays"
    if isinstance(kind, type) and (kind.__hash__ is None or _mutable_struct(kind)):
        return f"{kind.__name__} values"
    if isinstance(kind, type) and kind not in seen and kind.__module__ != "builtins":
        found = _first(_field_hints(kind), seen | {kind})
        return None if found is None else f"{kind.__name__} values holding {found}"
    return None


def _first(hints: list[Any], seen: frozenset[Any]) -> str | None:
    """The first reason one of ``hints`` is unhashable, ``seen`` the classes already looked into."""
    return next((reason for reason in (unhashable(item, seen) for item in hints) if reason is not None), None)


def _field_hints(cls: type) -> list[Any]:
    """The field types a class's hash is made of; none for a class whose hints cannot be read."""
    try:
        hints = typing_extensions.get_type_hints(cls)
    except Exception:  # a forward reference the builder reports itself, with the fix
        return []
    fields = getattr(cls, "_fields", None) or getattr(cls, "__dataclass_fields__", None)
    fields = fields or getattr(cls, "__struct_fields__", None) or getattr(cls, "model_fields", None)
    return [hints[name] for name in fields or () if name in hints]


def _mutable_struct(cls: type) -> bool:
    """Whether ``cls`` is a msgspec Struct that is not frozen (its instances do not hash)."""
    return issubclass(cls, msgspec.Struct) and not cls.__struct_config__.frozen


def exact_values(schema: dict[str, Any], convert: Converter | None) -> frozenset[tuple[type, Any]]:
    """The (class, value) pairs a ``Literal`` or enum member takes exactly, as they are.

    Empty when the member turns its values into something else (an Enum's members): a value it
    takes is then not exactly its own.
    """
    values = schema.get("enum")
    if not isinstance(values, list):
        return frozenset()
    keep = _convert.unchanged(convert) if convert is not None else None
    return frozenset(
        (value.__class__, value)
        for value in values
        if value.__class__ in SCALAR_VALUES and (keep is None or value.__class__ in keep)
    )


def required_keys(cls: type, hints: dict[str, Any]) -> set[str]:
    """A TypedDict's required keys, also where future annotations hid the wrappers from it."""
    required = set(getattr(cls, "__required_keys__", hints))
    for key, hint in hints.items():
        origin = typing_extensions.get_origin(split_annotated(hint)[0])
        if origin is typing_extensions.Required:
            required.add(key)
        elif origin is typing_extensions.NotRequired:
            required.discard(key)
    return required
