"""The tools the official MCP conformance suite calls by name, served by ``tinytools serve-mcp``.

Each returns what its scenario checks for: text, an image, a sound, an embedded resource, all
three at once, an error, progress, and a hand-written JSON Schema 2020-12 input schema with
``$schema``, ``$defs`` and ``additionalProperties`` kept as written; for the 2026-07-28
scenarios, tools that ask (``input_required``), background tools the suite polls as tasks, and
an argument sent as a header.
"""

from __future__ import annotations

import base64
import time
from typing import Any

from tinytools import (
    ArtifactRef,
    Ask,
    AudioContent,
    CancellationToken,
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
    "Take a name and a way to be reached, described with JSON Schema 2020-12 keywords.",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    _echo,
)


# The 2026-07-28 scenarios: questions asked as input_required, and tasks.
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOUR = {"type": "string"}
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@tool
def test_input_required_result_elicitation(ask: Ask) -> str:
    """Ask the user's name, then greet them."""
    return f"Hello, {ask('What is your name?', NAME, name='user_name')['name']}!"


@tool
def test_input_required_result_request_state(ask: Ask) -> str:
    """Ask to confirm, then say the state came back."""
    ask("Please confirm.", {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
    return "state-ok: the request state came back"


@tool
def test_input_required_result_tampered_state(ask: Ask) -> str:
    """Ask to confirm (a changed request state must be refused)."""
    ask("Please confirm.", CONFIRM)
    return "confirmed"


@tool
def test_input_required_result_multi_round(ask: Ask) -> str:
    """Ask a name, then a colour: two rounds, each with a state of its own."""
    name = ask("Step 1: what is your name?", NAME)["name"]
    colour = ask(
        "Step 2: what is your favourite colour?", {"type": "object", "properties": {"color": {"type": "string"}}}
    )
    return f"{name} likes {colour.get('color', 'no colour')}"


@tool
def greet(name: str) -> str:
    """Greet someone at once (never a task)."""
    return f"Hello, {name}!"


@tool(background=True)
def slow_compute(token: CancellationToken, seconds: float = 0, label: str = "") -> str:
    """Work for some seconds in the background, stopping when told."""
    if token.wait(seconds):
        return f"{label} stopped"
    return f"{label} computed"


@tool(background=True)
def failing_job() -> None:
    """Fail in the background after a moment, as a tool says it failed."""
    time.sleep(1)
    raise ToolError("failing_job failed, as it always does")


@tool(background=True)
def protocol_error_job() -> None:
    """Crash in the background (an internal error, not the tool's answer)."""
    raise RuntimeError("protocol_error_job crashed")


@tool(background=True)
def confirm_delete(filename: str, ask: Ask) -> str:
    """Delete a file in the background, once the user confirmed."""
    if not ask(f"Delete {filename}?", CONFIRM)["confirm"]:
        return f"{filename} kept"
    return f"{filename} deleted"


test_headers = Tool.from_schema(
    "test_headers",
    "Echo a region, which a 2026-07-28 client also sends as the Mcp-Param-Region header.",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
        "required": ["region"],
        "additionalProperties": False,
    },
    _echo,
)
