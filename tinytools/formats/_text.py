"""Tools and calls as prompt text, and calls read back from a model's reply, in any syntax.

`parse_calls` makes one forward pass over the reply. One regular expression finds the next
place a call may start (``{"`` for JSON, ``<name`` for an XML tool, ``name(`` for a p-type
tool); the syntax's reader takes over from there and says where to go on. Readers never step
back before where the previous one stopped, so the pass is linear in the reply.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from tinytools._public import publish
from tinytools._results import ToolCall, ToolResult
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox
from tinytools._toolformat import ToolFormat
from tinytools.formats import _json as json_format
from tinytools.formats import _ptype as ptype
from tinytools.formats import _xml as xml
from tinytools.formats._common import Found, call_id, format_of, json_text

__all__ = ["parse_calls", "render_call", "render_result", "render_tools"]

_INSTRUCTIONS = {
    "json": (
        "To call a tool, write a JSON object naming it and giving its arguments:\n"
        '{"name": "<tool name>", "arguments": {<argument>: <value>, ...}}\n'
        "For several calls, write one object per call, in the order they should run."
    ),
    "xml": (
        "To call a tool, write an element named after it, with one child element per argument:\n"
        "<tool_name><argument>value</argument></tool_name>\n"
        "Write text as it is, escaping & and < as &amp; and &lt; (or wrap it in <![CDATA[...]]>); "
        "write numbers, true, false and null as they are, and lists and objects as JSON. "
        "For several calls, write one element per call, in order."
    ),
    "ptype": (
        "To call a tool, write it like a function call, with arguments by position or by name:\n"
        'tool_name("text", 5) or tool_name(argument="text", other=5)\n'
        'Values are literals: "text" (with \\" and \\n escapes), numbers, True, False, None '
        '(or true, false, null), [lists] and {"key": value} objects. '
        "For several calls, write one call each, in order."
    ),
}
_decode = msgspec.json.decode


def render_tools(
    toolbox: Toolbox | Iterable[Tool[..., Any]], format: ToolFormat | None = None, *, revealed: Iterable[str] = ()
) -> str:
    """The prompt text that declares the tools and how to call them.

    Args:
        toolbox: The tools to declare.
        format: One syntax for every tool; None shows each tool in its own format.
        revealed: Deferred tools to declare, after the others (``dispatcher.revealed``); the
            other deferred tools are left out.
    """
    groups: dict[str, list[str]] = {}
    for tool in (toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)).shown(revealed):
        chosen = _chosen(tool, format)
        groups.setdefault(chosen.syntax, []).append(_declaration(tool, chosen))
    sections = [_INSTRUCTIONS[syntax] + "\n\n" + "\n\n".join(blocks) for syntax, blocks in groups.items()]
    return "\n\n".join(sections)


def render_call(call: ToolCall, tool: Tool[..., Any], *, format: ToolFormat | None = None) -> str:
    """A call as the model would write it, in the tool's format (or ``format``).

    A call marked invalid renders as the raw text it was read from.

    Raises:
        ValueError: The arguments are not a JSON object.
    """
    if call.invalid is not None and isinstance(call.arguments, str):
        return call.arguments
    arguments = call.arguments
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = _decode(arguments)
        except msgspec.DecodeError as exc:
            raise ValueError(f"the arguments of call {call.id!r} are not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of call {call.id!r} are not a JSON object")
    chosen = _chosen(tool, format)
    if chosen.syntax == "xml":
        return xml.render_call(tool, arguments)
    if chosen.syntax == "ptype":
        return ptype.render_call(tool, arguments, chosen)
    return json_format.render_call(tool.name, arguments)


def render_result(result: ToolResult, format: ToolFormat) -> str:
    """A result as text for the next prompt, in the syntax the call was made in."""
    if format.syntax == "xml":
        return xml.render_result(result)
    if format.syntax == "ptype":
        return ptype.render_result(result)
    return json_format.render_result(result)


def parse_calls(
    text: str,
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    format: ToolFormat | None = None,
    turn: str | None = None,
) -> list[ToolCall]:
    """Every call in a model's reply, in order, as `ToolCall` objects ready to dispatch.

    By default each tool is read in its own format, and JSON calls are read for every tool.
    With ``format``, every tool is read in that one syntax only. A call that cannot be read
    is kept, with ``invalid`` set to the reason and its raw text as ``arguments``. Calls without
    an id get one from ``turn``, their position and their text: give ``turn`` (anything unique in
    the run, such as the turn's number) and the same reply read again gives the same ids; without
    it, each read makes ids of its own, so two turns that say the same never share a call id.
    """
    tools = {tool.name: tool for tool in _tools(toolbox)}
    syntaxes = {name: _chosen(tool, format) for name, tool in tools.items()}
    use_json = format is None or format.syntax == "json"
    xml_names = frozenset(name for name, chosen in syntaxes.items() if chosen.syntax == "xml")
    ptype_names = frozenset(name for name, chosen in syntaxes.items() if chosen.syntax == "ptype")
    pattern = candidate_pattern(use_json, tuple(sorted(xml_names)), tuple(sorted(ptype_names)))
    if pattern is None:
        return []
    lone = [match.start() for match in _SURROGATE.finditer(text)]
    if lone:  # not Unicode: read the rest as written, and refuse each call that holds one
        text = _SURROGATE.sub("\ufffd", text)
    found: list[Found] = []
    known = frozenset(tools)
    pos = 0
    while (match := pattern.search(text, pos)) is not None:
        start = match.start()
        if match.lastgroup == "json":
            calls, pos = json_format.scan(text, start, known)
            found += calls
        elif match.lastgroup == "xml":
            call, pos = xml.scan(text, start, tools[match.group("xml")[1:]], xml_names)
            found += [call] if call is not None else []
        else:
            name = match.group("ptype")[:-1]
            call, pos = ptype.scan(text, start, match.end() - 1, tools[name], syntaxes[name])
            found.append(call)
    if lone:
        found = [_without_surrogates(item, lone) for item in found]
    made = turn if turn is not None else os.urandom(8).hex()
    return [_tool_call(item, index, made) for index, item in enumerate(found)]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(found: Found, lone: list[int]) -> Found:
    """The call, invalid if its text held a lone surrogate (replaced in ``raw`` so it encodes)."""
    first = bisect.bisect_left(lone, found.offset)  # positions are in order: one search, not a scan
    held = first < len(lone) and lone[first] < found.offset + len(found.raw)
    if not held or found.invalid is not None:
        return found
    reason = "the call holds a lone surrogate, which is not Unicode text; write the call again"
    return Found(found.offset, found.raw, found.name, invalid=reason, id=found.id)


@functools.lru_cache(maxsize=256)
def candidate_pattern(
    use_json: bool, xml_names: tuple[str, ...], ptype_names: tuple[str, ...]
) -> re.Pattern[str] | None:
    """The expression that finds where the next call may start, for one set of tool names."""
    branches = []
    if use_json:
        branches.append(f"(?P<json>{json_format.CANDIDATE})")
    if xml_names:
        branches.append(f"(?P<xml><{_alternatives(xml_names)})(?=[\\s/>])")
    if ptype_names:
        branches.append(f"(?<![\\w.-])(?P<ptype>{_alternatives(ptype_names)}\\()")
    return re.compile("|".join(branches)) if branches else None


def _alternatives(names: tuple[str, ...]) -> str:
    return "(?:" + "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)) + ")"


def _tool_call(found: Found, index: int, turn: str) -> ToolCall:
    if found.invalid is not None:
        identifier = found.id or call_id(turn, found.offset, index, found.raw)
        return ToolCall(identifier, found.name, found.raw, invalid=found.invalid)
    # several JSON calls can share one raw text (a list of calls), so hash what each one says
    identifier = found.id or call_id(turn, found.offset, index, json_text([found.name, found.arguments]))
    return ToolCall(identifier, found.name, found.arguments)


def _tools(toolbox: Toolbox | Iterable[Tool[..., Any]]) -> list[Tool[..., Any]]:
    return list(toolbox) if isinstance(toolbox, Toolbox) else list(Toolbox(toolbox))


def _chosen(tool: Tool[..., Any], format: ToolFormat | None) -> ToolFormat:
    """The format a tool is shown in: its own, or ``format`` (keeping the tool's positional order)."""
    own = format_of(tool)
    if format is None:
        return own
    if format.syntax == "ptype":
        if format.order is not None and all(name in tool.schema.properties for name in format.order):
            return format
        return own if own.syntax == "ptype" else ToolFormat.ptype()
    return format


def _declaration(tool: Tool[..., Any], chosen: ToolFormat) -> str:
    if chosen.syntax == "xml":
        return xml.render_declaration(tool)
    if chosen.syntax == "ptype":
        return ptype.render_declaration(tool, chosen)
    return json_format.render_declaration(tool)


publish("tinytools.formats", render_tools, render_call, render_result, parse_calls)
