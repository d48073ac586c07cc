"""What the adapters share: reading SDK objects and plain dicts alike, and optional imports.

A provider's response may be a plain dict (JSON decoded from the wire, camelCase or not) or the
SDK's own object (pydantic models with attributes). `field` reads both, so no adapter needs to
import an SDK to read what it returned.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, NamedTuple

from tinytools._results import AudioContent, ImageContent, ResourceContent, ToolResult
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox

__all__ = [
    "Media",
    "arguments",
    "declared",
    "field",
    "media",
    "require",
    "result_text",
    "sentence",
    "sequence",
    "shown",
]


def shown(tools: Iterable[Tool[..., Any]], revealed: Iterable[str] = ()) -> list[Tool[..., Any]]:
    """The tools an export shows: deferred ones only once revealed, after the others (`Toolbox.shown`)."""
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    return box.shown(revealed)


def field(value: Any, *names: str) -> Any:
    """The first of ``names`` that is set on ``value`` (a mapping key or an attribute), or None."""
    for name in names:
        found = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
        if found is not None:
            return found
    return None


def sequence(value: Any) -> list[Any]:
    """A list of the items of ``value``; None gives an empty list."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return list(value)
    return [value]


def arguments(value: Any) -> Any:
    """Arguments as the dispatcher takes them: JSON text as is, a mapping as a plain dict.

    Servers that speak a provider's protocol loosely send an object where JSON text belongs,
    or text that is not JSON; both pass through, and dispatch answers malformed text with a
    repairable ``malformed_arguments`` result. Nothing is guessed or replaced by ``{}``.
    """
    if isinstance(value, Mapping) and value.__class__ is not dict:
        return dict(value)
    return value


def declared(tool: Tool[..., Any], schema_key: str, *, strict: bool) -> dict[str, Any]:
    """``{"name", "description", schema_key[, "strict"]}``: the schema, strict-rendered when asked.

    Raises:
        SchemaError: ``strict`` is set and the schema cannot be made strict.
    """
    definition: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        schema_key: tool.strict().schema if strict else tool.input_schema,
    }
    if strict:
        definition["strict"] = True
    return definition


class Media(NamedTuple):
    """One image, sound or resource of a result, its bytes read back from the artifact store."""

    block: ImageContent | AudioContent | ResourceContent
    """The content block."""
    media_type: str
    """What the bytes are."""
    data: bytes
    """The bytes, checked against the block's SHA-256."""

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode()

    @property
    def text(self) -> str | None:
        """A text resource's text (None for bytes that are not text)."""
        return self.block.text(self.data) if isinstance(self.block, ResourceContent) else None

    @property
    def file_name(self) -> str:
        """The last part of a resource's URI (``report.pdf``), or ``file``."""
        uri = self.block.uri if isinstance(self.block, ResourceContent) else ""
        return uri.split("?")[0].rstrip("/").rpartition("/")[2] or "file"


_KINDS = ((ImageContent, "image/"), (AudioContent, "audio/"), (ResourceContent, ""))


def media(result: ToolResult, artifacts: Any) -> list[Media]:
    """The result's images, audio and resources, in order, read from the artifact store.

    Each block whose bytes the store holds and whose SHA-256 matches its reference (an image's
    media type must be ``image/*``, audio's ``audio/*``); none without a store, and none for a
    result that did not succeed (the text still names each artifact).
    """
    if artifacts is None or not result.content or result.is_error:
        return []
    found = []
    for block in result.content:
        prefix = next((prefix for kind, prefix in _KINDS if isinstance(block, kind)), None)
        if prefix is None or not block.artifact.media_type.startswith(prefix):  # type: ignore[union-attr]
            continue
        ref = block.artifact  # type: ignore[union-attr]
        try:
            data = artifacts.get(ref.key)
        except KeyError:
            continue
        if hashlib.sha256(data).hexdigest() == ref.sha256:
            found.append(Media(block, ref.media_type, data))  # type: ignore[arg-type]
    return found


def result_text(result: ToolResult) -> str:
    """The text a model reads for a result: the output as JSON, or the error message."""
    return result.text()


def require(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or say which extra installs it.

    Raises:
        ImportError: The package is not installed; the message names the fix.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'this needs the {module.split(".")[0]!r} package, which is not installed; pip install "tinytools[{extra}]"'
        ) from exc


def sentence(text: str, addition: str) -> str:
    """Append a sentence to a description, closing the one before it."""
    text = text.rstrip()
    if text and text[-1] not in ".!?":
        text += "."
    return f"{text} {addition}" if text else addition
