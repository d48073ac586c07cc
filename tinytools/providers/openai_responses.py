"""OpenAI Responses API: function tools, ``function_call`` items, ``function_call_output`` items.

::

    from tinytools.providers import openai_responses as adapter

    response = client.responses.create(model=model, input=items, tools=adapter.export_tools(toolbox))
    items += response.output
    calls = adapter.read_calls(response)
    items += adapter.write_results([dispatch(call, toolbox) for call in calls])

A function tool here always carries a ``strict`` key (the API requires one). With
``strict=True`` it shows the strict rendering of the schema (see `tinytools.schema.strict`); pair it
with a dispatcher in strict mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tinytools.providers._common import arguments, field, result_text, sequence
from tinytools.results import ToolCall, ToolResult
from tinytools.tool import Tool

__all__ = ["export_tools", "read_calls", "write_results"]

_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}


def export_tools(tools: Iterable[Tool[..., Any]], *, strict: bool = False) -> list[dict[str, Any]]:
    """The ``tools=`` of a Responses request: ``[{"type": "function", "name", ..., "strict"}]``.

    Args:
        tools: A `Toolbox` or any iterable of tools.
        strict: Show the strict-mode rendering and set ``"strict": true``.

    Raises:
        SchemaError: ``strict`` is set and a schema cannot be made strict.
    """
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.strict().schema if strict else tool.input_schema,
            "strict": strict,
        }
        for tool in tools
    ]


def read_calls(response: Any) -> list[ToolCall]:
    """The ``function_call`` items of a response, in order, keyed by their ``call_id``.

    Takes a ``Response`` (the SDK's object or its JSON as a dict), its ``output`` list, or
    one item. Other items (messages, reasoning) are skipped; ``custom_tool_call`` items are
    read with their ``input`` as the arguments.
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
        calls.append(ToolCall(str(call_id), str(field(item, "name") or ""), arguments("" if sent is None else sent)))
    return calls


def write_results(results: Iterable[ToolResult]) -> list[dict[str, Any]]:
    """One ``{"type": "function_call_output", "call_id", "output"}`` item per result, in order."""
    return [{"type": "function_call_output", "call_id": r.call_id, "output": result_text(r)} for r in results]
