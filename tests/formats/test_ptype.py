"""The p-type syntax: literals, positional order, hostile text, and linear time."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from tests.formats.support import metered
from tinytools import Toolbox, ToolCall, ToolResult, dispatch, tool
from tinytools._errors import ToolDefinitionError
from tinytools._results import StructuredError
from tinytools.formats import ToolFormat, parse_calls, render_call, render_result, render_tools
from tinytools.formats._ptype import MAX_DEPTH


@tool
def search(query: str, limit: int = 5, exact: bool = False) -> list[str]:
    """Search the docs.

    Args:
        query: What to look for.
        limit: How many results at most.
    """
    return [query] * limit


@tool
def store(key: str, value: Any = None) -> Any:
    """Store a value."""
    return value


@tool
def ping() -> str:
    """Ping."""
    return "pong"


search.format = ToolFormat.ptype(["query", "limit"])  # type: ignore[attr-defined]  # until @tool(format=...)
store.format = ToolFormat.ptype()  # type: ignore[attr-defined]
ping.format = ToolFormat.ptype()  # type: ignore[attr-defined]
TOOLS = Toolbox([search, store, ping])


def parsed(text: str) -> list[tuple[str, Any, str | None]]:
    return [(call.name, call.arguments, call.invalid) for call in parse_calls(text, TOOLS)]


def test_positional_and_keyword_arguments() -> None:
    assert parsed('search("rust agents", 5)') == [("search", {"query": "rust agents", "limit": 5}, None)]
    assert parsed("search(query='rust agents', limit=5, exact=True,)") == [
        ("search", {"query": "rust agents", "limit": 5, "exact": True}, None)
    ]
    assert parsed("ping()") == [("ping", {}, None)]


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ('"a \\"b\\" \'c\'"', "a \"b\" 'c'"),
        ("'it\\'s \"fine\"'", 'it\'s "fine"'),
        ('"""multi\nline "quoted" text"""', 'multi\nline "quoted" text'),
        ("'''x'''", "x"),
        ('"\\n\\t\\\\ \\u00e9 \\U0001F600 \\x41 \\101 \\/ \\q"', "\n\t\\ é 😀 A A / \\q"),
        ('"\\ud83d\\ude00"', "😀"),
        ('"line\\\ncontinued"', "linecontinued"),
        ("-12", -12),
        ("1.5e3", 1500.0),
        ("-0.0", -0.0),
        (".5", 0.5),
        ("12345678901234567890123", 12345678901234567890123),
        ("true", True),
        ("False", False),
        ("null", None),
        ("None", None),
        ("[1, [2, 'x'], (3, 4), []]", [1, [2, "x"], [3, 4], []]),
        ('{\'a\': {"b": [None]}, "c": 1,}', {"a": {"b": [None]}, "c": 1}),
    ],
)
def test_literals(literal: str, value: Any) -> None:
    ((_, arguments, invalid),) = parsed(f'store("k", {literal})')
    assert invalid is None and arguments == {"key": "k", "value": value}
    assert type(arguments["value"]) is type(value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("search(rust)", "unexpected name 'rust'"),
        ('search("a", 1, True)', "at most 2 positional arguments (query, limit)"),
        ('search(query="a", "b")', "positional argument follows a keyword"),
        ('search("a", query="b")', "'query' is given twice"),
        ('search("a"', "not closed with ')'"),
        ('search("a)', "string is not closed"),
        ('search("a" 5)', "expected ',' or ')'"),
        ("search(1e999)", "out of range"),
        ("search(" + "1" * 5000 + ")", "too long"),
        ("store('k', {1: 2})", "keys must be strings"),
        ("store('k', {'a' 2})", "expected ':'"),
        ("store('k', [1, 2)", "expected ',' or ']'"),
        ("store('k', " + "[" * (MAX_DEPTH + 1) + ")", "nested deeper"),
        ("store('k', '\\ud83d')", "surrogate"),
        ("store('k', 5 + 3)", "expected ',' or ')'"),
        ("store('k', __import__('os'))", "unexpected name '__import__'"),
    ],
)
def test_malformed_calls_are_invalid(text: str, reason: str) -> None:
    (call,) = parse_calls(text, TOOLS)
    assert call.invalid is not None and reason in call.invalid, call.invalid
    assert isinstance(call.arguments, str) and text.startswith(call.arguments)
    assert dispatch(call, TOOLS).error.code == "malformed_arguments"  # type: ignore[union-attr]


def test_look_alikes_and_mentions_start_no_call() -> None:
    assert parsed("research('x') my_search('x') tools.search('x') search ('x') Search('x') pings()") == []


def test_calls_split_by_prose_and_fences_keep_their_order() -> None:
    text = (
        'First, search("a(b)c, d", 2).\n```python\nstore("k", {"v": [1, "]"]})\n```\n'
        "then search(x) which is broken, then ping()"
    )
    assert parsed(text) == [
        ("search", {"query": "a(b)c, d", "limit": 2}, None),
        ("store", {"key": "k", "value": {"v": [1, "]"]}}, None),
        ("search", "search(x", "unexpected name 'x'; write text in quotes"),
        ("ping", {}, None),
    ]


def test_a_string_argument_holding_calls_is_one_call() -> None:
    assert parsed('store("k", "search(\'x\') and {\\"name\\": \\"ping\\"}")') == [
        ("store", {"key": "k", "value": 'search(\'x\') and {"name": "ping"}'}, None)
    ]


def test_parsed_arguments_are_validated() -> None:
    (call,) = parse_calls('search("x", "five")', TOOLS)
    result = dispatch(call, TOOLS)
    assert result.error is not None and result.error.code == "invalid_arguments"


def test_render_call_uses_the_positional_order_then_keywords() -> None:
    call = ToolCall("c", "search", {"exact": True, "query": 'say "hi"\n', "limit": 3})
    assert render_call(call, search) == 'search("say \\"hi\\"\\n", 3, exact=True)'
    assert render_call(ToolCall("c", "search", {"limit": 3}), search) == "search(limit=3)"
    rendered = render_call(ToolCall("c", "store", {"key": "k", "value": {"a": [None, 1.5]}}), store)
    assert rendered == 'store("k", {"a": [None, 1.5]})'


def test_render_result() -> None:
    ok = ToolResult(call_id="c1", name="search", status="succeeded", output={"a": [True]})
    assert render_result(ok, ToolFormat.ptype()) == 'search -> {"a": [True]}  # id c1'
    bad = ToolResult(call_id="c2", name="x", status="failed", error=StructuredError("tool_error", 'No "x".'))
    assert (
        render_result(bad, ToolFormat.ptype()) == 'x -> error(code="tool_error", message="Error: No \\"x\\".")  # id c2'
    )


def test_render_tools_shows_signatures_and_examples_that_parse() -> None:
    text = render_tools(TOOLS)
    assert "## search(query, limit, *, exact)" in text and "## store(key, value)" in text
    assert "- limit (integer, optional, default 5): How many results at most." in text
    lines = text.splitlines()
    examples = "\n".join(lines[index + 1] for index, line in enumerate(lines) if line == "Example:")
    assert [(call.name, call.invalid) for call in parse_calls(examples, TOOLS)] == [
        ("search", None),
        ("store", None),
        ("ping", None),
    ]


def test_the_positional_order_must_name_parameters() -> None:
    with pytest.raises(ToolDefinitionError, match="list of parameter names"):
        ToolFormat.ptype("query")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="twice"):
        ToolFormat.ptype(["a", "a"])
    with pytest.raises(ToolDefinitionError) as info:
        ToolFormat.ptype(["query", "session"]).check("search", ["query", "limit"])
    assert (info.value.tool, info.value.parameter) == ("search", "session")
    assert ToolFormat.ptype(["query"]) == ToolFormat.ptype(("query",)) != ToolFormat.ptype()
    assert repr(ToolFormat.ptype(["query"])) == "ToolFormat.ptype(['query'])"
    assert pickle.loads(pickle.dumps(ToolFormat.ptype(["query"]))) == ToolFormat.ptype(["query"])
    with pytest.raises(AttributeError):
        ToolFormat.xml().syntax = "json"  # type: ignore[misc]


MEGABYTE = 1_000_000


def repeat(piece: str, head: str = "", tail: str = "") -> str:
    return head + piece * (MEGABYTE // len(piece)) + tail


@pytest.mark.parametrize(
    "text",
    [
        repeat("search("),
        repeat("a", 'search("'),
        repeat("\\", 'search("'),
        repeat('\\"', 'search("'),
        repeat("'", "search("),
        repeat('"', "search("),
        repeat("[", "store('k', "),
        repeat("[1, ", "store('k', "),
        repeat('"""', "search("),
        repeat("a", 'search("""'),
        repeat("\\u00e9", 'search("', '")'),
        repeat('search("x") '),
        repeat("1", "search("),
        repeat("x=1, ", "search("),
    ],
    ids=lambda text: f"{text[:16]!r}x{len(text)}",
)
def test_huge_hostile_inputs_take_linear_work(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with metered(monkeypatch, budget=12 * len(text)):
        calls = parse_calls(text, TOOLS)
    assert all(call.name in TOOLS for call in calls)
