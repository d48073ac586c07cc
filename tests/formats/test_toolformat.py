"""`ToolFormat` on tools: ``@tool(format=...)``, its checks at definition, and mixed toolboxes."""

from __future__ import annotations

from typing import Annotated

import pytest

import tinytools
from tinytools import Injected, Param, Tool, Toolbox, ToolDefinitionError, dispatch, tool
from tinytools.formats import ToolFormat, parse_calls, render_tools


def test_tool_format_is_public_and_json_by_default() -> None:
    assert "ToolFormat" in tinytools.__all__ and tinytools.formats.ToolFormat is ToolFormat

    @tool
    def ping() -> str:
        return "pong"

    assert ping.format == ToolFormat.json()


def test_each_tool_is_read_in_its_own_format_and_json_always() -> None:
    @tool(format=ToolFormat.ptype(["query", "limit"]))
    def search(query: str, limit: int = 5) -> list[str]:
        """Search."""
        return [query] * limit

    @tool(format=ToolFormat.xml())
    def fetch(url: str) -> str:
        """Fetch a page."""
        return url

    tools = Toolbox([search, fetch])
    text = (
        'search("a", 2) then <fetch><url>https://x.org/?a=1&amp;b=2</url></fetch>, '
        "not <search><query>b</query></search> nor fetch('y'), "
        'but {"name": "fetch", "arguments": {"url": "z"}}'
    )
    calls = parse_calls(text, tools)
    assert [(call.name, call.arguments) for call in calls] == [
        ("search", {"query": "a", "limit": 2}),
        ("fetch", {"url": "https://x.org/?a=1&b=2"}),
        ("fetch", {"url": "z"}),
    ]
    assert [dispatch(call, tools).output for call in calls] == [["a", "a"], "https://x.org/?a=1&b=2", "z"]
    prompt = render_tools(tools)
    assert prompt.index("like a function call") < prompt.index("## search(query, limit)")
    assert prompt.index("an element named after it") < prompt.index("## fetch")
    assert "## search" in render_tools(tools, ToolFormat.json()) and "like a function" not in render_tools(
        tools, ToolFormat.json()
    )


def test_a_positional_order_naming_no_visible_parameter_is_refused_at_definition() -> None:
    class Session: ...

    with pytest.raises(ToolDefinitionError) as info:

        @tool(format=ToolFormat.ptype(["query", "session"]))
        def search(query: str, *, session: Annotated[Session, Injected]) -> str:
            return query

    assert (info.value.tool, info.value.parameter) == ("search", "session")


def test_parameter_names_a_syntax_cannot_write_are_refused_at_definition() -> None:
    schema = {"type": "object", "properties": {"first name": {"type": "string"}}, "additionalProperties": False}
    for format in (ToolFormat.xml(), ToolFormat.ptype()):
        with pytest.raises(ToolDefinitionError, match="first name"):
            Tool.from_schema("t", "", schema, lambda **kw: kw, format=format)
    assert Tool.from_schema("t", "", schema, lambda **kw: kw).format == ToolFormat.json()


def test_described_constraints_count_in_the_singular_for_one() -> None:
    @tool
    def label(
        text: Annotated[str, Param(min_length=1, max_length=40)], tags: Annotated[list[str], Param(max_items=1)]
    ) -> str:
        """Label something."""
        return text

    prompt = render_tools(Toolbox([label]))
    assert "at least 1 character, at most 40 characters" in prompt and "at most 1 item" in prompt
    assert "1 characters" not in prompt and "1 items" not in prompt
