"""The JSON syntax: variants models emit, prose around calls, broken calls, and linear time."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from tests.formats.support import metered
from tinytools import Toolbox, ToolCall, ToolResult, dispatch, tool
from tinytools._results import StructuredError
from tinytools.formats import ToolFormat, parse_calls, render_call, render_result, render_tools


@tool
def search(query: str, limit: int = 5) -> list[str]:
    """Search the docs.

    Args:
        query: What to look for.
        limit: How many results at most.
    """
    return [query] * limit


@tool
def get_time() -> str:
    """The time."""
    return "noon"


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Look up the weather."""
    return {"city": city, "unit": unit}


TOOLS = Toolbox([search, get_time, get_weather])


def parsed(text: str) -> list[tuple[str, Any, str | None]]:
    return [(call.name, call.arguments, call.invalid) for call in parse_calls(text, TOOLS)]


def test_a_call_in_prose_and_a_code_fence() -> None:
    text = 'I will search.\n```json\n{"name": "search", "arguments": {"query": "rust", "limit": 2}}\n```\nDone.'
    assert parsed(text) == [("search", {"query": "rust", "limit": 2}, None)]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "search", "parameters": {"query": "rust"}}',
        '{"name": "search", "arguments": "{\\"query\\": \\"rust\\"}"}',
        '{"tool": "search", "args": {"query": "rust"}}',
        '{"arguments": {"query": "rust"}, "name": "search"}',
        '{"type": "function", "function": {"name": "search", "arguments": "{\\"query\\": \\"rust\\"}"}}',
        '{"tool_calls": [{"id": "x", "function": {"name": "search", "arguments": {"query": "rust"}}}]}',
        '<tool_call>\n{"name": "search", "arguments": {"query": "rust"}}\n</tool_call>',
    ],
)
def test_common_variants(text: str) -> None:
    assert parsed(text) == [("search", {"query": "rust"}, None)]


def test_a_list_of_calls_in_order_and_a_call_without_arguments() -> None:
    text = '[{"name": "get_time"}, {"name": "search", "arguments": {"query": "a"}}]'
    assert parsed(text) == [("get_time", {}, None), ("search", {"query": "a"}, None)]


def test_multiple_calls_split_by_prose_keep_their_order() -> None:
    text = (
        'First {"name": "get_weather", "arguments": {"city": "Paris"}} and then, {not json}, '
        'maybe [1, 2] {"name": "search", "arguments": {"query": "}{\\"]["}}.'
    )
    assert parsed(text) == [("get_weather", {"city": "Paris"}, None), ("search", {"query": '}{"]['}, None)]


def test_json_that_is_not_a_call_is_ignored() -> None:
    text = 'Result: {"name": "Paris", "population": 2} and {"results": [{"name": "search", "score": 1}]}'
    assert parsed(text) == []


def test_the_model_given_id_is_kept() -> None:
    calls = parse_calls('{"id": "call_9", "name": "get_time", "arguments": {}}', TOOLS)
    assert calls == [ToolCall("call_9", "get_time", {})]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"name": "search", "arguments": {"query": "x",}}', "trailing comma"),
        ('{"name": "search", "arguments": {"query": "x"}\n\nLet me know.', "unexpected 'L'"),
        ('{"name": "search", "arguments": {"query": "line\nbreak"}}', "not closed on its line"),
        ('{"name": "search", "arguments": {"query": \'x\'}}', 'unexpected "\'"'),
        ('{"name": "search", "arguments": "{query: x}"}', "arguments string is not JSON"),
        ('{"name": "search", "arguments": null}', "must be a JSON object"),
        ('{"name": "search", "arguments": {"query": "x"', "not closed"),
    ],
)
def test_broken_calls_are_invalid_never_dropped(text: str, reason: str) -> None:
    (call,) = parse_calls(text, TOOLS)
    assert call.name == "search" and call.invalid is not None and reason in call.invalid
    assert isinstance(call.arguments, str) and call.arguments.startswith("{")
    result = dispatch(call, TOOLS)
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "malformed_arguments" and result.call_id == call.id


def test_sound_calls_inside_a_broken_list_are_still_read() -> None:
    text = '[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": {"query": "x",}}, ]'
    calls = parse_calls(text, TOOLS)
    assert [(call.name, call.invalid is None) for call in calls] == [("get_time", True), ("search", False)]


def test_an_unknown_tool_name_reaches_the_dispatcher() -> None:
    (call,) = parse_calls('{"name": "serach", "arguments": {"query": "x"}}', TOOLS)
    assert dispatch(call, TOOLS).error == StructuredError(
        "unknown_tool", "Unknown tool 'serach'. Did you mean 'search'? Available tools: search, get_time, get_weather."
    )


def test_arguments_are_validated_like_any_call() -> None:
    (call,) = parse_calls('{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "k"}}', TOOLS)
    result = dispatch(call, TOOLS)
    assert result.error is not None and result.error.code == "invalid_arguments"


def test_render_call_and_result() -> None:
    call = ToolCall("c1", "search", '{"query": "a \\"b\\""}')
    assert render_call(call, search) == '{"name":"search","arguments":{"query":"a \\"b\\""}}'
    result = ToolResult(call_id="c1", name="search", status="succeeded", output=["x"])
    assert render_result(result, ToolFormat.json()) == (
        '{"tool_result":{"id":"c1","name":"search","status":"succeeded","output":["x"]}}'
    )
    failed = ToolResult(call_id="c2", name="x", status="failed", error=StructuredError("unknown_tool", "No."))
    assert '"error":{"code":"unknown_tool","message":"Error: No."}' in render_result(failed, ToolFormat.json())


def test_render_tools_declares_each_tool_with_an_example_that_parses() -> None:
    text = render_tools(TOOLS)
    assert text.startswith("To call a tool, write a JSON object")
    assert '{"name":"search","description":"Search the docs.","parameters":{' in text
    assert "- query (string, required): What to look for." in text
    assert "- limit (integer, optional, default 5): How many results at most." in text
    assert '- unit (one of "c", "f", optional, default "c")' in text
    examples = [line for line in text.splitlines() if line.startswith('{"name":"') and '"arguments"' in line]
    assert [call.name for line in examples for call in parse_calls(line, TOOLS)] == [
        "search",
        "get_time",
        "get_weather",
    ]


MEGABYTE = 1_000_000


def repeat(piece: str, tail: str = "") -> str:
    return piece * (MEGABYTE // len(piece)) + tail


def _nested_behind_filler(inner: str, wrap: str = '{{"a": {filler}, "b": {inner}}}', depth: int = 60) -> str:
    """``inner``, whose defect is the first in the text, nested ``depth`` levels deep behind filler.

    Every level that a parser decodes again reads all the filler inside it before the defect.
    """
    filler = '"' + "f" * (MEGABYTE // depth) + '"'
    for _ in range(depth):
        inner = wrap.format(filler=filler, inner=inner)
    return inner


@pytest.mark.parametrize(
    "text",
    [
        repeat('{"'),
        repeat('{"name": '),
        repeat('[{"'),
        repeat('{"a": ['),
        repeat('"'),
        repeat("{"),
        repeat("["),
        '{"name": "search", "arguments": {"query": "' + repeat("a"),
        '{"name": "search", "arguments": {"query": "' + repeat("\\"),
        '{"x": "' + repeat('\\"'),
        '{"name": "search", "arguments": {"query": "' + repeat("a", '"}}'),
        repeat('[{"name": "get_time", "arguments": {}}, ', "]"),
        repeat('ok {"name": "get_time", "arguments": {}} '),
        repeat('{"k": {"name": "search", "arguments": {"query": 1,}}, '),
        repeat('[[[[[[[[{"name": "search"'),
        _nested_behind_filler('{"name": "search", "arguments": {"query": "x",}}'),
        _nested_behind_filler('{"name": "search", "arguments": {"query": "x"}}', '{{"a": {filler}, "b": {inner},}}'),
    ],
    ids=lambda text: f"{text[:14]!r}x{len(text)}",
)
def test_huge_hostile_inputs_take_linear_work(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with metered(monkeypatch, budget=12 * len(text)) as meter:
        calls = parse_calls(text, TOOLS)
    assert meter.characters <= 12 * len(text)
    assert all(call.name in ("search", "get_time") for call in calls)
