"""Anthropic Messages: tool definitions, ``tool_use`` blocks, ``tool_result`` blocks.

```python
from tinytools.providers import anthropic as adapter

message = client.messages.create(
    model=model, max_tokens=1024, messages=messages, tools=adapter.export_tools(toolbox)
)
messages.append({"role": "assistant", "content": message.content})
calls = adapter.read_calls(message)
results = [dispatch(call, toolbox) for call in calls]
messages.append({"role": "user", "content": adapter.write_results(results)})
```

``export_tools(toolbox, strict=True)`` shows the strict rendering of each schema (see
`tinytools._schema.strict_mode`) and sets ``"strict": true`` (Anthropic's strict tool use); pair it with
a dispatcher in strict mode. ``cache_control={"type": "ephemeral"}`` marks the last tool as a
prompt-cache breakpoint, so the whole list of tools is cached between requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from tinytools._results import ImageContent, ResourceContent, ToolCall, ToolResult
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox
from tinytools.providers._common import Media, arguments, declared, field, media, result_text, sequence, shown

__all__ = ["export_tools", "read_calls", "read_revealed", "write_results", "write_search"]


def export_tools(
    tools: Iterable[Tool[..., Any]],
    *,
    strict: bool = False,
    cache_control: Mapping[str, Any] | None = None,
    revealed: Iterable[str] = (),
    tool_search: Literal["bm25", "regex"] | None = None,
) -> list[dict[str, Any]]:
    """The ``tools=`` of a Messages request: ``[{"name", "description", "input_schema"[, "strict"]}]``.

    Args:
        tools: A `Toolbox` or any iterable of tools.
        strict: Show the strict-mode rendering and set ``"strict": true``.
        cache_control: Put on the last tool (``{"type": "ephemeral"}``, optionally with a
            ``"ttl"``), making the tools a prompt-cache prefix.
        revealed: Deferred tools to show, after the others (``dispatcher.revealed``); the
            other deferred tools are left out.
        tool_search: Let Anthropic search the deferred tools instead: each is declared with
            ``"defer_loading": true`` after the others, and its BM25 or regex tool search tool
            comes last. Read what it found with `read_revealed` into ``dispatcher.reveal``.

    A tool's ``@tool(examples=[...])`` go as its ``input_examples`` (each was checked against
    its schema when the tool was defined).

    Raises:
        SchemaError: ``strict`` is set and a schema cannot be made strict.
    """
    if tool_search is None:
        exported = [_declared(tool, strict) for tool in shown(tools, revealed)]
    else:
        if tool_search not in _SEARCH_TOOLS:
            raise ValueError(f"tool_search is 'bm25', 'regex' or None, not {tool_search!r}")
        box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        exported = [_declared(tool, strict) for tool in box.shown()]
        exported += [{**_declared(tool, strict), "defer_loading": True} for tool in box if tool.defer]
        exported.append(dict(_SEARCH_TOOLS[tool_search]))
    if cache_control is not None and exported:
        exported[-1]["cache_control"] = dict(cache_control)
    return exported


def _declared(tool: Tool[..., Any], strict: bool) -> dict[str, Any]:
    declaration = declared(tool, "input_schema", strict=strict)
    if tool.examples:
        declaration["input_examples"] = [dict(example) for example in tool.examples]
    return declaration


_SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}


def read_revealed(response: Any) -> list[str]:
    """The tools a tool search found (``tool_reference`` blocks of its results), for ``dispatcher.reveal``.

    Takes a ``Message`` (the SDK's object or its JSON as a dict), its ``content`` list, or one block.
    """
    content = field(response, "content")
    blocks = sequence(content if content is not None and not isinstance(content, str) else response)
    found: list[str] = []
    for block in blocks:
        if field(block, "type") != "tool_search_tool_result":
            continue
        result = field(block, "content")
        for reference in sequence(field(result, "tool_references")):
            name = field(reference, "tool_name")
            if field(reference, "type") == "tool_reference" and isinstance(name, str):
                found.append(name)
    return list(dict.fromkeys(found))


def write_search(tool_use_id: str, tools: Iterable[Tool[..., Any]]) -> dict[str, Any]:
    """The ``tool_result`` block answering the application's own search tool with ``tool_reference`` blocks.

    The API then loads those deferred tools' definitions; reveal them in the dispatcher too.
    """
    references = [{"type": "tool_reference", "tool_name": tool.name} for tool in tools]
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": references}


def read_calls(response: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a message, in order.

    Takes a ``Message`` (the SDK's object or its JSON as a dict), its ``content`` list, or one
    block. ``input`` is already an object and passes through; other blocks are skipped.
    """
    content = field(response, "content")
    blocks = sequence(content if content is not None and not isinstance(content, str) else response)
    calls = []
    for index, block in enumerate(blocks):
        if field(block, "type") != "tool_use":
            continue
        sent = field(block, "input")
        call_id = field(block, "id") or f"toolu_{index}"
        calls.append(ToolCall(str(call_id), str(field(block, "name") or ""), arguments({} if sent is None else sent)))
    return calls


def write_results(results: Iterable[ToolResult], *, artifacts: Any = None) -> list[dict[str, Any]]:
    """One ``tool_result`` block per result, in order: the content of the next user message.

    ``is_error`` is true for a call that did not succeed; ``content`` is the output as JSON
    text, or the error message. With the dispatcher's ``artifacts`` store, a result's images
    (`ImageContent`) follow its text as ``image`` blocks (base64), and its PDF and text resources
    (`ResourceContent`) as ``document`` blocks titled with their URI; audio has no block here.
    """
    written = []
    for r in results:
        content: Any = result_text(r)
        blocks = [block for block in map(_block, media(r, artifacts)) if block is not None]
        if blocks:
            content = [{"type": "text", "text": content}, *blocks]
        written.append({"type": "tool_result", "tool_use_id": r.call_id, "content": content, "is_error": r.is_error})
    return written


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The images a ``tool_result`` takes; another (an SVG, say) is named in the text only."""


def _block(item: Media) -> dict[str, Any] | None:
    """An image, PDF or text as a ``tool_result`` content block; None for what has no block here."""
    if isinstance(item.block, ImageContent):
        if item.media_type not in _IMAGE_TYPES:
            return None
        return {"type": "image", "source": {"type": "base64", "media_type": item.media_type, "data": item.base64}}
    if not isinstance(item.block, ResourceContent):
        return None
    if item.media_type == "application/pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": item.base64}
    elif item.text is not None:
        source = {"type": "text", "media_type": "text/plain", "data": item.text}
    else:
        return None
    return {"type": "document", "source": source, "title": item.block.uri}
