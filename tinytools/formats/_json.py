"""The JSON call syntax: ``{"name": "search", "arguments": {"query": "rust"}}`` in free text.

Reading accepts the variants models emit: ``"parameters"`` (or ``"args"``, ``"input"``) for
``"arguments"``, arguments as a JSON string, ``"tool"``/``"tool_name"`` for ``"name"``, a list
of calls, and calls nested in a wrapper such as ``{"tool_calls": [...]}`` or OpenAI's
``{"function": {...}}``.

Finding JSON in prose is a light scan from each ``{"`` (or ``[{"``): it tracks brackets and
strings and stops at the first character JSON cannot hold there, so prose costs little. A
closed value is decoded by msgspec. Scanning resumes where the previous scan stopped, which
keeps the whole pass linear in the text.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError
from tinytools._results import ToolResult
from tinytools._schema.strict_json import refuse_repeated_keys
from tinytools._tool import Tool
from tinytools.formats._common import Found, example_arguments, json_text, parameter_lines

__all__ = ["CANDIDATE", "decode_once", "render_call", "render_declaration", "render_result", "scan"]

CANDIDATE = r"\{(?=\s*\")|\[(?=\s*\{\s*\")"
"""Where a JSON call may start: an object with a key, or a list of such objects."""

NAME_KEYS = ("name", "tool", "tool_name")
"""Keys that name the tool."""
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
"""Keys that hold the arguments."""

MAX_DEPTH = 64
"""Deepest bracket nesting a scan follows."""

_FILL = re.compile(r"[\s,:0-9eE.+\-truefalsn]*")
_STRING = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*(")?')
_KEY_END = re.compile(r"\s*:")
_decode = msgspec.json.decode


def render_declaration(tool: Tool[..., Any]) -> str:
    """One tool's declaration as JSON (``name``, ``description``, ``parameters``) and an example."""
    declaration = {"name": tool.name, "description": tool.description, "parameters": tool.input_schema}
    lines = [f"## {tool.name}", json_text(declaration), "Parameters:", *parameter_lines(tool)]
    lines += ["Example:", render_call(tool.name, example_arguments(tool))]
    return "\n".join(lines)


def render_call(name: str, arguments: dict[str, Any]) -> str:
    """A call as one JSON object."""
    return json_text({"name": name, "arguments": arguments})


def render_result(result: ToolResult) -> str:
    """A result as one JSON object with the call's id, the tool, the status and output or error."""
    body: dict[str, Any] = {"id": result.call_id, "name": result.name, "status": result.status}
    if result.error is not None:
        body["error"] = {"code": result.error.code, "message": result.text()}
    else:
        structured = result.structured()
        body["output"] = result.text() if structured is None and result.content else structured
    return json_text({"tool_result": body})


class _Node:
    """One ``{...}`` or ``[...]`` met by a scan."""

    __slots__ = ("args", "children", "end", "expect_name", "is_object", "marked", "name", "start")

    def __init__(self, start: int, is_object: bool) -> None:
        self.start = start
        self.is_object = is_object
        self.end = -1
        self.children: list[_Node] = []
        self.name: str | None = None
        self.args = False
        self.expect_name = False
        self.marked = False  # a name key was seen in this node or below


def scan(text: str, start: int, known: frozenset[str]) -> tuple[list[Found], int]:
    """Read the JSON value starting at ``start``: the calls in it, and where to go on.

    A value that cannot be read but looks like a call (it names a tool) yields one invalid
    call; calls inside a broken wrapper are still found when their own text is sound.
    """
    root, stop, error = _scan(text, start)
    if error is None:
        try:
            return _calls(decode_once(text[start:stop]), start, text[start:stop], known), stop
        except (msgspec.DecodeError, ArgumentsError, RecursionError) as exc:
            error = _reason(exc)
    return _salvage(text, root, stop, error, known), stop


def _scan(text: str, start: int) -> tuple[_Node, int, str | None]:
    root = _Node(start, text[start] == "{")
    stack = [root]
    pos = start + 1
    size = len(text)
    while True:
        pos = _FILL.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= size:
            return _unwind(stack), size, "the JSON is not closed"
        char = text[pos]
        if char == '"':
            match = _STRING.match(text, pos)
            end = match.end()  # type: ignore[union-attr]
            if match.group(1) is None:  # type: ignore[union-attr]
                return _unwind(stack), end, "a string is not closed on its line"
            _string(text, pos, end, stack[-1])
            pos = end
        elif char in "{[":
            if len(stack) >= MAX_DEPTH:
                return _unwind(stack), pos, f"the JSON is nested deeper than {MAX_DEPTH} levels"
            node = _Node(pos, char == "{")
            stack[-1].children.append(node)
            stack[-1].expect_name = False
            stack.append(node)
            pos += 1
        elif char in "}]":
            if (char == "}") != stack[-1].is_object:
                return _unwind(stack), pos, f"unexpected {char!r} at offset {pos - start}"
            node = stack.pop()
            node.end = pos = pos + 1
            if not stack:
                return root, pos, None
            stack[-1].marked = stack[-1].marked or node.marked
        else:
            return _unwind(stack), pos, f"unexpected {char!r} at offset {pos - start}"


def _unwind(stack: list[_Node]) -> _Node:
    """Pass the marks of the nodes left open up to the root, and return the root."""
    for inner, outer in zip(reversed(stack), reversed(stack[:-1]), strict=False):
        outer.marked = outer.marked or inner.marked
    return stack[0]


def _string(text: str, start: int, end: int, node: _Node) -> None:
    """Note what a string tells about its object: a name key, its value, an arguments key."""
    if not node.is_object:
        return
    if _KEY_END.match(text, end) is not None:
        key = text[start + 1 : end - 1] if end - start < 40 else ""
        node.expect_name = key in NAME_KEYS
        node.marked = node.marked or node.expect_name
        node.args = node.args or key in ARGUMENT_KEYS
    elif node.expect_name:
        node.expect_name = False
        if node.name is None and end - start < 200:
            try:
                node.name = _decode(text[start:end])
            except msgspec.DecodeError:
                node.name = text[start + 1 : end - 1]


def _salvage(text: str, node: _Node, stop: int, error: str, known: frozenset[str], top: bool = True) -> list[Found]:
    """Calls from a value that failed to decode: one invalid call, or the sound ones inside.

    Only the objects that read as calls are decoded, each once, and calls do not nest: however
    deep the broken value, each character is decoded at most once more.
    """
    name = _call_name(node, known, top)
    if name is not None:
        end = node.end if node.end >= 0 else stop
        return [Found(node.start, text[node.start : end], name, invalid=f"the JSON call cannot be read: {error}")]
    found: list[Found] = []
    listed = top and not node.is_object  # a list of calls: each may omit its arguments
    for child in node.children:
        if not child.marked:
            continue
        if child.end < 0 or _call_name(child, known, listed) is None:
            found += _salvage(text, child, stop, error, known, listed)
            continue
        span = text[child.start : child.end]
        try:
            found += _calls(decode_once(span), child.start, span, known)
        except (msgspec.DecodeError, ArgumentsError, RecursionError) as exc:
            found += _salvage(text, child, child.end, _reason(exc), known, listed)
    return found


def _call_name(node: _Node, known: frozenset[str], top: bool) -> str | None:
    """The tool's name if the node reads as a call: a name and arguments (or a known name at the top)."""
    return node.name if node.name is not None and (node.args or (top and node.name in known)) else None


def decode_once(text: str) -> Any:
    """Decode JSON text in which no object names a key twice (parsers disagree on which wins).

    Raises:
        msgspec.DecodeError: The text is not JSON.
        ArgumentsError: An object in it repeats a key.
    """
    value = _decode(text)
    if isinstance(value, (dict, list)) and ":" in text:
        refuse_repeated_keys(text, value)
    return value


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "the JSON is nested too deeply"
    if isinstance(exc, ArgumentsError):
        return exc.reason
    return str(exc).removeprefix("JSON is malformed: ")


def _calls(value: Any, offset: int, raw: str, known: frozenset[str]) -> list[Found]:
    """Every call in a decoded value, in document order; a call's own arguments are not searched."""
    found: list[Found] = []
    pending: list[tuple[Any, bool]] = [(value, True)]
    while pending:
        item, top = pending.pop()
        if isinstance(item, dict):
            call = _call(item, offset, raw, known, top)
            if call is not None:
                found.append(call)
                continue
            children = item.values()
        else:
            children = item
        listed = top and isinstance(item, list)  # a list of calls: each may omit its arguments
        pending.extend((child, listed) for child in reversed(children) if isinstance(child, (dict, list)))
    return found


def _call(item: dict[str, Any], offset: int, raw: str, known: frozenset[str], top: bool) -> Found | None:
    name = next((item[key] for key in NAME_KEYS if isinstance(item.get(key), str)), None)
    key = next((key for key in ARGUMENT_KEYS if key in item), None)
    if name is None or not (key is not None or (top and name in known)):
        return None
    given_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
    arguments = item[key] if key is not None else {}
    if isinstance(arguments, str):
        try:
            arguments = decode_once(arguments)
        except (msgspec.DecodeError, ArgumentsError) as exc:
            reason = f"the arguments string is not JSON: {_reason(exc)}"
            return Found(offset, raw, name, invalid=reason, id=given_id)
    if not isinstance(arguments, dict):
        reason = f'"{key}" must be a JSON object of arguments; send {{}} when there are none'
        return Found(offset, raw, name, invalid=reason, id=given_id)
    return Found(offset, raw, name, arguments=arguments, id=given_id)
