"""OpenAI Chat Completions: function tools, ``message.tool_calls``, ``role: "tool"`` messages.

```python
from tinytools.providers import openai as adapter

response = client.chat.completions.create(
    model=model, messages=messages, tools=adapter.export_tools(toolbox)
)
messages.append(response.choices[0].message)
calls = adapter.read_calls(response)
messages += adapter.write_results([dispatch(call, toolbox) for call in calls])
```

``export_tools(toolbox, strict=True)`` shows the strict rendering of each schema (see
`tinytools._schema.strict_mode`); pair it with a dispatcher in strict mode, which enforces that rendering and
maps the ``null`` of an omitted optional argument back to its default. OpenAI-compatible
servers (Ollama, vLLM, llama.cpp) use the same shapes; when one sends arguments that are
already an object, or text that is not JSON, the call still reads, and dispatch answers bad
text with a repairable ``malformed_arguments`` result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tinytools._results import ToolCall, ToolResult
from tinytools._tool import Tool
from tinytools.providers._common import arguments, declared, field, result_text, sequence, shown

__all__ = ["declaration", "export_tools", "read_calls", "write_results"]


def declaration(tool: Tool[..., Any], *, strict: bool = False) -> dict[str, Any]:
    """One tool's function definition: ``{"name", "description", "parameters"[, "strict"]}``.

    Raises:
        SchemaError: ``strict`` is set and the schema cannot be made strict.
    """
    return declared(tool, "parameters", strict=strict)


def export_tools(
    tools: Iterable[Tool[..., Any]], *, strict: bool = False, revealed: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """The ``tools=`` of a chat completion request: ``[{"type": "function", "function": ...}]``.

    Args:
        tools: A `Toolbox` or any iterable of tools.
        strict: Show the strict-mode rendering and set ``"strict": true``.
        revealed: Deferred tools to show, after the others (``dispatcher.revealed``); the
            other deferred tools are left out.

    Raises:
        SchemaError: ``strict`` is set and a schema cannot be made strict.
    """
    return [{"type": "function", "function": declaration(tool, strict=strict)} for tool in shown(tools, revealed)]


def read_calls(response: Any) -> list[ToolCall]:
    """The tool calls of a chat completion, in order.

    Takes a ``ChatCompletion`` (the SDK's object or its JSON as a dict; the first choice is
    read), a choice, a message, or a list of tool calls. A call without an id gets
    ``call_<index>``; arguments pass through as sent (text or object).
    """
    calls = response if isinstance(response, list) else field(_message(response), "tool_calls")
    return [_call(item, index) for index, item in enumerate(sequence(calls))]


def _message(response: Any) -> Any:
    choices = field(response, "choices")
    if choices is not None:
        first = sequence(choices)[:1]
        return field(first[0], "message") if first else None
    return field(response, "message") or response


def _call(item: Any, index: int) -> ToolCall:
    function = field(item, "function")
    if function is None and field(item, "custom") is not None:
        custom = field(item, "custom")
        name, sent = field(custom, "name"), field(custom, "input")
    else:
        name, sent = field(function, "name"), field(function, "arguments")
    call_id = field(item, "id") or f"call_{index}"
    return ToolCall(str(call_id), str(name or ""), arguments("" if sent is None else sent))


def write_results(results: Iterable[ToolResult]) -> list[dict[str, Any]]:
    """One ``{"role": "tool", "tool_call_id", "content"}`` message per result, in order.

    ``content`` is the output as JSON text, or the error message for a call that failed.
    """
    return [{"role": "tool", "tool_call_id": r.call_id, "content": result_text(r)} for r in results]
