"""The fields of stdlib dataclasses and TypedDicts, as the rows `SchemaBuilder` renders.

A pydantic ``Field(...)`` describes such a field the way it describes a parameter, inside
``Annotated`` or as a dataclass field's default (``y: int = Field(default=5, le=10)``). Its
constraints and description reach the schema through the hint (``Annotated[hint, field]``, read
by `tinytools._schema.annotations.constraints`), its alias names the JSON key, and the default it
holds is the field's default. A stdlib dataclass keeps the ``FieldInfo`` itself as the value of a
field left out, so the converter fills such fields in before it builds the instance. Two fields
the model would send under one key (an alias equal to another field's name) are refused: one of
them would vanish from the schema.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import msgspec

from tinytools._errors import ToolDefinitionError
from tinytools._schema.annotations import field_alias, field_default, pydantic_field, split_annotated
from tinytools._schema.type_forms import required_keys

__all__ = ["NO_DEFAULT", "Row", "dataclass_rows", "filled", "refuse_shared_keys", "typeddict_rows"]

Row = tuple[str, str, Any, bool, Any]
"""One field: its JSON key, its Python name, its hint, whether it is required, its default."""
Fills = dict[str, tuple[Any, Callable[[], Any] | None]]
"""Python name -> (default, factory) of each field whose default a ``Field(...)`` holds."""
NO_DEFAULT = msgspec.NODEFAULT
"""A row's default when its field has none (the marker a Struct's fields use too)."""


def typeddict_rows(cls: type, hints: dict[str, Any], tool: str, *, aliases: bool) -> list[Row]:
    """The rows of a TypedDict (with ``aliases``, a key's ``Field`` alias is its JSON key)."""
    required = required_keys(cls, hints)
    rows = [
        (_key(key, hint, tool) if aliases else key, key, hint, key in required, NO_DEFAULT)
        for key, hint in hints.items()
    ]
    refuse_shared_keys(cls, [(row[0], row[1]) for row in rows], tool)
    return rows


def dataclass_rows(cls: Any, hints: dict[str, Any], tool: str, *, aliases: bool) -> tuple[list[Row], Fills]:
    """The rows of a stdlib dataclass's ``__init__`` fields, and the defaults the converter fills in.

    With ``aliases`` (an argument, not a result, which is encoded by field name) a field's
    ``Field`` alias is its JSON key.
    """
    import dataclasses  # loaded already: it made ``cls``

    rows: list[Row] = []
    fills: Fills = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        hint, default = hints[field.name], field.default
        required = default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        declared = default if pydantic_field(default) else None
        if declared is not None:
            hint = Annotated[hint, declared]
            value, factory = field_default(declared)
            required = value is inspect.Parameter.empty and factory is None
            default = NO_DEFAULT if value is inspect.Parameter.empty else value
            if not required:
                fills[field.name] = (value, factory)
        elif default is dataclasses.MISSING:
            default = NO_DEFAULT
        key = _key(field.name, hint, tool) if aliases else field.name
        rows.append((key, field.name, hint, required, default))
    refuse_shared_keys(cls, [(row[0], row[1]) for row in rows], tool)
    return rows, fills


def refuse_shared_keys(cls: Any, keys: Iterable[tuple[str, str]], tool: str) -> None:
    """Refuse two fields of ``cls`` sent under one JSON key: given (key, field name) pairs.

    Raises:
        ToolDefinitionError: An alias equals another field's name (or alias); the schema would
            keep one of the two fields and drop the other without a word.
    """
    seen: dict[str, str] = {}
    for key, name in keys:
        if key in seen:
            first = seen[key]
            owner = getattr(cls, "__name__", repr(cls))
            raise ToolDefinitionError(
                f"{owner} fields {first!r} and {name!r} are both sent as {key!r} (an alias equal to another "
                "field's name or alias), so one would vanish from the schema; give one of them another alias",
                tool=tool,
            )
        seen[key] = name


def filled(cls: Callable[..., Any], fills: Fills) -> Callable[..., Any]:
    """``cls``, or a builder that first gives each field left out the default its ``Field`` holds."""
    if not fills:
        return cls

    def build(**values: Any) -> Any:
        for name, (default, factory) in fills.items():
            if name not in values:
                values[name] = default if factory is None else factory()
        return cls(**values)

    build.__name__ = getattr(cls, "__name__", "the value")
    return build


def _key(name: str, hint: Any, tool: str) -> str:
    """The JSON key of a field: the alias of its last ``Field`` that has one, else its name."""
    fields = [item for item in split_annotated(hint)[1] if pydantic_field(item)]
    for field in reversed(fields):
        try:
            alias = field_alias(field)
        except ValueError as exc:
            raise ToolDefinitionError(f"field {name!r}: {exc}", tool=tool) from None
        if alias is not None:
            return alias
    return name
