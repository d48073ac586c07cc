"""What ``Annotated`` metadata adds to a parameter's schema: `Param`, annotated-types, descriptions.

`split_annotated` takes a hint apart into its base type and its metadata; `constraints` reads
the metadata this library understands (a `Param`, a pydantic ``Field(...)``, annotated-types'
``Gt``/``Len``/..., a plain string as the description) into JSON Schema keywords and leaves other
libraries' metadata alone. `pydantic_field` and `field_default` read what a ``Field`` says about
the parameter itself: its default (or factory) and its alias.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import typing_extensions

from tinytools._public import publish

__all__ = ["Param", "constraints", "field_alias", "field_default", "pydantic_field", "split_annotated"]

_ANNOTATED = (typing.Annotated, typing_extensions.Annotated)


class Param(msgspec.Struct, frozen=True):
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


def pydantic_field(item: Any) -> bool:
    """Whether ``item`` is a pydantic ``FieldInfo`` (what ``Field(...)`` returns), without importing pydantic."""
    cls = type(item)
    return cls.__name__ == "FieldInfo" and cls.__module__.startswith("pydantic")


def field_default(field: Any) -> tuple[Any, Callable[[], Any] | None]:
    """A ``Field``'s default (``inspect.Parameter.empty`` when required) and its ``default_factory``."""
    factory = field.default_factory
    if factory is not None:
        return inspect.Parameter.empty, factory
    default = field.default
    if default is Ellipsis or type(default).__name__ == "PydanticUndefinedType":
        return inspect.Parameter.empty, None
    return default, None


def field_alias(field: Any) -> str | None:
    """The name a ``Field`` gives the value on the wire (``validation_alias``, else ``alias``), or None.

    Raises:
        ValueError: The alias is not one plain name: ``AliasChoices``/``AliasPath`` (a model is
            shown one name per argument), or an empty string.
    """
    alias = field.validation_alias if field.validation_alias is not None else field.alias
    if alias is None:
        return None
    if not isinstance(alias, str):
        raise ValueError(f"{type(alias).__name__} is not one name the model can be shown; use alias='...'")
    if not alias:
        raise ValueError("an empty alias is not a name the model can send")
    return alias


def constraints(metadata: tuple[Any, ...], is_array: bool) -> dict[str, Any]:
    """Collect schema keywords from ``Annotated`` metadata; foreign metadata is ignored."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, str):
            found["description"] = item
        elif isinstance(item, Param):
            found.update({k: v for k, v in msgspec.structs.asdict(item).items() if v is not None})
        elif pydantic_field(item):
            found.update(_field_keywords(item))
        else:
            found.update(_annotated_type(item))
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


def _annotated_type(item: Any) -> dict[str, Any]:
    """The `Param` fields an annotated-types constraint (``Ge(1)``, ``Len(2, 5)``...) stands for."""
    found = {}
    if type(item).__module__ == "annotated_types" and type(item).__name__ in _ANNOTATED_TYPES:
        for attribute in _ANNOTATED_TYPES[type(item).__name__]:
            value = getattr(item, attribute, None)
            if value is not None:
                found[attribute] = value
    elif type(item).__name__ == "_PydanticGeneralMetadata":  # what Field(pattern=...) keeps
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            found["pattern"] = pattern
    return found


def _field_keywords(field: Any) -> dict[str, Any]:
    """The `Param` fields a pydantic ``Field(...)`` sets: its description, examples and constraints."""
    found: dict[str, Any] = {}
    for item in field.metadata:
        found.update(_annotated_type(item))
    if field.description is not None:
        found["description"] = field.description
    if field.examples is not None:
        found["examples"] = list(field.examples)
    return found


publish("tinytools", Param)
