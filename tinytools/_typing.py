"""Internal type aliases and predicates shared across modules; nothing here is public."""

from __future__ import annotations

from typing import Any, Union

from typing_extensions import TypeAlias

__all__ = ["JSONObject", "JSONValue"]

JSONValue: TypeAlias = Union[
    None, bool, int, float, str, "list[JSONValue]", "dict[str, JSONValue]"
]
"""Any value JSON can carry, as msgspec decodes it."""

JSONObject: TypeAlias = "dict[str, Any]"
"""A decoded JSON object; values are `JSONValue` (kept as Any so callers need no casts)."""
