"""What ``Annotated`` metadata adds to a parameter's schema: `Param`, annotated-types, descriptions.

`split_annotated` takes a hint apart into its base type and its metadata; `constraints` reads
the metadata this library understands (a `Param`, annotated-types' ``Gt``/``Len``/..., a plain
string as the description) into JSON Schema keywords and leaves other libraries' metadata alone.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import typing_extensions

__all__ = ["Param", "constraints", "split_annotated"]

_ANNOTATED = (typing.Annotated, typing_extensions.Annotated)


@dataclasses.dataclass(frozen=True)
class Param:
    """Constraints and description for a parameter, used inside ``Annotated``.

    ``Annotated[int, Param(ge=1, le=100, description="Page size")]``.
    """

    description: str | None = None
    """The property's description; wins over the docstring."""
    ge: float | None = None
    """Inclusive minimum (``minimum``)."""
    gt: float | None = None
    """Exclusive minimum (``exclusiveMinimum``)."""
    le: float | None = None
    """Inclusive maximum (``maximum``)."""
    lt: float | None = None
    """Exclusive maximum (``exclusiveMaximum``)."""
    multiple_of: float | None = None
    """The value must be a multiple of this (``multipleOf``)."""
    min_length: int | None = None
    """Shortest string (or array) length."""
    max_length: int | None = None
    """Longest string (or array) length."""
    pattern: str | None = None
    """Regular expression a string must match somewhere (``pattern``)."""
    min_items: int | None = None
    """Fewest array items."""
    max_items: int | None = None
    """Most array items."""
    examples: list[Any] | None = None
    """Example values shown to the model."""


_NUMERIC = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
_ANNOTATED_TYPES = {
    "Gt": ("gt",),
    "Ge": ("ge",),
    "Lt": ("lt",),
    "Le": ("le",),
    "MultipleOf": ("multiple_of",),
    "MinLen": ("min_length",),
    "MaxLen": ("max_length",),
    "Len": ("min_length", "max_length"),
    "Interval": ("gt", "ge", "lt", "le"),
}


def split_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """Return the base type of ``hint`` and its ``Annotated`` metadata (flattened)."""
    metadata: tuple[Any, ...] = ()
    while typing_extensions.get_origin(hint) in _ANNOTATED:
        metadata = tuple(hint.__metadata__) + metadata
        hint = hint.__origin__
    return hint, metadata


def constraints(metadata: tuple[Any, ...], is_array: bool) -> dict[str, Any]:
    """Collect schema keywords from ``Annotated`` metadata; foreign metadata is ignored."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, str):
            found["description"] = item
        elif isinstance(item, Param):
            found.update({k: v for k, v in vars(item).items() if v is not None})
        elif type(item).__module__ == "annotated_types" and type(item).__name__ in _ANNOTATED_TYPES:
            for attribute in _ANNOTATED_TYPES[type(item).__name__]:
                value = getattr(item, attribute, None)
                if value is not None:
                    found[attribute] = value
    keywords: dict[str, Any] = {}
    for name, value in found.items():
        if name in _NUMERIC:
            keywords[_NUMERIC[name]] = value
        elif name == "multiple_of":
            keywords["multipleOf"] = value
        elif name in ("min_length", "max_length"):
            keyword = ("minItems" if is_array else "minLength") if name == "min_length" else None
            keywords[keyword or ("maxItems" if is_array else "maxLength")] = value
        elif name in ("min_items", "max_items"):
            keywords["minItems" if name == "min_items" else "maxItems"] = value
        else:
            keywords[name] = value
    return keywords
