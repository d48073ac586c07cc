"""One contract, every adapter: export, read calls back, dispatch, write results.

Each case knows its provider's wire shapes: how a response carrying calls looks (built as a
plain dict, and as the SDK's own object from that dict), how to check the SDK's types accept
what we export and write, and how to read a written result back.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, ClassVar

import pytest

from tinytools import Dispatcher, Toolbox, ToolCall
from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses

from .conftest import assert_typed_dict

CALLS = [
    ("c1", "add", {"a": 1, "b": 2}),
    ("c2", "get_weather", {"city": "Atlantis"}),
    ("c3", "nope", {}),
    ("c4", "ping", {}),
]
"""Succeeds; fails with a ToolError; names no tool; takes no arguments."""

EXPECTED = [
    ("c1", False, "3"),
    ("c2", True, "Error: no weather station in Atlantis"),
    ("c3", True, "Error: Unknown tool 'nope'. Available tools: add, get_weather, ping."),
    ("c4", False, "pong"),
]


class Case:
    module: ModuleType
    error_flag = True  # whether the written result says it is an error
    translates_schemas = False  # whether the export shows something other than the input schema

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
        raise NotImplementedError

    def sdk_object(self, response: dict[str, Any]) -> Any:
        raise NotImplementedError

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        """Check the SDK accepts the export; return each tool's name and schema."""
        raise NotImplementedError

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        """Check the SDK accepts the written results; read back (id, is_error, text)."""
        raise NotImplementedError


class OpenAIChat(Case):
    module = openai
    error_flag = False

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
        tool_calls = [
            {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for id, name, args in calls
        ]
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}
        return {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}

    def sdk_object(self, response: dict[str, Any]) -> Any:
        from openai.types.chat import ChatCompletion

        return ChatCompletion.model_validate(response)

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionToolParam
        from openai.types.shared_params import FunctionDefinition

        for entry in exported:
            assert_typed_dict(ChatCompletionToolParam, entry)
            assert_typed_dict(FunctionDefinition, entry["function"])
            ChatCompletionFunctionTool.model_validate(entry)
        return [(e["function"]["name"], e["function"]["parameters"]) for e in exported]

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        from openai.types.chat import ChatCompletionToolMessageParam

        for message in written:
            assert_typed_dict(ChatCompletionToolMessageParam, message)
        return [(m["tool_call_id"], None, m["content"]) for m in written]


class OpenAIResponses(Case):
    module = openai_responses
    error_flag = False

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
        output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
        output += [
            {"type": "function_call", "id": f"fc_{id}", "call_id": id, "name": name, "arguments": json.dumps(args)}
            for id, name, args in calls
        ]
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "m",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }

    def sdk_object(self, response: dict[str, Any]) -> Any:
        from openai.types.responses import Response

        return Response.model_validate(response)

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from openai.types.responses import FunctionTool, FunctionToolParam

        for entry in exported:
            assert_typed_dict(FunctionToolParam, entry)
            assert FunctionTool.model_validate(entry).strict is False
        return [(e["name"], e["parameters"]) for e in exported]

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        from openai.types.responses.response_input_item_param import FunctionCallOutput

        for item in written:
            assert_typed_dict(FunctionCallOutput, item)
        return [(item["call_id"], None, item["output"]) for item in written]


class Anthropic(Case):
    module = anthropic

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": "Let me check."}]
        content += [{"type": "tool_use", "id": id, "name": name, "input": args} for id, name, args in calls]
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    def sdk_object(self, response: dict[str, Any]) -> Any:
        from anthropic.types import Message

        return Message.model_validate(response)

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from anthropic.types import ToolParam

        for entry in exported:
            assert_typed_dict(ToolParam, entry)
        return [(e["name"], e["input_schema"]) for e in exported]

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        import pydantic
        from anthropic.types import MessageParam, ToolResultBlockParam

        for block in written:
            assert_typed_dict(ToolResultBlockParam, block)
        pydantic.TypeAdapter(MessageParam).validate_python({"role": "user", "content": written})
        return [(b["tool_use_id"], b["is_error"], b["content"]) for b in written]


class Gemini(Case):
    module = gemini
    translates_schemas = True

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
        parts = [{"functionCall": {"id": id, "name": name, "args": args}} for id, name, args in calls]
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}

    def sdk_object(self, response: dict[str, Any]) -> Any:
        from google.genai import types

        return types.GenerateContentResponse.model_validate(response)

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from google.genai import types

        config = types.GenerateContentConfig(tools=exported)  # extra="forbid" all the way down
        declarations = config.tools[0].function_declarations  # type: ignore[index, union-attr]
        assert [d.name for d in declarations] == [d["name"] for d in exported[0]["functionDeclarations"]]
        return [(d["name"], d.get("parameters", {})) for d in exported[0]["functionDeclarations"]]

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        from google.genai import types

        content = types.Content(role="user", parts=written)  # type: ignore[arg-type]
        read = []
        for part in content.parts or []:
            response = part.function_response
            assert response is not None and response.response is not None
            payload = response.response
            output = payload.get("output")
            text = payload["error"]["message"] if "error" in payload else output
            read.append((str(response.id), "error" in payload, text if isinstance(text, str) else json.dumps(text)))
        return read


class MCP(Case):
    module = mcp
    versions = ("2025-06-18", "2025-11-25", "2026-07-28")
    envelope: ClassVar[dict[str, Any]] = {
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "public",
    }  # the SDK adds it

    def validate(self, method: str, result: dict[str, Any]) -> None:
        """The result is valid MCP on the wire for every protocol version."""
        from mcp_types.methods import validate_server_result
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        for version in self.versions:
            modern = version in MODERN_PROTOCOL_VERSIONS
            validate_server_result(method, version, {**result, **self.envelope} if modern else result)

    def response(self, calls: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:  # type: ignore[override]
        return [
            {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}
            for id, name, args in calls
        ]

    def sdk_object(self, response: list[dict[str, Any]]) -> Any:  # type: ignore[override]
        from mcp.types import CallToolRequest, JSONRPCRequest

        for request in response:
            CallToolRequest.model_validate(request)
        return [JSONRPCRequest.model_validate(request) for request in response]

    def check_tools(self, exported: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        from mcp.types import Tool

        self.validate("tools/list", {"tools": exported})
        return [(Tool.model_validate(e).name, e["inputSchema"]) for e in exported]

    def check_results(self, written: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
        from mcp.types import CallToolResult

        read = []
        for index, payload in enumerate(written):
            self.validate("tools/call", payload)
            result = CallToolResult.model_validate(payload)
            read.append((CALLS[index][0], result.is_error, result.content[0].text))  # type: ignore[union-attr]
        return read


@pytest.fixture(params=[OpenAIChat, OpenAIResponses, Anthropic, Gemini, MCP], ids=lambda c: c.__name__)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param()  # type: ignore[no-any-return]


@pytest.mark.parametrize("shape", ["dict", "sdk"])
def test_round_trip(case: Case, shape: str, toolbox: Toolbox) -> None:
    exported = case.module.export_tools(toolbox)
    declared = case.check_tools(exported)
    assert [name for name, _ in declared] == toolbox.names
    if not case.translates_schemas:
        assert [schema for _, schema in declared] == [t.input_schema for t in toolbox]

    response = case.response(CALLS)
    calls = case.module.read_calls(response if shape == "dict" else case.sdk_object(response))
    assert [(c.id, c.name) for c in calls] == [(id, name) for id, name, _ in CALLS]

    results = Dispatcher(toolbox).dispatch_many(calls)
    assert [r.call_id for r in results] == [id for id, _, _ in CALLS]
    read = case.check_results(case.module.write_results(results))

    expected = [(id, error if case.error_flag else None, text) for id, error, text in EXPECTED]
    assert read == expected


def test_reading_a_response_without_calls_gives_none(case: Case) -> None:
    response = case.response([])
    assert case.module.read_calls(response) == []
    assert case.module.read_calls(case.sdk_object(response)) == []


def test_calls_are_tool_calls_with_decoded_or_text_arguments(case: Case) -> None:
    (call,) = case.module.read_calls(case.response([("c1", "add", {"a": 1, "b": 2})]))
    assert isinstance(call, ToolCall)
    text_providers = (openai, openai_responses)
    expected = '{"a": 1, "b": 2}' if case.module in text_providers else {"a": 1, "b": 2}
    assert call.arguments == expected
