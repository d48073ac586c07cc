"""The p-type call syntax: ``search("rust agents", 5)`` or ``search(query="rust agents", limit=5)``.

Values are literals: strings in either quote (triple quotes too) with Python/JSON escapes,
numbers, ``true``/``false``/``True``/``False``, ``null``/``None``, lists (``[...]`` or
``(...)``) and objects with string keys. Positional values take the names of the tool's
positional order (`ToolFormat.ptype`). The parser is our own: it never evaluates anything,
reads each character once, and refuses nesting deeper than `MAX_DEPTH`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tinytools._errors import shorten
from tinytools._results import ToolResult
from tinytools._tool import Tool
from tinytools._toolformat import ToolFormat
from tinytools.formats._common import Found, example_arguments, json_text, parameter_lines

__all__ = ["MAX_DEPTH", "render_call", "render_declaration", "render_literal", "render_result", "scan"]

MAX_DEPTH = 64
"""Deepest nesting of lists and objects in one call."""

_SPACE = re.compile(r"\s*")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_NAME = re.compile(r"[^\W\d]\w*")
_KEYWORD = re.compile(r"([^\W\d]\w*)\s*=(?!=)")
_STRINGS = {
    '"""': re.compile(r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(""")?', re.S),
    "'''": re.compile(r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(''')?", re.S),
    '"': re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(")?', re.S),
    "'": re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*(')?", re.S),
}
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|([0-7]{1,3})|(.))", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "a": "\a", "\n": ""}
_SIMPLE.update({char: char for char in "\\'\"/"})
_NAMES: dict[str, Any] = {"true": True, "True": True, "false": False, "False": False}
_NAMES.update({"null": None, "None": None})
_CLOSE = {"[": "]", "(": ")", "{": "}"}


def render_literal(value: Any) -> str:
    """A value as a p-type literal (also a Python literal): ``"text"``, ``5``, ``True``, ``None``."""
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(render_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{json_text(str(key))}: {render_literal(item)}" for key, item in value.items())
        return "{" + ", ".join(items) + "}"
    return json_text(value)


def render_call(tool: Tool[..., Any], arguments: dict[str, Any], format: ToolFormat) -> str:
    """A call: leading arguments by position (in the positional order), the rest by keyword."""
    order = format.positional(list(tool.schema.properties))
    parts = []
    count = 0
    while count < len(order) and order[count] in arguments:
        parts.append(render_literal(arguments[order[count]]))
        count += 1
    given = set(order[:count])
    parts += [f"{name}={render_literal(value)}" for name, value in arguments.items() if name not in given]
    return f"{tool.name}({', '.join(parts)})"


def render_declaration(tool: Tool[..., Any], format: ToolFormat) -> str:
    """One tool's declaration: signature, description, parameters and an example call."""
    properties = list(tool.schema.properties)
    order = format.positional(properties)
    keyword_only = [name for name in properties if name not in order]
    signature = ", ".join([*order, *(["*", *keyword_only] if keyword_only else [])])
    lines = [f"## {tool.name}({signature})", tool.description, "Parameters:", *parameter_lines(tool)]
    lines += ["Example:", render_call(tool, example_arguments(tool), format)]
    return "\n".join(line for line in lines if line)


def render_result(result: ToolResult) -> str:
    """A result as ``name -> value``, or ``name -> error(code=..., message=...)``."""
    if result.error is not None:
        code, message = render_literal(result.error.code), render_literal(result.text())
        return f"{result.name} -> error(code={code}, message={message})  # id {result.call_id}"
    structured = result.structured()
    value = result.text() if structured is None and result.content else structured
    return f"{result.name} -> {_output(value)}  # id {result.call_id}"


def _output(value: Any) -> str:
    try:
        return render_literal(value)
    except TypeError:
        return render_literal(str(value))


class _Malformed(Exception):
    def __init__(self, reason: str, stop: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stop = stop


def scan(text: str, start: int, open_paren: int, tool: Tool[..., Any], format: ToolFormat) -> tuple[Found, int]:
    """Read the call ``name(...)`` whose ``(`` is at ``open_paren``; return it and where to go on."""
    parser = _Parser(text, open_paren + 1)
    try:
        positional, keywords = parser.arguments()
        arguments = _name(positional, keywords, tool, format, parser.pos)
    except _Malformed as exc:
        stop = max(exc.stop, open_paren + 1)
        return Found(start, text[start:stop], tool.name, invalid=exc.reason), stop
    return Found(start, text[start : parser.pos], tool.name, arguments=arguments), parser.pos


def _name(
    positional: list[Any], keywords: list[tuple[str, Any]], tool: Tool[..., Any], format: ToolFormat, stop: int
) -> dict[str, Any]:
    """Give positional values their names and refuse a name given twice."""
    order = format.positional(list(tool.schema.properties))
    if len(positional) > len(order):
        listed = ", ".join(order) or "none"
        reason = f"{tool.name} takes at most {len(order)} positional arguments ({listed}); got {len(positional)}"
        raise _Malformed(reason, stop)
    arguments = dict(zip(order, positional, strict=False))
    for name, value in keywords:
        if name in arguments:
            raise _Malformed(f"argument {shorten(name)!r} is given twice", stop)
        arguments[name] = value
    return arguments


class _Parser:
    """A recursive-descent reader of p-type literals, moving forward through the text only."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos
        self.depth = 0

    def fail(self, reason: str, stop: int | None = None) -> _Malformed:
        return _Malformed(reason, self.pos if stop is None else stop)

    def space(self) -> str:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.pos >= len(self.text):
            raise self.fail("the call is not closed with ')'")
        return self.text[self.pos]

    def arguments(self) -> tuple[list[Any], list[tuple[str, Any]]]:
        positional: list[Any] = []
        keywords: list[tuple[str, Any]] = []
        while self.space() != ")":
            keyword = _KEYWORD.match(self.text, self.pos)
            if keyword is not None:
                self.pos = keyword.end()
                keywords.append((keyword.group(1), self.value()))
            elif keywords:
                raise self.fail("a positional argument follows a keyword argument", self.pos + 1)
            else:
                positional.append(self.value())
            if not self.separator(")"):
                break
        self.pos += 1
        return positional, keywords

    def separator(self, close: str) -> bool:
        """Step over a comma and say whether more items may follow, or stop at ``close``."""
        char = self.space()
        if char == ",":
            self.pos += 1
            return True
        if char == close:
            return False
        raise self.fail(f"expected ',' or {close!r}, found {char!r}", self.pos + 1)

    def value(self) -> Any:
        char = self.space()
        if char in "\"'":
            return self.string()
        if char in _CLOSE:
            return self.container(char)
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            return self.number(number)
        name = _NAME.match(self.text, self.pos)
        if name is not None:
            self.pos = name.end()
            if name.group() in _NAMES:
                return _NAMES[name.group()]
            raise self.fail(f"unexpected name {shorten(name.group(), 40)!r}; write text in quotes")
        raise self.fail(f"unexpected {char!r}", self.pos + 1)

    def container(self, opening: str) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"values are nested deeper than {MAX_DEPTH} levels", self.pos + 1)
        self.pos += 1
        close = _CLOSE[opening]
        start = self.pos
        result = self.items(close, self.value if opening != "{" else self.pair)
        self.depth -= 1
        if opening != "{":
            return result
        pairs = dict(result)
        if len(pairs) != len(result):  # parsers disagree on which of two values wins: refuse both
            repeated = _first_repeated([key for key, _ in result])
            raise self.fail(f"the key {shorten(repeated, 40)!r} appears more than once in one object", start)
        return pairs

    def items(self, close: str, read: Callable[[], Any]) -> list[Any]:
        found = []
        while self.space() != close:
            found.append(read())
            if not self.separator(close):
                break
        self.pos += 1
        return found

    def pair(self) -> tuple[str, Any]:
        start = self.pos
        key = self.value()
        if not isinstance(key, str):
            raise self.fail("object keys must be strings", start + 1)
        if self.space() != ":":
            raise self.fail("expected ':' after an object key", self.pos + 1)
        self.pos += 1
        return key, self.value()

    def number(self, match: re.Match[str]) -> int | float:
        self.pos = match.end()
        text = match.group()
        try:
            if any(char in text for char in ".eE"):
                value = float(text)
                if value in (float("inf"), float("-inf")):
                    raise self.fail(f"number {shorten(text, 40)} is out of range")
                return value
            return int(text)
        except ValueError:
            raise self.fail(f"number {shorten(text, 40)} is too long") from None

    def string(self) -> str:
        text, start = self.text, self.pos
        quote = '"""' if text.startswith('"""', start) else "'''" if text.startswith("'''", start) else text[start]
        match = _STRINGS[quote].match(text, start)
        self.pos = end = match.end()  # type: ignore[union-attr]
        if match.group(1) is None:  # type: ignore[union-attr]
            raise self.fail("a string is not closed", end)
        body = text[start + len(quote) : end - len(quote)]
        return _unescape(body, self) if "\\" in body else body


def _unescape(body: str, parser: _Parser) -> str:
    surrogates = False

    def replace(match: re.Match[str]) -> str:
        nonlocal surrogates
        code = match.group(1) or match.group(2) or match.group(3)
        if code is not None:
            value = int(code, 16)
            if value > 0x10FFFF:
                raise parser.fail(f"invalid escape {match.group()}")
            surrogates = surrogates or 0xD800 <= value <= 0xDFFF
            return chr(value)
        if match.group(4) is not None:
            return chr(int(match.group(4), 8))
        char = match.group(5)
        return _SIMPLE.get(char, "\\" + char)

    result = _ESCAPE.sub(replace, body)
    if not surrogates:
        return result
    try:
        return result.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise parser.fail("a \\u escape names half of a surrogate pair") from None


def _first_repeated(keys: list[str]) -> str:
    """The first key that appeared before it (there is one)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    raise AssertionError("no key repeats")
