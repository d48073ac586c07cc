"""pydantic types as tinytools schemas: pydantic's JSON Schema, adopted into a tool's ``$defs``.

A model's (or a pydantic dataclass's) own JSON Schema is the source of its shape, descriptions
and constraints, and pydantic itself converts a validated value into it. Adopting the schema
means five things: its definitions are renamed into the tool's ``$defs`` (a recursive model's
schema is a ``$ref`` to itself), every object with ``properties`` is closed
(``additionalProperties: false``, as every tinytools object is, also for ``extra="allow"``), the
default of a set field is written in one order (pydantic writes the order it iterates in, which
the hash seed changes), the titles pydantic derives from field names are dropped, and so is
OpenAPI's ``discriminator``.
That one is an annotation: the branches beside it differ by a ``const`` tag, so no value fits
two of them and their ``oneOf`` is written ``anyOf``, which means the same and which strict mode
takes; a value without the tag, which a branch giving the tag a default would let through, is
refused by pydantic when it converts the value.
pydantic is never imported here: a caller with a pydantic class has pydantic loaded already.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tinytools._errors import ToolDefinitionError, shorten
from tinytools._schema.converters import ConversionError, Converter, refused
from tinytools._schema.fields import refuse_shared_keys
from tinytools._schema.fragments import in_json_order

__all__ = ["adopt", "pydantic_object", "via_model"]

_PREFIX = "#/$defs/"
_TEMPLATE = _PREFIX + "{model}"
_DROPPED = frozenset({"title", "discriminator"})  # annotations InputSchema and strict mode do not take
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMAS = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def pydantic_object(
    cls: type, own: str, defs: dict[str, Any], *, mode: str, tool: str
) -> tuple[dict[str, Any], Converter] | None:
    """The adopted schema and the converter of a pydantic model or dataclass; None for other classes.

    Args:
        cls: The class.
        own: The name the class has in ``defs``.
        defs: The tool's definitions (see `adopt`).
        mode: ``"validation"`` for an argument, ``"serialization"`` for a return value.
        tool: The tool's name, for errors.

    Raises:
        ToolDefinitionError: pydantic has no JSON Schema for the class (a field of a type JSON
            cannot carry, such as a callable), or two of its fields have one JSON key.
    """
    pydantic: Any = sys.modules.get("pydantic")
    if pydantic is None:
        return None
    made: Callable[[], dict[str, Any]]
    if issubclass(cls, pydantic.BaseModel):
        model: Any = cls
        made, validate = lambda: model.model_json_schema(ref_template=_TEMPLATE, mode=mode), model.model_validate
        refuse_shared_keys(cls, _keys(model.model_fields, mode, by_alias=True), tool)
    else:
        dataclasses = sys.modules.get("pydantic.dataclasses")
        if dataclasses is None or not dataclasses.is_pydantic_dataclass(cls):
            return None
        adapter = pydantic.TypeAdapter(cls)  # once per tool: its validator serves every call
        by_alias = mode == "validation"  # a result is encoded as a dataclass: by field name
        refuse_shared_keys(cls, _keys(getattr(cls, "__pydantic_fields__", {}), mode, by_alias=by_alias), tool)
        validate = adapter.validate_python
        made = lambda: adapter.json_schema(ref_template=_TEMPLATE, mode=mode, by_alias=by_alias)  # noqa: E731
    try:
        schema = made()
    except pydantic.PydanticUserError as exc:
        reason = shorten(str(exc).split("\n", 1)[0])
        raise ToolDefinitionError(f"pydantic has no JSON Schema for {cls.__name__}: {reason}", tool=tool) from None
    return adopt(schema, own, defs), via_model(validate, cls.__name__, pydantic.ValidationError)


def _keys(fields: dict[str, Any], mode: str, *, by_alias: bool) -> list[tuple[str, str]]:
    """(JSON key, field name) of each pydantic field, as pydantic's schema of ``mode`` names it."""
    keys = []
    for name, info in fields.items():
        chosen = info.validation_alias if mode == "validation" else info.serialization_alias
        if by_alias and chosen is not None and not isinstance(chosen, str):  # AliasChoices, AliasPath
            keys += [(key, name) for key in _choices(chosen)]  # each key the field may be sent under
            continue
        alias = chosen if isinstance(chosen, str) else info.alias
        keys.append((alias if by_alias and isinstance(alias, str) and alias else name, name))
    return keys


def _choices(alias: Any) -> list[str]:
    """The top-level keys an ``AliasChoices`` (or ``AliasPath``) lets a field be sent under."""
    options = getattr(alias, "choices", None)
    found = []
    for option in options if isinstance(options, list) else [alias]:
        path = getattr(option, "path", None)
        first = path[0] if isinstance(path, list) and path else option
        if isinstance(first, str):
            found.append(first)
    return found


def adopt(schema: dict[str, Any], own: str, defs: dict[str, Any]) -> dict[str, Any]:
    """The closed form of ``schema``, the JSON Schema pydantic made, its definitions added to ``defs``.

    Args:
        schema: What pydantic made (its references written ``#/$defs/<name>``); it is not modified.
        own: The name the schema's class has in ``defs`` (references to it point there).
        defs: The tool's definitions; the schema's nested definitions join them, renamed where
            another definition already has the name.
    """
    schema = dict(schema)
    theirs: dict[str, Any] = schema.pop("$defs", {})
    top = schema.get("$ref")
    names: dict[str, str] = {}
    if isinstance(top, str) and top.startswith(_PREFIX) and top[len(_PREFIX) :] in theirs:
        names[top[len(_PREFIX) :]] = own  # a recursive model: its schema is a reference to itself
        schema = theirs.pop(top[len(_PREFIX) :])
    for name, definition in theirs.items():
        names.setdefault(name, _free(name, definition, defs, names))
    for name, definition in theirs.items():
        if names[name] != own and names[name] not in defs:
            defs[names[name]] = _rewritten(definition, names)
    adopted: dict[str, Any] = _rewritten(schema, names)
    return adopted


def _free(name: str, definition: dict[str, Any], defs: dict[str, Any], taken: dict[str, str]) -> str:
    """A name in ``defs`` for one of the model's definitions: its own unless another holds it."""
    wanted = name
    while wanted in defs or wanted in taken.values():
        if defs.get(wanted) == _rewritten(definition, {}):  # the same model, met before
            return wanted
        wanted += "_"
    return wanted


def _rewritten(schema: Any, names: dict[str, str]) -> Any:
    """``schema`` with its references renamed, its objects closed and pydantic's titles dropped."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword in _DROPPED:
            continue
        if keyword == "$ref" and isinstance(value, str) and value.startswith(_PREFIX):
            value = _PREFIX + names.get(value[len(_PREFIX) :], value[len(_PREFIX) :])
        elif keyword in _SCHEMA_MAPS and isinstance(value, dict):
            value = {key: _rewritten(item, names) for key, item in value.items()}
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            value = [_rewritten(item, names) for item in value]
        elif keyword in _SCHEMAS:
            value = _rewritten(value, names)
        out[keyword] = value
    if "discriminator" in schema and isinstance(out.get("oneOf"), list) and "anyOf" not in out:
        out["anyOf"] = out.pop("oneOf")  # the same here, and strict mode takes it; pydantic checks the tag again
    if isinstance(out.get("properties"), dict):
        out["additionalProperties"] = False
    if out.get("uniqueItems") is True and isinstance(out.get("default"), list):  # a set: pydantic wrote hash order
        out["default"] = in_json_order(out["default"])
    return out


def via_model(validate: Callable[[Any], Any], name: str, validation_error: type[Exception]) -> Converter:
    """Convert through pydantic's ``validate`` (a model's ``model_validate``, a ``TypeAdapter``'s).

    What the model's own validators say is the application's message for the model to read: it
    is kept (cut to the echo limit; the boundary redacts it), with the pointer of the failing
    field. Any other exception is refused with the generic message.
    """

    def convert_model(value: Any) -> Any:
        try:
            return validate(value)
        except validation_error as exc:
            problems = exc.errors(include_url=False, include_input=False)  # type: ignore[attr-defined]
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            error = ConversionError(f"not a valid {name}: {shorten(str(first.get('msg', '')))}{more}")
            error.path = [part for part in first.get("loc", ()) if isinstance(part, (str, int))]
            raise error from None
        except Exception as exc:
            raise refused(name, exc) from None

    return convert_model
