"""pydantic models as tinytools schemas: pydantic's JSON Schema, adopted into a tool's ``$defs``.

A model's own JSON Schema (``model_json_schema``) is the source of its shape, descriptions and
constraints. Adopting it means three things: its definitions are renamed into the tool's
``$defs`` (a recursive model's schema is a ``$ref`` to itself), every object with
``properties`` is closed (``additionalProperties: false``, as every tinytools object is, also
for ``extra="allow"``), and the titles pydantic derives from field names are dropped. pydantic
is never imported here: the caller has the model class, so pydantic is already loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinytools.errors import shorten
from tinytools.schema.convert import ConversionError, Converter, refused

__all__ = ["adopt", "via_model"]

_PREFIX = "#/$defs/"
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


def adopt(model: Any, own: str, defs: dict[str, Any], *, mode: str = "validation") -> dict[str, Any]:
    """The closed schema of pydantic ``model``, its definitions added to ``defs``.

    Args:
        model: The model class.
        own: The name the model itself has in ``defs`` (references to it point there).
        defs: The tool's definitions; the model's nested definitions join them, renamed where
            another definition already has the name.
        mode: ``"validation"`` for an argument, ``"serialization"`` for a return value.
    """
    schema = model.model_json_schema(ref_template=_PREFIX + "{model}", mode=mode)
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
        if keyword == "title":
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
    if isinstance(out.get("properties"), dict):
        out["additionalProperties"] = False
    return out


def via_model(validate: Callable[[Any], Any], name: str, validation_error: type[Exception]) -> Converter:
    """Convert through a pydantic model's ``model_validate``.

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
