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
from typing import Any

from tinytools._results import ImageContent, ToolResult
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox

__all__ = ["arguments", "declared", "field", "images", "require", "result_text", "sentence", "sequence", "shown"]


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


def images(result: ToolResult, artifacts: Any) -> list[tuple[str, str]]:
    """The result's images as (media type, base64 data), read from the artifact store.

    Each `ImageContent` block whose bytes the store holds and whose SHA-256 matches its reference;
    none without a store (the text still names each image's artifact).
    """
    if artifacts is None or not result.content or result.is_error:
        return []
    found = []
    for block in result.content:
        if not isinstance(block, ImageContent) or not block.artifact.media_type.startswith("image/"):
            continue
        try:
            data = artifacts.get(block.artifact.key)
        except KeyError:
            continue
        if hashlib.sha256(data).hexdigest() == block.artifact.sha256:
            found.append((block.artifact.media_type, base64.b64encode(data).decode()))
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
