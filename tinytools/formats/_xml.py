"""The XML call syntax: ``<get_weather><city>Paris</city><days>3</days></get_weather>``.

Only a tag that names a tool starts a call, and an unclosed call is invalid, never guessed.
Values are text, coerced by the tool's schema: a parameter that may be a string keeps its
text (JSON only where another type is also allowed and the text reads as one); other types
read the text as JSON (``3``, ``true``, ``null``, ``[1, 2]``) or, for arrays and objects,
from child elements (``<tags><item>a</item><item>b</item></tags>``, or the parameter
repeated). Surrounding whitespace is ignored; the five predefined entities, character
references and CDATA sections are decoded; no DTD is read, so nothing expands.

The reader is a small tokenizer of our own that only moves forward, so each call costs time
linear in its text.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias

import msgspec

from tinytools._errors import ArgumentsError
from tinytools._results import ToolResult
from tinytools._tool import Tool
from tinytools.formats._common import (
    Found,
    accepts,
    allowed_types,
    example_arguments,
    item_schema,
    json_text,
    parameter_lines,
    property_schema,
)
from tinytools.formats._json import decode_once

__all__ = ["coerce_text", "escape", "render_call", "render_declaration", "render_result", "scan"]

MAX_DEPTH = 32
"""Deepest element nesting read inside one call."""

Node: TypeAlias = "str | list[tuple[str, Node]]"
"""An element's content: its decoded text, or its child elements in order."""

_WHITESPACE = " \t\r\n"
_TEXT = re.compile(r"[^<]*(?:<(?![\w.:/!-])[^<]*)*")  # a "<" that cannot start a tag is text
_TAG = re.compile(r"<(/?)([\w.:-]+)([^<>]*?)(/?)>")
_CDATA_END = re.compile(r"\]\]>")
_COMMENT_END = re.compile(r"-->")
_ENTITY = re.compile(r"&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(lt|gt|amp|quot|apos));")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_PYTHON = {"True": True, "False": False, "None": None}
_decode = msgspec.json.decode


def escape(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` for element text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _escape_edges(text: str) -> str:
    """Escape text, writing leading and trailing whitespace as character references."""
    body = escape(text)
    left = len(body) - len(body.lstrip(_WHITESPACE))
    right = len(body.rstrip(_WHITESPACE)) if left < len(body) else len(body)
    if left == 0 and right == len(body):
        return body
    refs = "".join(f"&#{ord(char)};" for char in body[:left])
    return refs + body[left:right] + "".join(f"&#{ord(char)};" for char in body[right:])


def _unescape(text: str) -> str:
    return _ENTITY.sub(_entity, text) if "&" in text else text


def _entity(match: re.Match[str]) -> str:
    named = match.group(3)
    if named is not None:
        return _NAMED[named]
    number = int(match.group(1)) if match.group(1) is not None else int(match.group(2), 16)
    if number == 0 or number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
        return match.group()
    return chr(number)


def coerce_text(text: str, types: frozenset[str]) -> Any:
    """Read an element's text as a value of one of ``types`` (JSON type names).

    Text stays text where only a string is allowed. Otherwise JSON is tried (and ``True``,
    ``False``, ``None``); text that does not read as an allowed type stays text, for the
    validator to refuse with a message the model can act on.

    Raises:
        ArgumentsError: The text is JSON in which an object names a key twice.
    """
    if types == {"string"}:
        return text
    if "string" not in types and not text and "null" in types:
        return None
    try:
        value = decode_once(text)
    except (msgspec.DecodeError, RecursionError):
        return _PYTHON.get(text, text) if "string" not in types else text
    return value if "string" not in types or accepts(types, value) else text


def render_value(value: Any, schema: Any, root: dict[str, Any]) -> str:
    """One argument's element text: plain text where it reads back as itself, else JSON."""
    types = allowed_types(schema, root)
    if isinstance(value, str) and "string" in types:
        back = coerce_text(value, types)
        if back.__class__ is str and back == value:
            return _escape_edges(value)
    return escape(json_text(value))


def render_call(tool: Tool[..., Any], arguments: dict[str, Any]) -> str:
    """A call as an element named after the tool, one child element per argument."""
    root = tool.input_schema
    lines = [f"<{tool.name}>"]
    for name, value in arguments.items():
        schema = property_schema(root, name, root)
        lines.append(f"<{name}>{render_value(value, schema, root)}</{name}>")
    lines.append(f"</{tool.name}>")
    return "\n".join(lines)


def render_declaration(tool: Tool[..., Any]) -> str:
    """One tool's declaration: name, description, parameters and an example call."""
    lines = [f"## {tool.name}", tool.description, "Parameters:", *parameter_lines(tool)]
    lines += ["Example:", render_call(tool, example_arguments(tool))]
    return "\n".join(line for line in lines if line)


def render_result(result: ToolResult) -> str:
    """A result as a ``<tool_result>`` element with the tool, call id and status as attributes."""
    attributes = f'name="{_attribute(result.name)}" id="{_attribute(result.call_id)}" status="{result.status}"'
    return f"<tool_result {attributes}>\n{escape(result.text())}\n</tool_result>"


def _attribute(text: str) -> str:
    return escape(text).replace('"', "&quot;")


class _Malformed(Exception):
    def __init__(self, reason: str, stop: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stop = stop


def scan(text: str, start: int, tool: Tool[..., Any], tools: frozenset[str]) -> tuple[Found | None, int]:
    """Read the call whose start tag is at ``start``; ``tools`` are the names that start calls.

    Returns the call (invalid when it cannot be read) and where to go on, or None for a tag
    only mentioned in inline code (`` `<search>` ``).
    """
    tag = _TAG.match(text, start)
    if tag is not None and text[start - 1 : start] == "`" == text[tag.end() : tag.end() + 1]:
        return None, tag.end()
    reader = _Reader(text, tool, tools)
    try:
        arguments = reader.call(start, tag)
    except _Malformed as exc:
        stop = max(exc.stop, start + 1)
        return Found(start, text[start:stop], tool.name, invalid=exc.reason), stop
    return Found(start, text[start : reader.pos], tool.name, arguments=arguments), reader.pos


class _Reader:
    """Reads one call forward from its start tag."""

    def __init__(self, text: str, tool: Tool[..., Any], tools: frozenset[str]) -> None:
        self.text = text
        self.tool = tool
        self.root = tool.input_schema
        self.tools = tools
        self.pos = 0

    def call(self, start: int, tag: re.Match[str] | None) -> dict[str, Any]:
        name = self.tool.name
        if tag is None or tag.group(2) != name:
            raise _Malformed(f"the <{name}> tag is not closed with '>'", start + 1 + len(name))
        self.pos = tag.end()
        if tag.group(3).strip():
            raise _Malformed(f"<{name}> has attributes; write each argument as a child element", self.pos)
        if tag.group(4):
            return {}
        content = self.elements(name, self.root, 0)
        if isinstance(content, str):
            if content:
                reason = f"<{name}> holds bare text; write each argument as <name>value</name>"
                raise _Malformed(reason, self.pos)
            return {}
        return self.object(name, content, self.root)

    def content(self, name: str, schema: Any, depth: int) -> Node:
        if schema is None or "string" in allowed_types(schema, self.root):
            return self.string(name)
        return self.elements(name, schema, depth)

    def string(self, name: str) -> str:
        """Text up to ``</name>``; other tags are kept as text, but a call boundary is an error."""
        text, pieces = self.text, list[tuple[bool, str]]()
        while True:
            end = self.text_run(pieces)
            if text.startswith("<![CDATA[", end):
                pieces.append((True, self.cdata(end)))
                continue
            tag = _TAG.match(text, end)
            if tag is None:
                pieces.append((False, "<"))
                self.pos = end + 1
                continue
            self.pos = tag.end()
            if tag.group(1) and tag.group(2) == name:
                return _join(pieces)
            self.boundary(name, tag)
            pieces.append((False, tag.group()))

    def elements(self, name: str, schema: Any, depth: int) -> Node:
        """Child elements up to ``</name>``, or the text there when it holds no elements."""
        if depth > MAX_DEPTH:
            raise _Malformed(f"elements are nested deeper than {MAX_DEPTH} levels", self.pos)
        text, pieces = self.text, list[tuple[bool, str]]()
        children: list[tuple[str, Node]] = []
        while True:
            end = self.text_run(pieces)
            if text.startswith("<![CDATA[", end):
                pieces.append((True, self.cdata(end)))
                continue
            if text.startswith("<!--", end):
                self.pos = self.skip_comment(end)
                continue
            tag = _TAG.match(text, end)
            if tag is None:
                pieces.append((False, "<"))
                self.pos = end + 1
                continue
            self.pos = tag.end()
            if tag.group(1):
                if tag.group(2) == name:
                    break
                raise _Malformed(f"unexpected {tag.group()} inside <{name}>", tag.end())
            children.append(self.child(name, schema, tag, end, len(children), depth))
        value = _join(pieces)
        if children and value:
            raise _Malformed(f"<{name}> mixes text and elements", self.pos)
        return children if children else value

    def child(self, parent: str, schema: Any, tag: re.Match[str], at: int, index: int, depth: int) -> tuple[str, Node]:
        name = tag.group(2)
        sub = property_schema(schema, name, self.root)
        if sub is None:
            if name in self.tools:
                raise _Malformed(f"<{parent}> is not closed before <{name}>", at)
            sub = item_schema(schema, index, self.root)
        if tag.group(3).strip():
            raise _Malformed(f"<{name}> has attributes; write its value as the element's text", tag.end())
        return name, "" if tag.group(4) else self.content(name, sub, depth + 1)

    def boundary(self, name: str, tag: re.Match[str]) -> None:
        """Refuse a tag that can only belong to another call, or close this one."""
        if tag.group(1) and tag.group(2) == self.tool.name:
            raise _Malformed(f"<{name}> is not closed before {tag.group()}", tag.end())
        if not tag.group(1) and tag.group(2) in self.tools:
            raise _Malformed(f"<{name}> is not closed before <{tag.group(2)}>", tag.start())

    def text_run(self, pieces: list[tuple[bool, str]]) -> int:
        text, pos = self.text, self.pos
        end = _TEXT.match(text, pos).end()  # type: ignore[union-attr]
        if end > pos:
            pieces.append((False, text[pos:end]))
            self.pos = end
        if end >= len(text):
            raise _Malformed(f"<{self.tool.name}> is not closed; end the call with </{self.tool.name}>", end)
        return end

    def cdata(self, start: int) -> str:
        close = _CDATA_END.search(self.text, start + 9)
        if close is None:
            raise _Malformed("a <![CDATA[ section is not closed with ]]>", len(self.text))
        self.pos = close.end()
        return self.text[start + 9 : close.start()]

    def skip_comment(self, start: int) -> int:
        close = _COMMENT_END.search(self.text, start + 4)
        if close is None:
            raise _Malformed("a comment is not closed with -->", len(self.text))
        return close.end()

    def object(self, name: str, children: list[tuple[str, Node]], schema: Any) -> dict[str, Any]:
        grouped: dict[str, list[Node]] = {}
        for key, node in children:
            grouped.setdefault(key, []).append(node)
        result: dict[str, Any] = {}
        for key, nodes in grouped.items():
            sub = property_schema(schema, key, self.root)
            if len(nodes) == 1:
                result[key] = self.coerce(key, nodes[0], sub)
            elif sub is not None and "array" in allowed_types(sub, self.root):
                result[key] = [
                    self.coerce(key, node, item_schema(sub, index, self.root)) for index, node in enumerate(nodes)
                ]
            else:
                raise _Malformed(f"<{key}> appears {len(nodes)} times in <{name}>", self.pos)
        return result

    def coerce(self, name: str, node: Node, schema: Any) -> Any:
        types = allowed_types(schema, self.root)
        if isinstance(node, str):
            try:
                return coerce_text(node, types)
            except ArgumentsError as exc:  # JSON inside the element that names a key twice
                raise _Malformed(f"<{name}> {exc.reason}", self.pos) from None
        distinct = len({key for key, _ in node}) == len(node)
        if "object" in types and (distinct or "array" not in types):
            return self.object(name, node, schema)
        if "array" in types:
            return [self.coerce(key, child, item_schema(schema, i, self.root)) for i, (key, child) in enumerate(node)]
        raise _Malformed(f"<{name}> holds elements, but its value is not an array or object", self.pos)


def _join(pieces: list[tuple[bool, str]]) -> str:
    """Join text pieces: trim whitespace outside CDATA at both ends, decode entities."""
    first, last = 0, len(pieces)
    while first < last and not pieces[first][0]:
        trimmed = pieces[first][1].lstrip(_WHITESPACE)
        if trimmed:
            pieces[first] = (False, trimmed)
            break
        first += 1
    while last > first and not pieces[last - 1][0]:
        trimmed = pieces[last - 1][1].rstrip(_WHITESPACE)
        if trimmed:
            pieces[last - 1] = (False, trimmed)
            break
        last -= 1
    return "".join(piece if cdata else _unescape(piece) for cdata, piece in pieces[first:last])
