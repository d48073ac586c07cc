"""Descriptions of the named types in a schema, from the classes' own documentation.

A dataclass's, TypedDict's, NamedTuple's, Struct's or pydantic model's docstring becomes its
object's description, and its documented fields (an ``Args:``/``Attributes:`` section, attribute
docstrings) its properties' descriptions (`tinytools._schema.docstrings.describe_class`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from tinytools._schema.docstrings import describe_class

__all__ = ["described"]


def described(schema: dict[str, Any], cls: type) -> dict[str, Any]:
    """``schema`` with the class's own docstring as its description, and its documented fields' descriptions.

    What the schema says already (a pydantic ``Field(description=...)``, an ``Annotated`` string)
    wins over the docstring.
    """
    docs = describe_class(cls)
    if not docs.description and not docs.parameters:
        return schema
    schema = dict(schema)
    if docs.description and "description" not in schema:
        schema["description"] = docs.description
    names = _field_names(cls)
    properties = schema.get("properties")
    if isinstance(properties, dict) and docs.parameters:
        schema["properties"] = {
            key: _with_description(value, docs.parameters.get(names.get(key) or key))
            for key, value in properties.items()
        }
    positions = schema.get("prefixItems")
    if isinstance(positions, list) and hasattr(cls, "_fields"):  # a NamedTuple: its fields by position
        fields = cls._fields
        schema["prefixItems"] = [
            _with_description(value, docs.parameters.get(field)) for value, field in zip(positions, fields, strict=True)
        ]
    return schema


def _field_names(cls: Any) -> dict[str, str]:
    """JSON key -> Python field name, where they differ (a pydantic alias, a Struct's ``rename``)."""
    fields = getattr(cls, "model_fields", None)
    if isinstance(fields, dict):
        return {str(field.alias or name): name for name, field in fields.items()}
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return {field.encode_name: field.name for field in msgspec.structs.fields(cls)}
    return {}


def _with_description(schema: Any, description: str | None) -> Any:
    if description and isinstance(schema, dict) and "description" not in schema:
        return {**schema, "description": description}
    return schema
