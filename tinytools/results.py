"""The records of a call: `ToolCall` in, `ToolResult` out, and `StructuredError`.

All three are msgspec Structs, so they are cheap to build and encode to JSON as they are.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["Status", "StructuredError", "ToolCall", "ToolResult"]

Status = Literal["succeeded", "failed", "outcome_unknown"]
"""The three terminal states of a call."""

_encode = msgspec.json.encode


class ToolCall(msgspec.Struct, frozen=True):
    """One call a model asked for.

    ``arguments`` is a JSON text (``str`` or ``bytes``, as OpenAI sends it) or an already
    decoded object (``dict``, as Anthropic and Gemini send it).
    """

    id: str
    """The provider's call id; the result carries it back."""
    name: str
    """The tool the model named."""
    arguments: Any = "{}"
    """JSON text or decoded object."""
    invalid: str | None = None
    """Why a call parsed from text cannot be used, or None for a usable call."""


class StructuredError(msgspec.Struct, frozen=True, omit_defaults=True):
    """An error the model may see: a short code and safe text only."""

    code: str
    """Machine-readable: ``unknown_tool``, ``invalid_arguments``, ``tool_error``, ..."""
    message: str
    """Text for the model, written to help it repair the call."""
    details: dict[str, Any] | None = None
    """Structured detail for the application (pointer, keyword, error id, ...)."""


class ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The one result every call ends in; it carries the call's id."""

    call_id: str
    """The id of the `ToolCall` this answers."""
    name: str
    """The tool's canonical name (or the requested name when no tool matched)."""
    status: Status
    """``succeeded``, ``failed`` or ``outcome_unknown``."""
    output: Any = None
    """The tool's return value as JSON-compatible data."""
    error: StructuredError | None = None
    """Present exactly when the call did not succeed."""
    elapsed: int = 0
    """Nanoseconds from the start of dispatch to the result."""

    @property
    def is_error(self) -> bool:
        """True when the call did not succeed."""
        return self.status != "succeeded"

    def text(self) -> str:
        """The model-facing text: the error message, or the output as JSON."""
        if self.error is not None:
            return self.error.message
        if isinstance(self.output, str):
            return self.output
        return _encode(self.output).decode()

    def to_json(self) -> bytes:
        """Encode the whole result as JSON."""
        return _encode(self)
