"""OpenAI adapters: Chat Completions and Responses, strict mode, and loose local servers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tinytools import Dispatcher, SchemaError, Toolbox, ToolCall, tool
from tinytools.providers import openai, openai_responses

from .conftest import assert_typed_dict, get_weather

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name."},
        "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit.", "default": "c"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
STRICT_WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name."},
        "unit": {
            "type": ["string", "null"],
            "enum": ["c", "f", None],
            "description": 'Temperature unit. Optional: null means the default ("c").',
        },
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}


def test_chat_export_shows_the_canonical_schema() -> None:
    assert openai.export_tools([get_weather]) == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Look up the current weather.", "parameters": WEATHER},
        }
    ]


def test_chat_export_in_strict_mode_shows_the_strict_rendering() -> None:
    (entry,) = openai.export_tools([get_weather], strict=True)
    assert entry["function"] == {
        "name": "get_weather",
        "description": "Look up the current weather.",
        "parameters": STRICT_WEATHER,
        "strict": True,
    }


def test_responses_export_always_carries_a_strict_key() -> None:
    from openai.types.responses import FunctionToolParam

    plain, strict = (
        openai_responses.export_tools([get_weather]),
        openai_responses.export_tools([get_weather], strict=True),
    )
    assert plain == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Look up the current weather.",
            "parameters": WEATHER,
            "strict": False,
        }
    ]
    assert strict[0]["strict"] is True and strict[0]["parameters"] == STRICT_WEATHER
    assert_typed_dict(FunctionToolParam, strict[0])


def test_strict_export_refuses_a_schema_strict_mode_cannot_take() -> None:
    @tool
    def tag(labels: set[str]) -> None: ...

    with pytest.raises(SchemaError) as caught:
        openai.export_tools([tag], strict=True)
    assert (caught.value.tool, caught.value.parameter) == ("tag", "labels")
    assert openai.export_tools([tag])[0]["function"]["parameters"]["properties"]["labels"]["uniqueItems"] is True


def test_a_strict_model_sends_null_for_the_default_and_the_call_gets_the_default() -> None:
    (call,) = openai.read_calls(_message([("c1", "get_weather", '{"city": "Oslo", "unit": null}')]))
    strict = Dispatcher([get_weather], strict=True)
    assert strict.dispatch(call).output == {"city": "Oslo", "temperature": 21.5, "unit": "c"}
    arguments = json.loads(call.arguments)
    get_weather.strict().validate(arguments)  # what the strict provider was shown accepts it
    assert get_weather.strict().restore(arguments) == {"city": "Oslo"}
    # without strict=True the canonical schema is enforced as is: null is not a unit
    canonical = Dispatcher([get_weather]).dispatch(call)
    assert canonical.error is not None and canonical.error.code == "invalid_arguments"
    # strict validation refuses what the strict schema refuses: an omitted (required) key
    (omitted,) = openai.read_calls(_message([("c2", "get_weather", '{"city": "Oslo"}')]))
    assert strict.dispatch(omitted).error.code == "invalid_arguments"  # type: ignore[union-attr]


def _message(calls: list[tuple[str | None, str, Any]]) -> dict[str, Any]:
    tool_calls = [
        {**({"id": id} if id is not None else {}), "type": "function", "function": {"name": name, "arguments": args}}
        for id, name, args in calls
    ]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def test_arguments_sent_as_an_object_pass_through_and_dispatch() -> None:
    (call,) = openai.read_calls(_message([("c1", "get_weather", {"city": "Oslo"})]))  # as Ollama does
    assert call.arguments == {"city": "Oslo"}
    assert Dispatcher([get_weather]).dispatch(call).status == "succeeded"


@pytest.mark.parametrize("sent", ['{"city": "Oslo"', "city=Oslo", "", None])
def test_arguments_that_are_not_json_get_a_repairable_result(sent: Any) -> None:
    (call,) = openai.read_calls(_message([("c1", "get_weather", sent)]))
    result = Dispatcher([get_weather]).dispatch(call)
    assert result.error is not None and result.error.code == "malformed_arguments"
    (message,) = openai.write_results([result])
    assert message["tool_call_id"] == "c1" and "could not be read as JSON" in message["content"]


def test_reads_a_completion_a_choice_a_message_or_a_list_of_calls() -> None:
    message = _message([("c1", "ping", "{}"), (None, "ping", "{}")])
    completion = {"choices": [{"index": 0, "message": message}]}
    for shape in (completion, completion["choices"][0], message, message["tool_calls"]):
        assert [(c.id, c.name, c.arguments) for c in openai.read_calls(shape)] == [
            ("c1", "ping", "{}"),
            ("call_1", "ping", "{}"),  # a local server that sends no id
        ]
    assert openai.read_calls({"choices": []}) == []
    assert openai.read_calls({"role": "assistant", "content": "Hello"}) == []


def test_reads_sdk_messages_and_custom_tool_calls() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}},
                {"id": "c2", "type": "custom", "custom": {"name": "ping", "input": "{}"}},
            ],
        }
    )
    assert openai.read_calls(message) == [ToolCall("c1", "ping", "{}"), ToolCall("c2", "ping", "{}")]


def test_responses_reads_only_call_items_and_writes_outputs_by_call_id() -> None:
    output = [
        {"type": "message", "id": "m1", "role": "assistant", "content": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ping", "arguments": "{}"},
        {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_2", "name": "ping", "input": "{}"},
    ]
    calls = openai_responses.read_calls({"output": output})
    assert calls == [ToolCall("call_1", "ping", "{}"), ToolCall("call_2", "ping", "{}")]
    assert openai_responses.read_calls(output[1]) == calls[:1]
    results = Dispatcher(Toolbox([get_weather])).dispatch_many(calls)
    assert openai_responses.write_results(results) == [
        {"type": "function_call_output", "call_id": "call_1", "output": results[0].text()},
        {"type": "function_call_output", "call_id": "call_2", "output": results[1].text()},
    ]
