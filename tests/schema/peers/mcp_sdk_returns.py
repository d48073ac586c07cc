"""The MCP Python SDK's cases about return types (tests/server/mcpserver/test_func_metadata.py).

Definitions in the shapes the peer's tests exercise, rewritten by us, each naming the test
it follows; then `CASES`: what the peer expects of each, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import dataclasses
from typing import Annotated, Any, NamedTuple, TypedDict

import annotated_types
from typing_extensions import NotRequired, Required

from tests.schema.peers import (
    DIFFERS,
    FIXED,
    MCP,
    NO_OUTPUT_SCHEMA,
    UNWRAPPED,
    Case,
)


def mcp_returns_dict_any() -> dict[str, Any]:  # test_structured_output_dict_str_types
    return {"a": 1, "b": "hello"}


def mcp_returns_dict_str() -> dict[str, str]:  # test_structured_output_dict_str_types
    return {"name": "John"}


def mcp_returns_dict_list() -> dict[str, list[int]]:  # test_structured_output_dict_str_types
    return {"nums": [1, 2]}


def mcp_returns_dict_int_keys() -> dict[int, str]:  # test_structured_output_dict_str_types: int keys
    return {1: "a"}


def mcp_returns_none() -> None:  # test_structured_output_requires_return_annotation
    return None


def mcp_returns_unannotated():  # type: ignore[no-untyped-def]  # test_structured_output_requires_return_annotation
    return "hello"


def mcp_returns_str() -> str:  # test_structured_output_primitives
    return "hello"


def mcp_returns_int() -> int:  # test_structured_output_primitives
    return 42


def mcp_returns_float() -> float:  # test_structured_output_primitives
    return 3.25


def mcp_returns_bool() -> bool:  # test_structured_output_primitives
    return True


def mcp_returns_list() -> list[str]:  # test_structured_output_generic_types
    return ["a", "b"]


def mcp_returns_union() -> str | int:  # test_structured_output_generic_types
    return "hello"


def mcp_returns_optional() -> str | None:  # test_structured_output_generic_types
    return None


@dataclasses.dataclass
class Contact:  # test_structured_output_dataclass
    name: str
    age: int
    email: str | None = None
    tags: list[str] | None = None


def mcp_returns_dataclass() -> Contact:  # test_structured_output_dataclass
    return Contact(name="Bob", age=25)


class PartialContact(TypedDict, total=False):  # test_structured_output_typeddict
    name: Required[str]
    age: int


def mcp_returns_partial_typed_dict() -> PartialContact:  # test_structured_output_typeddict
    return {"name": "Dave"}


class FullContact(TypedDict):  # test_structured_output_typeddict
    name: str
    age: int
    email: str | None


def mcp_returns_full_typed_dict() -> FullContact:  # test_structured_output_typeddict
    return {"name": "Eve", "age": 40, "email": None}


class Forecast(TypedDict, total=False):  # test_structured_output_typeddict_qualifiers_and_metadata
    """Tomorrow's weather."""

    city: Required[str]
    high: Required[float]
    low: float
    summary: NotRequired[str]


def mcp_returns_described_typed_dict() -> Forecast:  # test_structured_output_typeddict_qualifiers_and_metadata
    return {"city": "Berlin", "high": 21.5}


class Plain:  # test_structured_output_ordinary_class
    name: str
    age: int

    def __init__(self, name: str, age: int):
        self.name = name
        self.age = age


def mcp_returns_plain_class() -> Plain:  # test_structured_output_ordinary_class
    return Plain("Helen", 55)


class Point(NamedTuple):  # test_structured_output_unserializable_type_error: NamedTuple
    x: int
    y: int


def mcp_returns_named_tuple() -> Point:  # test_structured_output_unserializable_type_error
    return Point(1, 2)


def mcp_returns_constrained() -> Annotated[
    int, annotated_types.Gt(1)
]:  # test_preserves_pydantic_metadata (annotated-types)
    return 2


CASES = [
    Case(
        "mcp_returns_dict_any",
        MCP + "test_structured_output_dict_str_types (dict[str, Any])",
        output={"/type": "object"},
    ),
    Case(
        "mcp_returns_dict_str",
        MCP + "test_structured_output_dict_str_types (dict[str, str])",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "object", "additionalProperties": {"type": "string"}}},
    ),
    Case(
        "mcp_returns_dict_list",
        MCP + "test_structured_output_dict_str_types (dict[str, list[int]])",
        output={"/additionalProperties": {"type": "array", "items": {"type": "integer"}}},
    ),
    Case(
        "mcp_returns_dict_int_keys",
        MCP + "test_structured_output_dict_str_types (dict[int, str])",
        DIFFERS,
        NO_OUTPUT_SCHEMA,
        output={"": None},
    ),
    Case(
        "mcp_returns_none",
        MCP + "test_structured_output_requires_return_annotation (-> None)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "null"}},
    ),
    Case(
        "mcp_returns_unannotated",
        MCP + "test_structured_output_requires_return_annotation (no annotation)",
        output={"": None},
        call={},
        result="hello",
    ),
    Case(
        "mcp_returns_str",
        MCP + "test_structured_output_primitives (str)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "string"}},
    ),
    Case(
        "mcp_returns_int",
        MCP + "test_structured_output_primitives (int)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "integer"}},
        call={},
        result=42,
    ),
    Case(
        "mcp_returns_float",
        MCP + "test_structured_output_primitives (float)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "number"}},
    ),
    Case(
        "mcp_returns_bool",
        MCP + "test_structured_output_primitives (bool)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "boolean"}},
    ),
    Case(
        "mcp_returns_list",
        MCP + "test_structured_output_generic_types (list[str])",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": "array", "items": {"type": "string"}}},
    ),
    Case(
        "mcp_returns_union",
        MCP + "test_structured_output_generic_types (str | int)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": ["string", "integer"]}},
    ),
    Case(
        "mcp_returns_optional",
        MCP + "test_structured_output_generic_types (str | None)",
        DIFFERS,
        UNWRAPPED,
        output={"": {"type": ["string", "null"]}},
    ),
    Case(
        "mcp_returns_dataclass",
        MCP + "test_structured_output_dataclass",
        output={"/$defs/Contact/required": ["name", "age"], "/$defs/Contact/properties/email/default": None},
        call={},
        result={"name": "Bob", "age": 25, "email": None, "tags": None},
    ),
    Case(
        "mcp_returns_partial_typed_dict",
        MCP + "test_structured_output_typeddict (total=False)",
        output={"/$defs/PartialContact/required": ["name"]},
        call={},
        result={"name": "Dave"},
    ),
    Case(
        "mcp_returns_full_typed_dict",
        MCP + "test_structured_output_typeddict (total)",
        output={"/$defs/FullContact/required": ["name", "age", "email"]},
        call={},
        result={"name": "Eve", "age": 40, "email": None},
    ),
    Case(
        "mcp_returns_described_typed_dict",
        MCP + "test_structured_output_typeddict_qualifiers_and_metadata",
        FIXED,
        "item 8: a TypedDict's docstring becomes its object's description",
        output={"/$defs/Forecast/description": "Tomorrow's weather.", "/$defs/Forecast/required": ["city", "high"]},
    ),
    Case(
        "mcp_returns_plain_class",
        MCP + "test_structured_output_ordinary_class",
        DIFFERS,
        NO_OUTPUT_SCHEMA,
        output={"": None},
    ),
    Case(
        "mcp_returns_named_tuple",
        MCP + "test_structured_output_unserializable_type_error (NamedTuple)",
        DIFFERS,
        "a NamedTuple is a JSON array with prefixItems, as it is as a parameter",
        output={"/$defs/Point/prefixItems": [{"type": "integer"}, {"type": "integer"}]},
        call={},
        result=[1, 2],
    ),
    Case(
        "mcp_returns_constrained",
        MCP + "test_preserves_pydantic_metadata (annotated-types)",
        output={"": {"type": "integer", "exclusiveMinimum": 1}},
        call={},
        result=2,
    ),
]
