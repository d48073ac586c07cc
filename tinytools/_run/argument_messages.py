"""The invalid-arguments message: what a call whose arguments fail the schema reads.

One failure reads ``Invalid arguments: tool 'x', argument 'a' at /a/b: <reason>. Schema of 'a':
<the argument's schema>``; a failure inside an argument quotes the failing value's own schema;
several failures are listed one per line, the rest counted. Text that is malformed JSON reads as
such. The parts that do not change from call to call (the place before the pointer, the quoted
schema after the reason) are made once per tool and argument and kept in the tool's `memo`, so a bad call costs
a few string joins; `ArgumentsError` is worded from the same parts (`argument_place`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tinytools._errors import ECHO_LIMIT, ArgumentsError, argument_place, shorten
from tinytools._results import ToolCall, ToolResult
from tinytools._run.failures import failed
from tinytools._schema.fragments import resolved_text

if TYPE_CHECKING:
    from tinytools._tool import Tool

__all__ = ["argument_failure", "fragment", "framing", "quoted"]

QUOTED_LIMIT = 400
"""Longest schema fragment quoted in a message, in characters."""


def argument_failure(call: ToolCall, tool: Tool[..., Any], error: ArgumentsError, start: int) -> ToolResult:
    """The result for arguments that are not JSON, or that failed the schema."""
    name = error.tool = tool.name
    keyword = error.keyword
    if keyword == "json":
        if call.invalid is not None:  # a call written in text (JSON, XML or p-type) that did not parse
            reason = shorten(call.invalid)
            message = f"The call to tool {tool.name!r} could not be read ({reason}). Write the call again."
        else:
            message = (
                f"The arguments for tool {tool.name!r} could not be read as JSON ({shorten(error.reason)}). "
                "Send the arguments again as one JSON object."
            )
        return failed(call, tool.name, "malformed_arguments", message, start)
    if len(error._listed) > 1:  # several failures: name them all (`errors`, without its property's call)
        return failed(call, name, "invalid_arguments", _listing(tool, error), start, _details(error))
    parameter, pointer = error.parameter, error.pointer
    if parameter is None:
        message = f"Invalid arguments: {error}."
        details = {"pointer": shorten(pointer), "keyword": keyword}
    else:
        # the same text as str(error) and the argument's schema, from parts kept per argument:
        # this is the hot path of a bad call
        head, tail = framing(tool, parameter)
        if pointer and (pointer.count("/") != 1 or keyword == "required"):  # inside the argument (see `_tail`)
            tail = _tail(tool, error, tail)
        place = pointer if 0 < len(pointer) <= ECHO_LIMIT else shorten(pointer or "/")
        message = f"{head}{place}: {error.reason}{tail}"
        if len(parameter) > ECHO_LIMIT:  # a key the model made up, as long as it wrote it: cut as the message cuts it
            pointer, parameter = place, shorten(parameter)
        details = {"pointer": pointer, "keyword": keyword, "parameter": parameter}
    return failed(call, name, "invalid_arguments", message, start, details)


def _tail(tool: Tool[..., Any], error: ArgumentsError, argument_tail: str) -> str:
    """What follows the reason: the argument's schema, or, for a failure inside it, the failing value's own."""
    parameter, pointer = error.parameter, error.pointer
    if parameter is None or pointer == "" or (pointer.count("/") == 1 and error.keyword != "required"):
        return argument_tail  # the argument itself failed (or is missing, or unknown): its schema is the leaf
    return "." if error.schema is None else f". Schema: {quoted(tool, error.schema)}"


def _listing(tool: Tool[..., Any], error: ArgumentsError) -> str:
    """The message for several failures: one line each, as a single failure's, then the count left out."""
    lines = [f"Invalid arguments: tool {tool.name!r}, {len(error.errors) + error.unlisted} problems:"]
    for each in error.errors:
        parameter = each.parameter
        if parameter is None:
            lines.append(f"- {each}.")
        else:
            tail = _tail(tool, each, framing(tool, parameter)[1])
            lines.append(f"- {argument_place(None, parameter)}{shorten(each.pointer or '/')}: {each.reason}{tail}")
    if error.unlisted:
        lines.append(f"- and {error.unlisted} more, not listed.")
    return "\n".join(lines)


def _details(error: ArgumentsError) -> dict[str, Any]:
    """The first failure's fields, then every failing argument listed (``errors``) and the count left out.

    Pointers and names are cut as the message cuts them: a key the model made up is as long as it
    wrote it.
    """
    details: dict[str, Any] = {"pointer": shorten(error.pointer), "keyword": error.keyword}
    if error.parameter is not None:
        details["parameter"] = shorten(error.parameter)
    details["errors"] = [
        {"pointer": shorten(each.pointer), "keyword": each.keyword, "reason": each.reason}
        | ({} if each.parameter is None else {"parameter": shorten(each.parameter)})
        for each in error.errors
    ]
    details["unlisted"] = error.unlisted
    return details


def fragment(tool: Tool[..., Any], parameter: str) -> str | None:
    """The JSON text of one argument's schema, as a message quotes it (made once per tool and argument).

    Each ``$ref`` to ``$defs`` is shown as the definition it names (a recursive one once), so
    the fragment stands on its own.
    """
    kept: dict[str, str] | None = tool.memo.get("fragments")
    if kept is None:
        kept = tool.memo["fragments"] = {}
    cached = kept.get(parameter)
    if cached is None and parameter in tool.schema.properties:
        cached = kept[parameter] = quoted(tool, tool.schema.properties[parameter])
    return cached


def quoted(tool: Tool[..., Any], schema: Any) -> str:
    """A fragment of the tool's input schema as a message quotes it: JSON, ``$ref``s resolved, cut short."""
    return resolved_text(schema, tool.input_schema.get("$defs", {}), QUOTED_LIMIT)


def framing(tool: Tool[..., Any], parameter: str) -> tuple[str, str]:
    """The text around an invalid-argument message for ``parameter``: before its pointer, after its reason.

    Kept for the tool's own arguments (a key the model made up is worded afresh: their number is
    unbounded).
    """
    kept: dict[str, tuple[str, str]] | None = tool.memo.get("framings")
    if kept is None:
        kept = tool.memo["framings"] = {}
    cached = kept.get(parameter)
    if cached is not None:
        return cached
    schema = fragment(tool, parameter)
    tail = "." if schema is None else f". Schema of {shorten(parameter)!r}: {schema}"
    made = f"Invalid arguments: {argument_place(tool.name, parameter)}", tail
    if parameter in tool.schema.properties:
        kept[parameter] = made
    return made
