"""The strict-mode rendering (tinytools._schema.strict_mode) and the mapping of null back to defaults."""

from __future__ import annotations

import ast
import dataclasses
import datetime
import decimal
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest

from tinytools import ArgumentsError, Dispatcher, Param, SchemaError, Tool, Toolbox, ToolCall, dispatch, tool
from tinytools._schema.hints import DECIMAL_PATTERN


@dataclasses.dataclass
class Address:
    street: str
    zip: str | None = None
    country: str = "FR"


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)


BILLING = Address("1 Main St")
DAY = datetime.date(2030, 1, 1)


@tool
def book(
    city: str,
    unit: Literal["c", "f"] = "c",
    nights: Annotated[int, Param(ge=1)] = 1,
    note: str | None = None,
    address: Address | None = None,
    billing: Address = BILLING,
    day: datetime.date = DAY,
    tree: Node | None = None,
) -> dict[str, Any]:
    """Book a room.

    Args:
        city: City name
        unit: Temperature unit.
    """
    return {
        "city": city,
        "unit": unit,
        "nights": nights,
        "note": note,
        "address": address,
        "billing": billing,
        "day": day.isoformat(),
        "tree": tree,
    }


ADDRESS = {
    "type": "object",
    "properties": {
        "street": {"type": "string"},
        "zip": {"type": ["string", "null"]},
        "country": {"type": ["string", "null"], "description": 'Optional: null means the default ("FR").'},
    },
    "required": ["street", "zip", "country"],
    "additionalProperties": False,
}


def test_renders_every_property_required_optional_ones_nullable_and_objects_closed() -> None:
    assert book.strict().schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {
                "type": ["string", "null"],
                "enum": ["c", "f", None],
                "description": 'Temperature unit. Optional: null means the default ("c").',
            },
            "nights": {
                "type": ["integer", "null"],
                "minimum": 1,
                "description": "Optional: null means the default (1).",
            },
            "note": {"type": ["string", "null"]},
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
            "billing": {
                "anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}],
                "description": 'Optional: null means the default ({"street":"1 Main St","zip":null,"country":"FR"}).',
            },
            "day": {
                "type": ["string", "null"],
                "format": "date",
                "description": 'Optional: null means the default ("2030-01-01").',
            },
            "tree": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
        },
        "required": ["city", "unit", "nights", "note", "address", "billing", "day", "tree"],
        "additionalProperties": False,
        "$defs": {
            "Address": ADDRESS,
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {
                        "type": ["array", "null"],
                        "items": {"$ref": "#/$defs/Node"},
                        "description": "Optional: null means the default.",
                    },
                },
                "required": ["value", "children"],
                "additionalProperties": False,
            },
        },
    }


def test_defaults_name_what_each_null_stands_for() -> None:
    assert book.strict().defaults == {
        "unit": "c",
        "nights": 1,
        "billing": Address("1 Main St"),
        "day": datetime.date(2030, 1, 1),
    }


NULLS = {
    "city": "Paris",
    "unit": None,
    "nights": None,
    "note": None,
    "address": {"street": "2 Rue", "zip": None, "country": None},
    "billing": None,
    "day": None,
    "tree": {"value": 1, "children": [{"value": 2, "children": None}]},
}


def test_restore_drops_the_nulls_that_stand_for_defaults_at_any_depth() -> None:
    book.strict().validate(NULLS)
    restored = book.strict().restore(NULLS)
    assert restored == {
        "city": "Paris",
        "note": None,  # str | None: null is a value of its own
        "address": {"street": "2 Rue", "zip": None},
        "tree": {"value": 1, "children": [{"value": 2}]},
    }
    assert NULLS["unit"] is None and NULLS["address"]["country"] is None  # the input is untouched
    book.schema.validate(restored)  # valid against the canonical schema


def test_restored_arguments_dispatch_with_the_functions_defaults() -> None:
    result = dispatch(ToolCall("c1", "book", book.strict().restore(NULLS)), Toolbox([book]))
    assert result.status == "succeeded", result.error
    output = json.loads(result.text())
    assert output["unit"] == "c" and output["nights"] == 1
    assert output["billing"] == {"street": "1 Main St", "zip": None, "country": "FR"}
    assert output["address"] == {"street": "2 Rue", "zip": None, "country": "FR"}
    assert output["day"] == "2030-01-01"
    assert output["tree"] == {"value": 1, "children": [{"value": 2, "children": []}]}


def test_restore_leaves_values_that_are_not_null_and_returns_the_same_dict_when_nothing_changes() -> None:
    arguments = {**NULLS, "unit": "f", "address": None, "billing": None, "tree": None}
    restored = book.strict().restore(arguments)
    assert restored["unit"] == "f" and "billing" not in restored
    unchanged = {"city": "Paris", "unit": "f", "nights": 2, "note": "x", "address": None}
    unchanged |= {"billing": {"street": "s", "zip": "1", "country": "DE"}, "day": "2031-02-03", "tree": None}
    assert book.strict().restore(unchanged) is unchanged


def test_the_strict_rendering_is_enforced_as_shown() -> None:
    strict = book.strict()
    with pytest.raises(ArgumentsError) as caught:
        strict.validate({"city": "Paris"})  # strict mode requires every property
    assert caught.value.keyword == "required"
    with pytest.raises(ArgumentsError):
        strict.validate({**NULLS, "address": {"street": "s", "zip": None, "country": None, "x": 1}})


def test_restore_follows_the_branch_of_a_union_that_matches() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        label: str = "p"

    @tool
    def place(where: Point | str) -> str:
        return str(where)

    strict = place.strict()
    assert strict.schema["properties"]["where"] == {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "string"}]}
    assert strict.restore({"where": {"x": 1, "label": None}}) == {"where": {"x": 1}}
    assert strict.restore({"where": "home"}) == {"where": "home"}


def test_the_rendering_is_cached_per_tool() -> None:
    assert book.strict() is book.strict()


def test_formats_strict_mode_does_not_know_move_into_the_description() -> None:
    @tool
    def pay(amount: decimal.Decimal) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        return str(amount)

    assert pay.strict().schema["properties"]["amount"] == {
        "type": "string",
        "pattern": DECIMAL_PATTERN,  # the format strict mode does not know, its pattern it does
        "description": "How much. Format: decimal.",
    }


def _with(schema: dict[str, Any]) -> Tool[..., Any]:
    root = {"type": "object", "properties": {"x": schema}, "required": ["x"], "additionalProperties": False}
    return Tool.from_schema("t", "", root, lambda **kw: kw)


@pytest.mark.parametrize(
    ("schema", "pointer", "words"),
    [
        ({}, "/properties/x", "needs a type"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "/properties/x", "free-form"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "/properties/x/uniqueItems", "set"),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
            "/properties/x/prefixItems",
            "tuple",
        ),
        ({"type": "string", "minLength": 1}, "/properties/x/minLength", "length"),
        ({"allOf": [{"type": "string"}, {"pattern": "a"}]}, "/properties/x/allOf", "combine"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "/properties/x/oneOf", "anyOf"),
        ({"type": "string", "not": {"const": "a"}}, "/properties/x/not", "not in the subset"),
    ],
)
def test_refuses_what_strict_mode_cannot_express(schema: dict[str, Any], pointer: str, words: str) -> None:
    with pytest.raises(SchemaError) as caught:
        _with(schema).strict()
    error = caught.value
    assert (error.tool, error.parameter, error.pointer) == ("t", "x", pointer)
    assert words in error.reason and "export without strict=True" in error.reason


def test_a_strict_dispatcher_refuses_a_tool_strict_mode_cannot_show_when_made_not_at_its_calls() -> None:
    @tool
    def scores(table: dict[str, int]) -> int:
        """Count the entries of a table."""
        return len(table)

    @tool
    def count(n: int) -> int:
        """Return a count."""
        return n

    with pytest.raises(SchemaError) as caught:
        Dispatcher([count, scores], strict=True)
    assert (caught.value.tool, caught.value.parameter) == ("scores", "table")
    both = Dispatcher([count, scores])  # not strict: both are offered, and answer
    assert [
        r.status for r in both.dispatch_many([ToolCall("a", "count", '{"n": 1}'), ToolCall("b", "scores", "{}")])
    ] == [
        "succeeded",
        "failed",
    ]
    assert Dispatcher([count], strict=True).dispatch(ToolCall("c", "count", '{"n": 2}')).output == 2


def test_a_vendors_x_keywords_are_not_shown_to_a_strict_provider() -> None:
    strict = _with({"type": "string", "x-mcp-header": "Region", "x-note": {"any": "thing"}}).strict()
    assert strict.schema["properties"]["x"] == {"type": "string"}


def test_an_optional_argument_of_shared_definitions_is_read_once_per_definition() -> None:
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, 7):  # 10**6 paths down to L0
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(10)]}
    root = {"type": "object", "properties": {"x": {"$ref": "#/$defs/L6"}}, "additionalProperties": False}
    made = Tool.from_schema("deep", "", {**root, "$defs": defs}, lambda **kw: kw)
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call" and frame.f_code.co_name == "accepts_null"

    sys.setprofile(profile)
    try:
        strict = made.strict()
    finally:
        sys.setprofile(None)
    assert strict.schema["properties"]["x"]["anyOf"] == [{"$ref": "#/$defs/L6"}, {"type": "null"}]
    assert calls <= 1 + 7 * 11


def test_an_open_object_with_properties_is_closed() -> None:
    tool_ = _with({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert tool_.strict().schema["properties"]["x"] == {
        "type": "object",
        "properties": {"a": {"type": ["integer", "null"], "description": "Optional: null means the default."}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_strict_imports_only_lower_layers() -> None:
    source = Path(__file__).parents[2] / "tinytools" / "_schema" / "strict_mode.py"
    imported = {
        node.module
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tinytools")
    }
    lower = {"tinytools._errors", "tinytools._schema.input_schema", "tinytools._schema.fragments"}
    assert imported <= lower | {"tinytools._schema.validation_failures"}
