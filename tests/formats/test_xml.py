"""The XML syntax: value coercion by schema, entities and CDATA, hostile tags, and linear time."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest

from tests.formats.support import metered
from tinytools import Tool, Toolbox, ToolCall, ToolResult, dispatch, tool
from tinytools.formats import ToolFormat, parse_calls, render_call, render_result, render_tools
from tinytools.formats._xml import coerce_text

XML = ToolFormat.xml()


@dataclasses.dataclass
class Point:
    x: float
    y: int = 0


@tool
def get_weather(city: str, days: int = 1, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Look up the weather.

    Args:
        city: City name.
        days: How many days.
    """
    return {"city": city, "days": days, "unit": unit}


@tool
def plot(
    points: list[Point],
    tags: list[str] | None = None,
    scale: float = 1.0,
    note: str | None = None,
    labels: dict[str, int] | None = None,
    show: bool = False,
    extra: Any = None,
) -> dict[str, Any]:
    """Plot points."""
    return {"points": [dataclasses.asdict(p) for p in points], "tags": tags, "scale": scale, "note": note}


@dataclasses.dataclass
class Section:
    title: str
    sections: list[Section] = dataclasses.field(default_factory=list)


@tool
def outline(tree: Section) -> str:
    """Store an outline."""
    return tree.title


@tool
def search(query: str) -> str:
    """Search."""
    return query


for _tool in (get_weather, plot, outline, search):
    _tool.format = XML  # type: ignore[attr-defined]  # until @tool(format=...) lands
TOOLS = Toolbox([get_weather, plot, outline, search])


def parsed(text: str) -> list[tuple[str, Any, str | None]]:
    return [(call.name, call.arguments, call.invalid) for call in parse_calls(text, TOOLS)]


def test_values_are_coerced_by_the_schema() -> None:
    text = "<get_weather>\n  <city>  Paris </city>\n  <days> 3 </days>\n</get_weather>"
    assert parsed(text) == [("get_weather", {"city": "Paris", "days": 3}, None)]


def test_entities_character_references_and_cdata_are_decoded() -> None:
    text = (
        "<search><query>&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos; &#233;&#x1F600; AT&T &bogus; &#0;"
        "<![CDATA[ <raw> & ]]> ]]&gt;</query></search>"
    )
    assert parsed(text) == [("search", {"query": "<a> & \"b\" 'c' é😀 AT&T &bogus; &#0; <raw> &  ]]>"}, None)]


def test_no_entity_is_ever_expanded_from_a_dtd() -> None:
    text = '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]><search><query>&a;&a;</query></search>'
    assert parsed(text) == [("search", {"query": "&a;&a;"}, None)]


def test_arrays_and_objects_as_json_or_child_elements() -> None:
    as_json = '<plot><points>[{"x": 1.5, "y": 2}]</points><tags>["a", "b"]</tags><labels>{"k": 1}</labels></plot>'
    as_elements = (
        "<plot><points><point><x>1.5</x><y>2</y></point></points>"
        "<tags><item>a</item><item>b</item></tags><labels><k>1</k></labels></plot>"
    )
    repeated = (
        "<plot><points><x>1.5</x><y>2</y></points><points><x>0</x></points>"
        "<tags>a</tags><tags>b</tags><labels><k>1</k></labels></plot>"
    )
    expected = {"points": [{"x": 1.5, "y": 2}], "tags": ["a", "b"], "labels": {"k": 1}}
    assert parsed(as_json) == parsed(as_elements) == [("plot", expected, None)]
    (call,) = parse_calls(repeated, TOOLS)
    assert call.arguments == {"points": [{"x": 1.5, "y": 2}, {"x": 0}], "tags": ["a", "b"], "labels": {"k": 1}}
    assert dispatch(call, TOOLS).output["points"] == [{"x": 1.5, "y": 2}, {"x": 0.0, "y": 0}]


@pytest.mark.parametrize(
    ("text", "types", "value"),
    [
        ("3", {"integer"}, 3),
        ("3", {"string"}, "3"),
        ("3", {"string", "integer"}, 3),
        ('"3"', {"string", "integer"}, "3"),
        ('"3"', {"string"}, '"3"'),
        ("true", {"boolean"}, True),
        ("True", {"boolean"}, True),
        ("None", {"null", "integer"}, None),
        ("None", {"null", "string"}, "None"),
        ("", {"null", "integer"}, None),
        ("", {"null", "string"}, ""),
        ("null", {"null", "string"}, None),
        ("five", {"integer"}, "five"),
        ("1e400", {"number"}, "1e400"),
        ("[1, 2]", {"array"}, [1, 2]),
        ("[1, 2", {"array", "string"}, "[1, 2"),
    ],
)
def test_coerce_text(text: str, types: set[str], value: Any) -> None:
    assert coerce_text(text, frozenset(types)) == value
    assert type(coerce_text(text, frozenset(types))) is type(value)


def test_text_the_schema_refuses_reaches_the_validator() -> None:
    (call,) = parse_calls("<get_weather><city>Oslo</city><days>five</days></get_weather>", TOOLS)
    assert call.arguments == {"city": "Oslo", "days": "five"}
    result = dispatch(call, TOOLS)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert "/days" in result.error.message


@pytest.mark.parametrize(
    "text",
    [
        "<searching><query>x</query></searching>",
        "<search-results><query>x</query></search-results>",
        "<Search><query>x</query></Search>",
        "<searchquery>x</searchquery>",
        "</search>",
        "<search_x><query>x</query></search_x>",
        "Use the `<search>` tag, or `<search/>`.",
    ],
)
def test_look_alike_tags_start_no_call(text: str) -> None:
    assert parsed(text) == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<search><query>x</query>", "<search> is not closed"),
        ("<search><query>x</search>", "<query> is not closed before </search>"),
        ("<search><query>x</query>\nthinking...\n</search>", "mixes text and elements"),
        ("<search>rust</search>", "holds bare text"),
        ('<search query="x"/>', "has attributes"),
        ("<search><query><![CDATA[x</query></search>", "CDATA"),
        ("<search><query>x</query><query>y</query></search>", "appears 2 times"),
        ("<get_weather><city>Oslo</city><days><n>3</n></days></get_weather>", "not an array or object"),
        ("<search><query>x</query></oops></search>", "unexpected </oops>"),
        ("<outline><tree>" + "<sections><s>" * 20 + "</outline>", "nested deeper"),
        ("<search ", "not closed with '>'"),
    ],
)
def test_unclosed_or_malformed_calls_are_invalid(text: str, reason: str) -> None:
    (call,) = parse_calls(text, TOOLS)
    assert call.invalid is not None and reason in call.invalid, call.invalid
    assert isinstance(call.arguments, str) and call.arguments.startswith("<")
    assert dispatch(call, TOOLS).error.code == "malformed_arguments"  # type: ignore[union-attr]


def test_an_unclosed_call_never_swallows_the_next_one() -> None:
    text = "<search><query>first\n\nSorry, again:\n<search><query>second</query></search> and <get_weather>"
    calls = parsed(text)
    assert calls[0][0] == "search" and calls[0][2] == "<query> is not closed before <search>"
    assert calls[0][1] == "<search><query>first\n\nSorry, again:\n"
    assert calls[1] == ("search", {"query": "second"}, None)
    assert calls[2][0] == "get_weather" and calls[2][2] is not None


def test_a_parameter_named_like_a_tool_is_an_argument_not_a_call() -> None:
    named = Tool.from_schema(
        "fetch",
        "",
        {"type": "object", "properties": {"search": {"type": "string"}}, "additionalProperties": False},
        lambda search: search,
    )
    named.format = XML  # type: ignore[attr-defined]
    calls = parse_calls("<fetch><search>a</search></fetch>", [named, search])
    assert [(call.name, call.arguments) for call in calls] == [("fetch", {"search": "a"})]


def test_calls_in_order_with_prose_fences_and_comments() -> None:
    text = (
        "Let me look.\n```xml\n<search><!-- first --><query>a</query></search>\n```\n"
        "Then <get_weather><city>Rome</city></get_weather>, and <search/>."
    )
    assert parsed(text) == [
        ("search", {"query": "a"}, None),
        ("get_weather", {"city": "Rome"}, None),
        ("search", {}, None),
    ]


def test_json_calls_are_read_too_unless_one_format_is_asked_for() -> None:
    text = '{"name": "search", "arguments": {"query": "x"}}'
    assert parsed(text) == [("search", {"query": "x"}, None)]
    assert parse_calls(text, TOOLS, format=XML) == []


def test_render_call_escapes_and_quotes_what_would_read_back_differently() -> None:
    call = ToolCall("c", "plot", {"points": [], "note": " <b> & null ", "show": True, "extra": "3"})
    text = render_call(call, plot)
    assert text == (
        "<plot>\n<points>[]</points>\n<note>&#32;&lt;b&gt; &amp; null&#32;</note>\n"
        '<show>true</show>\n<extra>"3"</extra>\n</plot>'
    )
    assert parse_calls(text, TOOLS)[0].arguments == call.arguments
    assert '<note>"null"</note>' in render_call(ToolCall("c", "plot", {"note": "null"}), plot)


def test_render_result_and_tools() -> None:
    result = ToolResult(call_id='c"1', name="search", status="succeeded", output="<b>")
    assert render_result(result, XML) == (
        '<tool_result name="search" id="c&quot;1" status="succeeded">\n&lt;b&gt;\n</tool_result>'
    )
    text = render_tools(TOOLS)
    assert text.startswith("To call a tool, write an element named after it")
    assert "- city (string, required): City name." in text
    assert "- points (array of object {x: number, y?: integer}, required)" in text
    assert "<get_weather>\n<city>text</city>\n</get_weather>" in text
    assert [call.name for call in parse_calls(text, TOOLS) if call.invalid is None] == [
        "get_weather",
        "plot",
        "outline",
        "search",
    ]


MEGABYTE = 1_000_000


def repeat(piece: str, head: str = "", tail: str = "") -> str:
    return head + piece * (MEGABYTE // len(piece)) + tail


@pytest.mark.parametrize(
    "text",
    [
        repeat("<search>"),
        repeat("<search><query>"),
        repeat("x", "<search><query>"),
        repeat("<a>", "<search><query>"),
        repeat("<a>", "<plot><labels>"),
        repeat("<![CDATA[", "<search><query>"),
        repeat("<!--", "<plot><points>"),
        repeat("<", "<search><query>"),
        repeat("<", "<plot><points>"),
        repeat("a", "<search "),
        repeat("&#1;&amp", "<search><query>", "</query></search>"),
        repeat("<search><query>x</query></search> prose "),
        repeat("<tags>a</tags>", "<plot>", "</plot>"),
        repeat("<sections><s>", "<outline><tree>"),
    ],
    ids=lambda text: f"{text[:16]!r}x{len(text)}",
)
def test_huge_hostile_inputs_take_linear_work(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with metered(monkeypatch, budget=12 * len(text)):
        calls = parse_calls(text, TOOLS)
    assert all(call.name in TOOLS for call in calls)
