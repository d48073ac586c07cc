"""OpenAI Responses API: function tools, ``function_call`` items, ``function_call_output`` items.

```python
from tinytools.providers import openai_responses as adapter

response = client.responses.create(model=model, input=items, tools=adapter.export_tools(toolbox))
items += response.output
calls = adapter.read_calls(response)
items += adapter.write_results([dispatch(call, toolbox) for call in calls])
```

A function tool here always carries a ``strict`` key (the API requires one). With
``strict=True`` it shows the strict rendering of the schema (see `tinytools._schema.strict_mode`); pair it
with a dispatcher in strict mode.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from tinytools._results import ImageContent, ResourceContent, ToolCall, ToolResult
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox
from tinytools.providers._common import Media, arguments, field, media, result_text, sequence, shown

__all__ = ["export_tools", "read_calls", "read_revealed", "read_searches", "write_results", "write_search"]

_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}


def export_tools(
    tools: Iterable[Tool[..., Any]],
    *,
    strict: bool = False,
    revealed: Iterable[str] = (),
    tool_search: Literal["hosted", "client"] | None = None,
    namespaces: bool = False,
    output_schema: bool = False,
) -> list[dict[str, Any]]:
    """The ``tools=`` of a Responses request: ``[{"type": "function", "name", ..., "strict"}]``.

    Args:
        tools: A `Toolbox` or any iterable of tools.
        strict: Show the strict-mode rendering and set ``"strict": true``.
        revealed: Deferred tools to show, after the others (``dispatcher.revealed``); the
            other deferred tools are left out.
        tool_search: Let the API search the deferred tools instead: each is declared with
            ``"defer_loading": true`` after the others, and a ``tool_search`` tool comes last,
            run by OpenAI (``"hosted"``) or by the application (``"client"``: answer its
            ``tool_search_call`` items with `write_search`). Read what it found with
            `read_revealed` into ``dispatcher.reveal``.
        namespaces: Declare the tools of a prefixed toolbox (`Toolbox.prefixed`) as one
            ``namespace`` named by the prefix, each under its name without it; `read_calls`
            puts the prefix back on the calls' names.
        output_schema: Declare each tool's output schema (``output_schema``) where it has one.

    Raises:
        SchemaError: ``strict`` is set and a schema cannot be made strict.
    """
    if tool_search is None:
        declared_now = [_function(tool, strict, output_schema) for tool in shown(tools, revealed)]
        return _grouped(declared_now, shown(tools, revealed)) if namespaces else declared_now
    box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    declared = [_function(tool, strict, output_schema) for tool in box.shown()]
    declared += [{**_function(tool, strict, output_schema), "defer_loading": True} for tool in box if tool.defer]
    if tool_search == "hosted":
        declared.append({"type": "tool_search"})
    elif tool_search == "client":
        declared.append({"type": "tool_search", "execution": "client", **_SEARCH})
    else:
        raise ValueError(f"tool_search is 'hosted', 'client' or None, not {tool_search!r}")
    return declared


_SEARCH = {
    "description": "Find tools that are not listed yet by what they do.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words for what the tool should do."}},
        "required": ["query"],
        "additionalProperties": False,
    },
}


def _function(tool: Tool[..., Any], strict: bool, output_schema: bool = False) -> dict[str, Any]:
    declared: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.strict().schema if strict else tool.input_schema,
        "strict": strict,
    }
    if output_schema and tool.output_schema is not None:
        declared["output_schema"] = tool.output_schema
    return declared


def _grouped(declared: list[dict[str, Any]], tools: list[Tool[..., Any]]) -> list[dict[str, Any]]:
    """Tools with a namespace gathered into one ``namespace`` entry each, where the first one stood."""
    grouped: list[dict[str, Any]] = []
    spaces: dict[str, dict[str, Any]] = {}
    for declaration, tool in zip(declared, tools, strict=True):
        prefix = tool.namespace
        if prefix is None or not tool.name.startswith(prefix):
            grouped.append(declaration)
            continue
        space = spaces.get(prefix)
        if space is None:
            description = f"Tools whose names start with {prefix!r}."
            space = spaces[prefix] = {"type": "namespace", "name": prefix, "description": description, "tools": []}
            grouped.append(space)
        space["tools"].append({**declaration, "name": tool.name[len(prefix) :]})
    return grouped


def read_revealed(response: Any) -> list[str]:
    """The tools a tool search loaded (``tool_search_output`` items), for ``dispatcher.reveal``.

    Takes a ``Response`` (the SDK's object or its JSON as a dict), its ``output`` list, or one item.
    """
    output = field(response, "output")
    found: list[str] = []
    for item in sequence(output if output is not None else response):
        if field(item, "type") != "tool_search_output":
            continue
        for declared in sequence(field(item, "tools")):
            inner = sequence(field(declared, "tools")) if field(declared, "type") == "namespace" else [declared]
            found += [name for tool in inner if isinstance(name := field(tool, "name"), str)]
    return list(dict.fromkeys(found))


def read_searches(response: Any) -> list[tuple[str, str]]:
    """The ``(call_id, query)`` of each ``tool_search_call`` the application runs (client search)."""
    output = field(response, "output")
    searches = []
    for item in sequence(output if output is not None else response):
        if field(item, "type") == "tool_search_call" and field(item, "execution") == "client":
            sent = field(item, "arguments") or {}
            if isinstance(sent, str | bytes):
                try:
                    sent = json.loads(sent)
                except ValueError:
                    sent = {}
            query = field(sent, "query") if isinstance(sent, Mapping) else None
            searches.append((str(field(item, "call_id") or ""), str(query or "")))
    return searches


def write_search(call_id: str, tools: Iterable[Tool[..., Any]], *, strict: bool = False) -> dict[str, Any]:
    """The ``tool_search_output`` input item answering a client search with the tools it found."""
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "tools": [_function(tool, strict) for tool in tools],
    }


def read_calls(response: Any) -> list[ToolCall]:
    """The ``function_call`` items of a response, in order, keyed by their ``call_id``.

    Takes a ``Response`` (the SDK's object or its JSON as a dict), its ``output`` list, or
    one item. Other items (messages, reasoning) are skipped; ``custom_tool_call`` items are
    read with their ``input`` as the arguments. A call in a ``namespace`` names the tool by
    the namespace (the prefix) and its name together.
    """
    output = field(response, "output")
    items = sequence(output if output is not None else response)
    calls = []
    for index, item in enumerate(items):
        kind = field(item, "type")
        if kind not in _CALL_ITEMS:
            continue
        call_id = field(item, "call_id", "id") or f"call_{index}"
        sent = field(item, _CALL_ITEMS[kind])
        name = str(field(item, "namespace") or "") + str(field(item, "name") or "")  # a namespace is the prefix
        calls.append(ToolCall(str(call_id), name, arguments("" if sent is None else sent)))
    return calls


def write_results(results: Iterable[ToolResult], *, artifacts: Any = None) -> list[dict[str, Any]]:
    """One ``{"type": "function_call_output", "call_id", "output"}`` item per result, in order.

    With the dispatcher's ``artifacts`` store, a result's images (`ImageContent`) and resources
    (`ResourceContent`) make the output a list: its text as ``input_text``, then each image as an
    ``input_image`` data URL and each resource as an ``input_file`` (its data URL, and the last
    part of its URI as the file name); audio has no item here.
    """
    written = []
    for r in results:
        output: Any = result_text(r)
        items = [item for item in map(_item, media(r, artifacts)) if item is not None]
        if items:
            output = [{"type": "input_text", "text": output}, *items]
        written.append({"type": "function_call_output", "call_id": r.call_id, "output": output})
    return written


def _item(item: Media) -> dict[str, Any] | None:
    """An image or a resource as an item of a function call's output; None for audio."""
    url = f"data:{item.media_type};base64,{item.base64}"
    if isinstance(item.block, ImageContent):
        return {"type": "input_image", "image_url": url}
    if isinstance(item.block, ResourceContent):
        return {"type": "input_file", "file_data": url, "filename": item.file_name}
    return None
