"""Anthropic adapter: tool definitions, tool_use blocks, tool_result blocks."""

from __future__ import annotations

from anthropic.types import ToolParam, ToolUseBlock

from tinytools import Dispatcher, ToolCall, tool
from tinytools.providers import anthropic

from .conftest import add, assert_typed_dict, get_weather


def test_export_shows_the_canonical_schema_as_input_schema() -> None:
    assert anthropic.export_tools([add]) == [
        {
            "name": "add",
            "description": "Add two integers.",
            "input_schema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        }
    ]


def test_reads_blocks_sdk_blocks_and_skips_text() -> None:
    blocks = [
        {"type": "text", "text": "Adding."},
        ToolUseBlock(type="tool_use", id="toolu_1", name="add", input={"a": 1, "b": 2}),
        {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {"a": 2, "b": 2}},
    ]
    assert anthropic.read_calls(blocks) == [
        ToolCall("toolu_1", "add", {"a": 1, "b": 2}),
        ToolCall("toolu_2", "add", {"a": 2, "b": 2}),
    ]
    assert anthropic.read_calls({"role": "assistant", "content": "plain text"}) == []


def test_results_carry_is_error_and_the_model_facing_text() -> None:
    calls = [ToolCall("t1", "add", {"a": 1, "b": 2}), ToolCall("t2", "add", {"a": "x", "b": 2})]
    written = anthropic.write_results(Dispatcher([add, get_weather]).dispatch_many(calls))
    assert written[0] == {"type": "tool_result", "tool_use_id": "t1", "content": "3", "is_error": False}
    assert written[1]["is_error"] is True
    assert written[1]["content"].startswith("Error: Invalid arguments: tool 'add', argument 'a' at /a")


def test_strict_export_shows_the_strict_rendering_and_a_strict_dispatcher_restores_defaults() -> None:
    @tool
    def greet(name: str, greeting: str = "Hello") -> str:
        """Greet someone."""
        return f"{greeting}, {name}"

    exported = anthropic.export_tools([greet], strict=True)
    assert exported == [
        {
            "name": "greet",
            "description": "Greet someone.",
            "input_schema": greet.strict().schema,
            "strict": True,
        }
    ]
    assert exported[0]["input_schema"]["required"] == ["name", "greeting"]
    assert_typed_dict(ToolParam, exported[0])
    sent = ToolCall("t1", "greet", {"name": "Ada", "greeting": None})
    assert Dispatcher([greet], strict=True).dispatch(sent).output == "Hello, Ada"


def test_cache_control_marks_the_last_tool_only() -> None:
    exported = anthropic.export_tools([add, get_weather], cache_control={"type": "ephemeral", "ttl": "1h"})
    assert "cache_control" not in exported[0]
    assert exported[1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    for entry in exported:
        assert_typed_dict(ToolParam, entry)
    assert anthropic.export_tools([], cache_control={"type": "ephemeral"}) == []
