"""Pending calls over the sessionless protocol (2026-07-28): a question or an approval as ``input_required``.

A served tool's call that waits for a person (a deferred approval, or the tool's `NeedsInput`)
is answered, for a client that says it can show forms (``elicitation`` in its request's
capabilities), with an ``input_required`` result: one form-mode elicitation request under the key
``tinytools``, whose form is the answer's schema, and a ``requestState`` that is the pending
call's signed handle. The client asks its user and sends the same ``tools/call`` again with the
user's response and the state; the server resumes the call with the answer, through the journal's
compare-and-set, so of two retries one acts and the other reads its outcome.

- **Forms are flat.** MCP forms hold one level of string, number, integer, boolean and enum
  fields (`form_of`). A schema that is a single such field is asked as a form of one field,
  ``answer``; a schema that cannot be a form (nested objects, arrays of objects, ``anyOf``,
  patterns) is not asked: the client gets the pending result with its ``_meta`` record, as a
  client that cannot show forms does, and the application resumes the call (`Dispatcher.pending`).
- **A state is this server's, and used once.** Only a handle this server sent as a
  ``requestState`` is taken back (`tinytools.providers.mcp._handed`), only for a call of the same
  tool; the call's own arguments run (a retry's are not read), and once the call ended its state
  is refused. A state is remembered by the process that sent it, so a retry must reach that
  process.
- **Declining** a question cancels the call; declining an approval denies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tinytools._results import ToolResult

__all__ = ["FORM_KEY", "answer_of", "form_of", "input_required"]

FORM_KEY = "tinytools"
"""The key of the one input request a pending call asks, unless the tool named its question."""
_ANSWER = "answer"
"""The one field of a form made for an answer that is a single value."""

_FIELD_KEYWORDS = {
    "string": {"type", "title", "description", "default", "minLength", "maxLength", "format", "enum", "enumNames"}
    | {"oneOf"},
    "number": {"type", "title", "description", "default", "minimum", "maximum"},
    "integer": {"type", "title", "description", "default", "minimum", "maximum"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "default", "items", "minItems", "maxItems"},
}
_FORMATS = {"email", "uri", "date", "date-time"}
_ROOT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "title", "description", "$schema"}


def form_of(schema: object) -> tuple[dict[str, Any], bool] | None:
    """The elicitation form that asks for an answer to ``schema``, and whether it wraps a single value.

    None when no flat form can ask for it (see the module).
    """
    if not isinstance(schema, Mapping):
        return None
    if schema.get("type") != "object":
        return (
            ({"type": "object", "properties": {_ANSWER: dict(schema)}, "required": [_ANSWER]}, True)
            if _field(schema)
            else None
        )
    properties, required = schema.get("properties", {}), schema.get("required", [])
    if not schema.keys() <= _ROOT_KEYWORDS or not isinstance(schema.get("additionalProperties", False), bool):
        return None
    if not isinstance(properties, Mapping) or not properties or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) and _field(field) for name, field in properties.items()):
        return None
    form: dict[str, Any] = {"type": "object", "properties": {name: dict(field) for name, field in properties.items()}}
    if required:
        form["required"] = list(required)
    return form, False


def _field(field: object) -> bool:
    """Whether one schema is a field a form can hold."""
    if not isinstance(field, Mapping):
        return False
    kind = field.get("type")
    if not isinstance(kind, str) or kind not in _FIELD_KEYWORDS or not field.keys() <= _FIELD_KEYWORDS[kind]:
        return False
    if kind == "string":
        titled = field.get("oneOf", [{"const": "-"}])  # choices with titles: [{"const": ..., "title": ...}]
        return (
            field.get("format", "email") in _FORMATS
            and _choices(field.get("enum", ["-"]))
            and _choices(field.get("enumNames", ["-"]))
            and isinstance(titled, list)
            and bool(titled)
            and all(_titled(choice) for choice in titled)
        )
    if kind == "array":  # a multiple choice: an array of enumerated strings
        items = field.get("items")
        return (
            isinstance(items, Mapping)
            and items.keys() <= {"type", "enum"}
            and items.get("type") == "string"
            and _choices(items.get("enum"))
        )
    return True


def _titled(choice: object) -> bool:
    return (
        isinstance(choice, Mapping)
        and choice.keys() <= {"const", "title"}
        and isinstance(choice.get("const"), str)
        and isinstance(choice.get("title", ""), str)
    )


def _choices(values: object) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(value, str) for value in values)


def input_required(result: ToolResult) -> dict[str, Any] | None:
    """The ``input_required`` answer asking a client about a pending result, or None if it cannot be asked."""
    pending = result.pending
    if pending is None or pending.kind not in ("approval", "input"):
        return None
    made = form_of(pending.request.schema)
    if made is None:
        return None
    form, _ = made
    params = {"mode": "form", "message": pending.request.message, "requestedSchema": form}
    return {
        "resultType": "input_required",
        "inputRequests": {pending.request.name or FORM_KEY: {"method": "elicitation/create", "params": params}},
        "requestState": pending.handle,
    }


def answer_of(pending: ToolResult, responses: object) -> tuple[str, Any]:
    """What a retry's ``inputResponses`` say of a pending call.

    ``("answer", value)``, ``("declined", None)``, or ``("none", None)``: no response to its
    request, which is then asked again.
    """
    assert pending.pending is not None
    key = pending.pending.request.name or FORM_KEY
    response = responses.get(key) if isinstance(responses, Mapping) else None
    if not isinstance(response, Mapping) or response.get("action") not in ("accept", "decline", "cancel"):
        return "none", None
    if response["action"] != "accept":
        return "declined", None
    made = form_of(pending.pending.request.schema)
    content = response.get("content")
    if made is not None and made[1] and isinstance(content, Mapping) and _ANSWER in content:
        return "answer", content[_ANSWER]
    return "answer", {} if content is None else content
