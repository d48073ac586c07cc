"""Gemini adapter: schema translation into Gemini's Schema, calls without ids, responses."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Annotated, Any, Literal

import pytest
from google.genai import types

from tinytools import Dispatcher, Param, SchemaError, Tool, ToolCall, tool
from tinytools.providers import gemini

from .conftest import get_weather, ping


@dataclasses.dataclass
class Address:
    street: str
    zip: str | None = None


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


@tool
def plan(
    city: str,
    level: Literal[1, 2, 3] = 1,
    days: Annotated[int, Param(gt=0, le=7)] = 1,
    ratio: Annotated[float, Param(multiple_of=0.5)] = 1.0,
    when: datetime.datetime | None = None,
    day: datetime.date | None = None,
    address: Address | None = None,
    tags: set[str] = frozenset(),
    score: int | str = 0,
    flag: Literal[True] = True,
) -> None:
    """Plan a trip.

    Args:
        city: City name
    """


def test_translates_into_the_schema_gemini_accepts() -> None:
    (declaration,) = gemini.export_tools([plan], schema_format="openapi")[0]["functionDeclarations"]
    assert declaration["parameters"] == {
        "type": "OBJECT",
        "properties": {
            "city": {"type": "STRING", "description": "City name"},
            "level": {"type": "INTEGER", "default": 1, "enum": ["1", "2", "3"], "format": "enum"},
            "days": {"type": "INTEGER", "maximum": 7, "default": 1, "description": "Must be greater than 0."},
            "ratio": {"type": "NUMBER", "default": 1.0, "description": "Must be a multiple of 0.5."},
            "when": {"type": "STRING", "default": None, "format": "date-time", "nullable": True},
            "day": {"type": "STRING", "default": None, "nullable": True, "description": "Format: date."},
            "address": {
                "type": "OBJECT",
                "default": None,
                "properties": {
                    "street": {"type": "STRING"},
                    "zip": {"type": "STRING", "default": None, "nullable": True},
                },
                "required": ["street"],
                "nullable": True,
            },
            "tags": {
                "type": "ARRAY",
                "default": [],
                "items": {"type": "STRING"},
                "description": "Items must be unique.",
            },
            "score": {"default": 0, "anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
            "flag": {"type": "BOOLEAN", "default": True, "description": "One of: [true]."},
        },
        "required": ["city"],
    }
    schema = types.Schema.model_validate(declaration["parameters"])  # extra="forbid": no stray keys
    assert schema.properties is not None and schema.properties["when"].nullable is True


def test_by_default_the_json_schema_itself_is_sent_so_recursion_and_tuples_work() -> None:
    @tool
    def grow(tree: Node, span: tuple[int, str]) -> Node:
        """Grow a tree."""
        return tree

    (declaration,) = gemini.export_tools([grow, ping])[0]["functionDeclarations"][:1]
    assert declaration["parametersJsonSchema"] == grow.input_schema and "parameters" not in declaration
    assert declaration["responseJsonSchema"] == grow.output_schema
    checked = types.FunctionDeclaration.model_validate(declaration)  # the SDK's own type, extra="forbid"
    assert checked.parameters_json_schema == grow.input_schema
    types.Tool.model_validate(gemini.export_tools([grow, ping])[0])
    with pytest.raises(ValueError, match="schema_format"):
        gemini.export_tools([ping], schema_format="yaml")  # type: ignore[arg-type]


def test_a_tool_without_parameters_is_declared_without_them() -> None:
    assert gemini.export_tools([ping], schema_format="openapi") == [
        {"functionDeclarations": [{"name": "ping", "description": "Answer pong."}]}
    ]


def _with(schema: dict[str, Any]) -> Tool[..., Any]:
    root = {"type": "object", "properties": {"x": schema}, "additionalProperties": False}
    return Tool.from_schema("t", "", root, lambda **kw: kw)


def test_refuses_a_recursive_type() -> None:
    @tool
    def grow(tree: Node) -> None: ...

    with pytest.raises(SchemaError) as caught:
        gemini.export_tools([grow], schema_format="openapi")
    assert (caught.value.tool, caught.value.parameter) == ("grow", "tree")
    assert "recursive type 'Node'" in caught.value.reason


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "array", "prefixItems": [{"type": "string"}], "items": False}, "prefixItems"),
        ({"allOf": [{"type": "string"}, {"pattern": "a"}]}, "allOf"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "oneOf"),
        ({"enum": ["a", 1]}, "one type"),
        ({"type": "object", "patternProperties": {"^a": {"type": "string"}}}, "patternProperties"),
    ],
)
def test_refuses_what_has_no_equivalent(schema: dict[str, Any], words: str) -> None:
    with pytest.raises(SchemaError) as caught:
        gemini.export_tools([_with(schema)], schema_format="openapi")
    assert caught.value.parameter == "x" and words in str(caught.value)


def test_a_single_allof_is_merged() -> None:
    (declaration,) = gemini.export_tools(
        [_with({"allOf": [{"type": "string", "maxLength": 3}]})], schema_format="openapi"
    )[0]["functionDeclarations"]
    assert declaration["parameters"]["properties"]["x"] == {"type": "STRING", "maxLength": 3}


def test_a_vendors_x_keywords_are_left_out() -> None:
    (declaration,) = gemini.export_tools(
        [_with({"type": "string", "x-mcp-header": "Region"})], schema_format="openapi"
    )[0]["functionDeclarations"]
    assert declaration["parameters"]["properties"]["x"] == {"type": "STRING"}


def test_shared_definitions_that_grow_past_the_bound_once_inlined_are_refused() -> None:
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, 7):  # 10**6 copies of L0 once inlined
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(10)]}
    root = {"type": "object", "properties": {"x": {"$ref": "#/$defs/L6"}}, "additionalProperties": False}
    deep = Tool.from_schema("deep", "", {**root, "$defs": defs}, lambda **kw: kw)
    with pytest.raises(SchemaError) as caught:
        gemini.export_tools([deep], schema_format="openapi")
    assert caught.value.parameter == "x" and "more than 10000 schemas once its $refs are inlined" in str(caught.value)
    assert gemini.export_tools([deep])[0]["functionDeclarations"][0]["parametersJsonSchema"] == deep.input_schema


def test_calls_without_ids_get_local_ids_and_responses_go_back_without_them() -> None:
    response = types.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Checking."},
                            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
                            {"functionCall": {"name": "ping"}},
                        ],
                    }
                }
            ]
        }
    )
    calls = gemini.read_calls(response, turn="t1")
    assert [(call.name, call.arguments) for call in calls] == [("get_weather", {"city": "Rome"}), ("ping", {})]
    assert [call.id.rsplit("-", 1)[0] for call in calls] == ["gemini:t1:1", "gemini:t1:2"]
    results = Dispatcher([get_weather, ping]).dispatch_many(calls)
    parts = gemini.write_results(results)
    assert parts == [
        {
            "functionResponse": {
                "name": "get_weather",
                "response": {"output": {"city": "Rome", "temperature": 21.5, "unit": "c"}},
            }
        },
        {"functionResponse": {"name": "ping", "response": {"output": "pong"}}},
    ]
    types.Content(role="user", parts=parts)  # type: ignore[arg-type]


def test_a_failure_is_written_as_an_error_with_code_and_message() -> None:
    result = Dispatcher([get_weather]).dispatch(ToolCall("id-1", "get_weather", {"city": "Atlantis"}))
    assert gemini.write_results([result]) == [
        {
            "functionResponse": {
                "name": "get_weather",
                "response": {"error": {"code": "unknown_city", "message": "Error: no weather station in Atlantis"}},
                "id": "id-1",
            }
        }
    ]
