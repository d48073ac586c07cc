"""The MCP server as a real subprocess over stdio, driven by the official mcp client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SERVER = Path(__file__).with_name("mcp_server_tools.py")


async def _session(mode: str) -> dict[str, Any]:
    """Start the server, list its tools, make a few calls; return what came back."""
    parameters = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(parameters, mode=mode, read_timeout_seconds=20) as client:
        listed = await client.list_tools()
        return {
            "version": client.protocol_version,
            "tools": {tool.name: tool for tool in listed.tools},
            "add": await client.call_tool("add", {"a": 2, "b": 3}),
            "weather": await client.call_tool("get_weather", {"city": "Oslo"}),
            "tool_error": await client.call_tool("get_weather", {"city": "Atlantis"}),
            "invalid": await client.call_tool("get_weather", {"city": 3}),
            "unknown": await client.call_tool("nope", {}),
            "liar": await client.call_tool("liar", {"x": 1}),
            "progress": await _crawl_with_progress(client),
        }


async def _crawl_with_progress(client: Any) -> dict[str, Any]:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("crawl", {"pages": 3}, progress_callback=on_progress)
    return {"result": result, "seen": seen}


@pytest.fixture(scope="module", params=["auto", "legacy"])
def session(request: pytest.FixtureRequest) -> dict[str, Any]:
    return anyio.run(_session, request.param)  # type: ignore[no-any-return]


def test_both_protocol_eras_are_served(session: dict[str, Any], request: pytest.FixtureRequest) -> None:
    modern = session["version"] in MODERN_PROTOCOL_VERSIONS
    assert modern is (request.node.callspec.params["session"] == "auto")


def test_tools_list_gives_name_description_schemas_and_annotations(session: dict[str, Any]) -> None:
    tools = session["tools"]
    assert list(tools) == ["get_weather", "add", "liar", "wipe", "crawl"]
    weather = tools["get_weather"]
    assert weather.description == "Look up the current weather."
    assert weather.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit.", "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert weather.output_schema == {"type": "object"}
    assert weather.annotations.idempotent_hint is True
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["add"].annotations.idempotent_hint is False


def test_a_call_returns_structured_content_and_text(session: dict[str, Any]) -> None:
    add, weather = session["add"], session["weather"]
    assert (add.is_error, add.structured_content, add.content[0].text) == (False, {"result": 5}, "5")
    assert weather.is_error is False
    assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "unit": "c"}
    assert weather.content[0].text == '{"city":"Oslo","temperature":21.5,"unit":"c"}'


def test_failures_set_is_error_with_a_message_the_model_can_act_on(session: dict[str, Any]) -> None:
    for key in ("tool_error", "invalid", "unknown", "liar"):
        assert session[key].is_error is True and session[key].structured_content is None, key
    assert session["tool_error"].content[0].text == "Error: no weather station in Atlantis"
    assert (
        session["invalid"]
        .content[0]
        .text.startswith("Error: Invalid arguments: tool 'get_weather', argument 'city' at /city: expected string")
    )
    listed = "get_weather, add, liar, wipe, crawl"
    assert session["unknown"].content[0].text == f"Error: Unknown tool 'nope'. Available tools: {listed}."
    assert "does not match its declared output schema" in session["liar"].content[0].text


def test_policies_become_annotations(session: dict[str, Any]) -> None:
    tools = session["tools"]
    wipe, crawl, add = tools["wipe"].annotations, tools["crawl"].annotations, tools["add"].annotations
    assert (wipe.read_only_hint, wipe.destructive_hint, wipe.open_world_hint) == (False, True, False)
    assert (crawl.read_only_hint, crawl.open_world_hint) == (False, True)
    assert add.read_only_hint is None and add.destructive_hint is None  # unclassified: claims nothing


def test_progress_reaches_the_client_as_notifications(session: dict[str, Any]) -> None:
    progress = session["progress"]
    assert progress["result"].structured_content == {"result": 3}
    assert progress["seen"] == [(1, 3, "page 1"), (2, 3, "page 2"), (3, 3, "page 3")]
