"""MCP adapter: tools/list entries, tools/call requests and results, the optional extra."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

from tinytools import Dispatcher, Tool, Toolbox, ToolCall, tool
from tinytools._schema.anchors import pointed
from tinytools.providers import mcp
from tinytools.providers._common import require
from tinytools.providers.mcp._wire import check_output

from .conftest import add, get_weather


@dataclasses.dataclass
class Forecast:
    city: str
    days: list[float]


@tool
def forecast(city: str) -> Forecast:
    """Forecast."""
    return Forecast(city, [1.0, 2.0])


@tool
def anything(x: int) -> Any:
    """Any output."""
    return x


@tool
def maybe(x: int) -> dict[str, int] | None:
    """An object or nothing."""
    return None if x == 0 else {"x": x}


def _listed(tool_: Any) -> dict[str, Any]:
    (entry,) = mcp.export_tools([tool_])
    return entry


def test_lists_name_description_schemas_and_annotations() -> None:
    assert _listed(get_weather) == {
        "name": "get_weather",
        "description": "Look up the current weather.",
        "inputSchema": get_weather.input_schema,
        "outputSchema": {"type": "object"},
        "annotations": {"idempotentHint": True},
    }


def test_an_output_that_is_not_an_object_is_wrapped_as_result() -> None:
    assert _listed(add)["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert _listed(add)["annotations"] == {"idempotentHint": False}


def test_an_output_type_that_is_an_object_is_listed_as_that_object() -> None:
    schema = _listed(forecast)["outputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["city", "days"]
    assert "$defs" in schema  # its references still resolve


def test_an_output_that_may_or_may_not_be_an_object_has_no_output_schema() -> None:
    assert "outputSchema" not in _listed(anything)
    assert "outputSchema" not in _listed(maybe)


def test_reads_jsonrpc_requests_params_and_sdk_objects() -> None:
    from mcp.types import CallToolRequestParams

    assert mcp.read_calls({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}) == [
        ToolCall("7", "add", {})
    ]
    params = CallToolRequestParams(name="add", arguments={"a": 1, "b": 2})
    assert mcp.read_calls([params]) == [ToolCall("mcp-0", "add", {"a": 1, "b": 2})]


def test_writes_structured_content_and_text() -> None:
    calls = [ToolCall("1", "add", {"a": 1, "b": 2}), ToolCall("2", "forecast", {"city": "Oslo"})]
    written = mcp.write_results(Dispatcher(Toolbox([add, forecast])).dispatch_many(calls))
    assert written == [
        {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False},
        {
            "content": [{"type": "text", "text": '{"city":"Oslo","days":[1.0,2.0]}'}],
            "structuredContent": {"city": "Oslo", "days": [1.0, 2.0]},
            "isError": False,
        },
    ]


def test_a_pending_result_is_sent_as_pending_not_as_output_against_the_schema() -> None:
    @tool(external=True)
    def deploy(service: str) -> dict[str, str]:
        """Deploy (elsewhere)."""
        raise AssertionError("never run")

    waiting = Dispatcher([deploy]).dispatch(ToolCall("d1", "deploy", {"service": "api"}))
    assert waiting.status == "pending"
    assert check_output(waiting, deploy) is waiting  # no output yet: nothing to hold to the schema
    (written,) = mcp.write_results([waiting])
    assert written["isError"] is False and written["_meta"]["tinytools/pending"]["kind"] == "external"


def test_an_output_schema_of_shared_definitions_is_read_once_per_definition() -> None:
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, 7):  # 10**6 paths down to L0
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(10)]}
    output = {"$ref": "#/$defs/L6", "$defs": defs}
    made = Tool.from_schema(
        "deep", "", {"type": "object", "additionalProperties": False}, lambda: 1, output_schema=output
    )
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call" and frame.f_code.co_name == "_is_object"

    sys.setprofile(profile)
    try:
        (listed,) = mcp.export_tools([made])
    finally:
        sys.setprofile(None)
    assert listed["outputSchema"]["properties"] == {"result": {"$ref": "#/$defs/L6"}}  # no object: wrapped
    assert calls <= 1 + 7 * 11


def test_an_anchored_output_schema_is_listed_with_each_anchor_once_and_never_wrapped_around_a_root_reference() -> None:
    point = {"$anchor": "point", "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    shared = Tool.from_schema(
        "point", "", {"type": "object", "additionalProperties": False}, lambda: {"x": 1},
        output_schema={"$ref": "#/$defs/Point", "$defs": {"Point": point}},
    )  # fmt: skip
    listed = _listed(shared)["outputSchema"]
    assert json.dumps(listed).count('"$anchor"') == 1 and listed["properties"] == point["properties"]
    pointed(listed)  # a schema a client can read: no anchor given twice
    nested = {"$anchor": "list", "type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}
    tree = Tool.from_schema(
        "tree", "", {"type": "object", "additionalProperties": False}, lambda: [1, [2, [3]]], output_schema=nested
    )
    assert "outputSchema" not in _listed(tree)  # wrapped as {"result": ...}, "#" would name the wrapper
    result = tree.invoke({})
    assert result.status == "succeeded" and check_output(result, tree).status == "succeeded"


def test_a_missing_extra_names_the_install_command() -> None:
    with pytest.raises(ImportError, match=r'pip install "tinytools\[mcp\]"'):
        require("tinytools_no_such_sdk", "mcp")


def test_importing_the_adapters_imports_no_sdk() -> None:
    code = (
        "import sys\n"
        "from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses\n"
        "print(','.join(m for m in ('openai', 'anthropic', 'google', 'mcp', 'pydantic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
