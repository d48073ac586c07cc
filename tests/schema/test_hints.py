from __future__ import annotations

import types

import annotated_types as at
import pytest

from tinytools import Param, ToolDefinitionError, tool
from tinytools._schema.annotations import split_annotated
from tinytools._schema.hints import SchemaBuilder

CASE_NAMES = [
    "scalars",
    "choices",
    "containers",
    "optionals",
    "structured",
    "formats",
    "constrained",
    "hidden",
    "nested_meta",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_schema(cases: types.ModuleType, name: str) -> None:
    assert getattr(cases, name).input_schema == getattr(cases, f"EXPECTED_{name}")


def test_injected_names_are_listed_not_shown(cases: types.ModuleType) -> None:
    assert cases.hidden.injected == ("session", "key", "call")
    assert set(cases.hidden.input_schema["properties"]) == {"city"}


def test_description_from_docstring(cases: types.ModuleType) -> None:
    assert cases.scalars.description == "Every scalar."
    assert cases.constrained.description == "Search."


def test_output_schema_from_return_annotation(cases: types.ModuleType) -> None:
    assert cases.hidden.output_schema == {"type": "object"}
    assert cases.scalars.output_schema == {"type": "null"}


def test_output_schema_none_without_annotation(define) -> None:
    module = define("@tool\ndef f(x: int):\n    return x\n")
    assert module.f.output_schema is None


def test_output_schema_none_when_inexpressible(define) -> None:
    module = define("class Opaque: ...\n@tool\ndef f(x: int) -> Opaque:\n    return Opaque()\n")
    assert module.f.output_schema is None


def test_annotated_types_are_honoured(define) -> None:
    module = define(
        "import annotated_types as at\n"
        "@tool\n"
        "def f(a: Annotated[int, at.Ge(1), at.Lt(10)], b: Annotated[str, at.Len(2, 5)],"
        " c: Annotated[list[int], at.MaxLen(3)], d: Annotated[float, at.Interval(gt=0, le=1)],"
        " e: Annotated[int, at.MultipleOf(5)]) -> None: ...\n"
    )
    assert at is not None
    assert module.f.input_schema["properties"] == {
        "a": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "b": {"type": "string", "minLength": 2, "maxLength": 5},
        "c": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "d": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "e": {"type": "integer", "multipleOf": 5},
    }


def test_foreign_metadata_is_left_alone() -> None:
    from typing import Annotated

    marker = object()
    base, metadata = split_annotated(Annotated[Annotated[int, "a"], marker])
    assert base is int
    assert metadata == ("a", marker)
    schema, _ = SchemaBuilder("t").build(Annotated[int, marker, Param(ge=0)])
    assert schema == {"type": "integer", "minimum": 0}


def test_pydantic_model_parameter(define) -> None:
    module = define(
        "import pydantic\n"
        "class Filter(pydantic.BaseModel):\n"
        "    field: str\n"
        "    limit: int = 5\n"
        "@tool\n"
        "def f(flt: Filter) -> None: ...\n"
    )
    schema = module.f.input_schema
    assert schema["properties"]["flt"] == {"$ref": "#/$defs/Filter"}
    filter_schema = schema["$defs"]["Filter"]
    assert filter_schema["required"] == ["field"]
    assert filter_schema["properties"]["limit"]["default"] == 5


@pytest.mark.parametrize(
    ("source", "parameter", "needle"),
    [
        ("def f(*args: int) -> None: ...", "args", "*args"),
        ("def f(**kwargs: int) -> None: ...", "kwargs", "**kwargs"),
        ("class Db: ...\ndef f(db: Db) -> None: ...", "db", "mark it Injected"),
        ("def f(data: bytes) -> None: ...", "data", "no JSON Schema for type 'bytes'"),
        ("def f(table: dict[int, str]) -> None: ...", "table", "keys must be str"),
    ],
)
def test_inexpressible_signatures_are_refused(define, source: str, parameter: str, needle: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        define(source + "\ntool(f)\n")
    assert info.value.tool == "f"
    assert info.value.parameter == parameter
    assert needle in str(info.value)


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "naïve", "a.b", "a/b"])
def test_invalid_tool_names_are_refused(name: str) -> None:
    def f() -> None: ...

    with pytest.raises(ToolDefinitionError, match="1 to 64"):
        tool(name=name)(f)


def test_unresolvable_forward_reference(define) -> None:
    with pytest.raises(ToolDefinitionError, match="cannot resolve"):
        define("def f(x: 'Missing') -> None: ...\ntool(f)\n")


def test_positional_only_parameters_are_passed_by_keyword(define) -> None:
    from tinytools import ToolCall, dispatch

    module = define("@tool\ndef f(a: int, /, b: int) -> int:\n    return a - b\n")
    assert module.f(5, 2) == 3
    assert dispatch(ToolCall("1", "f", '{"a": 5, "b": 2}'), [module.f]).output == 3
