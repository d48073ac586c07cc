"""Shared pieces of the format tests: sample tools, argument strategies, and a work meter.

`schemas_and_values` draws a JSON Schema for one parameter together with a strategy for values
it accepts, recursively (arrays, closed objects, maps, unions), with strings chosen to be
awkward in every syntax: quotes, backslashes, newlines, ``<``, ``&``, CDATA ends, look-alike
tags, surrounding whitespace, unicode, and text that reads as another JSON type.

`Meter` makes the linear-time tests count instead of time: it wraps every regular expression
and JSON decoder the parsers use, charges each call the characters it consumed, and raises
`Exhausted` as soon as the total passes a budget, so a quadratic parser fails fast.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

from tinytools import Tool, Toolbox
from tinytools._toolformat import ToolFormat
from tinytools.formats import _json as json_format
from tinytools.formats import _ptype as ptype
from tinytools.formats import _text
from tinytools.formats import _xml as xml

PIECES = [
    "", " ", "  padded  ", "\n", "a\nb", "\r\n", "\t", '"quoted"', "'single'", "it's \"both\"",
    "<b>bold</b>", "</query>", "<search>", "</search>", "AT&T", "&amp;", "&#10;", "&lt;", "]]>",
    "<![CDATA[x]]>", "<!-- c -->", "\\", "\\n", "\\u0041", "null", "true", "None", "3", "-1.5", "[1]",
    '{"a": 1}', '{"name": "search", "arguments": {}}', 'search("x")', '"', "😀", "é\u2028", "\x00",
    "\x7f", "{", "}", "(", ")", ",", "=", "'''", '"""',
]  # fmt: skip

tricky_text = st.one_of(
    st.sampled_from(PIECES),
    st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=4).map("".join),
    st.text(max_size=12),
)
finite = st.floats(allow_nan=False, allow_infinity=False)
ints = st.integers(min_value=-(2**70), max_value=2**70)
json_values = st.recursive(
    st.none() | st.booleans() | ints | finite | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=6,
)
KEYS = ["query", "limit", "q", "x_1", "ünï", "_private", "class", "data", "item", "search"]

Pair = tuple[Any, st.SearchStrategy[Any]]

LEAVES: list[Pair] = [
    ({"type": "string"}, tricky_text),
    ({"type": "integer"}, ints),
    ({"type": "number"}, finite | st.integers(-(10**6), 10**6)),
    ({"type": "boolean"}, st.booleans()),
    ({"type": "null"}, st.none()),
    ({"type": ["string", "null"]}, st.none() | tricky_text),
    ({"type": ["integer", "string"]}, ints | tricky_text),
    ({"enum": ["a", "b c", "<x>", 1, None, "3"]}, st.sampled_from(["a", "b c", "<x>", 1, None, "3"])),
    ({"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 8}]}, st.booleans() | st.text(max_size=8)),
    ({}, json_values),
]


def _extend(inner: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    arrays = inner.map(lambda pair: ({"type": "array", "items": pair[0]}, st.lists(pair[1], max_size=3)))
    maps = inner.map(
        lambda pair: (
            {"type": "object", "additionalProperties": pair[0]},
            st.dictionaries(tricky_text, pair[1], max_size=3),
        )
    )
    return arrays | maps | objects(inner)


@st.composite
def objects(draw: st.DrawFn, inner: st.SearchStrategy[Pair]) -> Pair:
    names = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    pairs = {name: draw(inner) for name in names}
    required = [name for name in names if draw(st.booleans())]
    schema = {
        "type": "object",
        "properties": {name: pair[0] for name, pair in pairs.items()},
        "required": required,
        "additionalProperties": False,
    }
    values = st.fixed_dictionaries(
        {name: pairs[name][1] for name in required},
        optional={name: pair[1] for name, pair in pairs.items() if name not in required},
    )
    return schema, values


schemas_and_values: st.SearchStrategy[Pair] = st.recursive(st.sampled_from(LEAVES), _extend, max_leaves=4)


def echo(**arguments: Any) -> dict[str, Any]:
    return arguments


@st.composite
def tools_and_arguments(draw: st.DrawFn) -> tuple[Tool[..., Any], Toolbox, dict[str, Any]]:
    """A tool with generated parameters, a toolbox with look-alike neighbours, and valid arguments."""
    name = draw(st.sampled_from(["search", "get-weather", "t1", "lookup_v2"]))
    schema, values = draw(objects(schemas_and_values))
    tool = Tool.from_schema(name, "A generated tool.", schema, echo)
    neighbours = [
        Tool.from_schema(other, "A neighbour.", {"type": "object", "additionalProperties": False}, echo)
        for other in (f"{name}_all", f"x{name}", "search" if name != "search" else "query")
    ]
    return tool, Toolbox([tool, *neighbours]), draw(values)


def same(left: Any, right: Any) -> bool:
    """Equal, and of the same types all the way down (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


FORMATS = [ToolFormat.json(), ToolFormat.xml(), ToolFormat.ptype()]


class Exhausted(Exception):
    """The parser did more work than the budget allows."""


class Meter:
    """Counts the characters the parsers' regular expressions and decoders consume."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.characters = 0
        self.calls = 0

    def charge(self, characters: int) -> None:
        self.characters += characters
        self.calls += 1
        if self.characters > self.budget or self.calls > self.budget:
            raise Exhausted(f"{self.characters} characters in {self.calls} calls; budget {self.budget}")


class CountingPattern:
    """A compiled expression that charges each call what it consumed (a failed search: the rest)."""

    def __init__(self, pattern: re.Pattern[str], meter: Meter) -> None:
        self.pattern = pattern
        self.meter = meter

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.pattern.match(string, pos, endpos)
        self.meter.charge((found.end() if found else pos) - pos + 1)
        return found

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.pattern.search(string, pos, endpos)
        self.meter.charge((found.end() if found else len(string)) - pos + 1)
        return found

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self.meter.charge(len(string) + 1)
        return self.pattern.sub(repl, string, count)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        self.meter.charge(len(string) - pos + 1)
        return self.pattern.finditer(string, pos, endpos)


def _counting_decode(meter: Meter) -> Callable[..., Any]:
    def decode(data: Any, **options: Any) -> Any:
        meter.charge(len(data) + 1)
        return msgspec.json.decode(data, **options)

    return decode


@contextmanager
def metered(monkeypatch: pytest.MonkeyPatch, budget: int) -> Iterator[Meter]:
    """Route every expression and decoder of the parsers through one `Meter`."""
    meter = Meter(budget)
    for module in (json_format, xml, ptype, _text):
        for name, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, name, CountingPattern(value, meter))
            elif isinstance(value, dict) and value and all(isinstance(v, re.Pattern) for v in value.values()):
                monkeypatch.setattr(module, name, {k: CountingPattern(v, meter) for k, v in value.items()})
        if hasattr(module, "_decode"):
            monkeypatch.setattr(module, "_decode", _counting_decode(meter))
    original = _text.candidate_pattern

    def candidates(*args: Any) -> Any:
        found = original(*args)
        return None if found is None else CountingPattern(found, meter)

    monkeypatch.setattr(_text, "candidate_pattern", candidates)
    original_id = _text.call_id

    def counted_id(turn: str, offset: int, index: int, content: str) -> str:
        meter.charge(len(content) + 1)
        return original_id(turn, offset, index, content)

    monkeypatch.setattr(_text, "call_id", counted_id)
    yield meter
