"""The tools the official MCP conformance suite calls by name, served by ``tinytools serve-mcp``.

Each returns what its scenario checks for: text, an image, a sound, an embedded resource, all
three at once, an error, progress, and a hand-written JSON Schema 2020-12 input schema with
``$schema``, ``$defs`` and ``additionalProperties`` kept as written.
"""

from __future__ import annotations

import base64
from typing import Any

from tinytools import (
    ArtifactRef,
    AudioContent,
    ImageContent,
    Progress,
    ResourceContent,
    TextContent,
    Tool,
    ToolError,
    ToolOutput,
    tool,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data"
WAV += b"\x00\x00\x00\x00"
NOTE = b"A text resource, embedded in a tool's result."


def _shown(*items: tuple[str, bytes, str]) -> ToolOutput:
    """A result showing each (kind, bytes, media type) item, the bytes stored by the serving dispatcher."""
    blocks: list[Any] = [TextContent("Here it is.")]
    for kind, data, media_type in items:
        ref = ArtifactRef.of(data, media_type)
        block = {"image": ImageContent(ref), "audio": AudioContent(ref)}.get(kind)
        blocks.append(block if block is not None else ResourceContent("test://embedded-resource", ref))
    return ToolOutput(None, content=blocks, artifacts=[(data, media_type) for _, data, media_type in items])


@tool
def test_simple_text() -> str:
    """Answer with plain text."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> ToolOutput:
    """Answer with an image."""
    return _shown(("image", PNG, "image/png"))


@tool
def test_audio_content() -> ToolOutput:
    """Answer with a sound."""
    return _shown(("audio", WAV, "audio/wav"))


@tool
def test_embedded_resource() -> ToolOutput:
    """Answer with an embedded text resource."""
    return _shown(("resource", NOTE, "text/plain"))


@tool
def test_multiple_content_types() -> ToolOutput:
    """Answer with text, an image and an embedded resource."""
    return _shown(("image", PNG, "image/png"), ("resource", NOTE, "text/plain"))


@tool
def test_error_handling() -> None:
    """Fail on purpose."""
    raise ToolError("This tool intentionally returns an error for testing")


@tool
def test_tool_with_progress(progress: Progress) -> str:
    """Report three steps of progress, then finish."""
    for done in (0, 50, 100):
        progress.progress(done, total=100, message=f"{done}%")
    return "done"


def _echo(**arguments: Any) -> dict[str, Any]:
    return arguments


json_schema_2020_12_tool = Tool.from_schema(
    "json_schema_2020_12_tool",
    "Take a name and an address, described with JSON Schema 2020-12 keywords.",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                "additionalProperties": False,
            }
        },
    },
    _echo,
)
