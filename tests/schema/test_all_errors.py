"""Every failing argument at once: `ArgumentsError.errors` lists each one, up to `MAX_LISTED`.

The compiled check of an arguments object checks every argument to its first failure in one pass;
what lies beside a failure inside an argument, and beside a failure of any other root, is found
afterwards, on the failure path only. These tests pin what is listed (missing, unexpected and
invalid arguments, one entry each), its order (the first failure first), the bound, and that a
root checked in no known order (``minProperties``, ``allOf``) is listed just as fully.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.strategies import FaultyCall, Signature, build_tool, faulty_calls, signatures
from tinytools import ArgumentsError, InputSchema, ToolCall, dispatch
from tinytools._errors import MAX_LISTED
from tinytools._schema.input_schema import compile_validator

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
UNORDERED = {**WEATHER, "minProperties": 1}  # a root keyword the order of the check does not cover
ALL_OF = {**WEATHER, "allOf": [{"properties": {"unit": {"const": "c"}}}]}


def failure(schema: dict[str, Any], arguments: Any) -> ArgumentsError:
    error = InputSchema.parse(schema).check(arguments)
    assert error is not None
    return error


def listed(error: ArgumentsError) -> list[tuple[str, str, str | None]]:
    return [(each.pointer, each.keyword, each.parameter) for each in error.errors]


@pytest.mark.parametrize("schema", [WEATHER, UNORDERED], ids=["ordered", "unordered"])
def test_missing_unexpected_and_invalid_arguments_are_all_listed(schema: dict[str, Any]) -> None:
    error = failure(schema, {"unit": "k", "tags": [1], "zz": 1, "a/b": 2})
    assert (error.pointer, error.keyword, error.parameter) == ("", "required", "city")
    assert error.reason == "missing required arguments 'city', 'days'"  # the first failure, as before
    assert listed(error) == [
        ("", "required", "city"),
        ("", "required", "days"),
        ("/unit", "enum", "unit"),
        ("/tags/0", "type", "tags"),
        ("/zz", "additionalProperties", "zz"),
        ("/a~1b", "additionalProperties", "a/b"),
    ]
    assert [each.reason for each in error.errors] == [
        "missing required argument 'city'",
        "missing required argument 'days'",
        'expected one of "c", "f"; got "k"',
        "expected string; got 1",
        "unexpected argument 'zz' (allowed: city, unit, days, tags)",
        "unexpected argument 'a/b' (allowed: city, unit, days, tags)",
    ]
    assert error.unlisted == 0
    assert error.errors[2].schema == WEATHER["properties"]["unit"]  # each with its own fragment


@pytest.mark.parametrize("schema", [WEATHER, UNORDERED, ALL_OF], ids=["ordered", "unordered", "allOf"])
def test_the_first_failure_leads_and_arguments_before_it_are_not_listed_twice(schema: dict[str, Any]) -> None:
    error = failure(schema, {"city": "", "days": 9, "unit": "c", "tags": ["a", "b", "c"]})
    assert (error.pointer, error.keyword) == ("/city", "minLength")
    assert listed(error) == [
        ("/city", "minLength", "city"),
        ("/days", "maximum", "days"),
        ("/tags", "maxItems", "tags"),
    ]


def test_a_failure_only_the_root_finds_is_listed_beside_the_arguments() -> None:
    error = failure(ALL_OF, {"city": "Oslo", "days": 2, "unit": "f", "tags": [3]})
    assert listed(error) == [("/unit", "const", "unit"), ("/tags/0", "type", "tags")]
    error = failure({**WEATHER, "maxProperties": 2}, {"city": "Oslo", "days": 0, "unit": "f"})
    assert listed(error) == [("", "maxProperties", None), ("/days", "minimum", "days")]


def test_one_failure_lists_itself_and_adds_nothing() -> None:
    error = failure(WEATHER, {"city": "Oslo", "days": 8})
    assert error.errors == (error,) and error.unlisted == 0
    assert str(error) == "argument 'days' at /days: expected at most 7; got 8"


def test_the_list_is_bounded_and_counts_the_rest() -> None:
    arguments = {"city": "Oslo", "days": 1, **{f"extra{index}": index for index in range(25)}}
    error = failure(WEATHER, arguments)
    assert len(error.errors) == MAX_LISTED and error.unlisted == 25 - MAX_LISTED
    assert [each.parameter for each in error.errors] == [f"extra{index}" for index in range(MAX_LISTED)]
    assert str(error).endswith(f"; and {25 - MAX_LISTED} more")


def test_a_long_made_up_name_is_echoed_cut() -> None:
    name = "k" * 5_000
    error = failure(WEATHER, {"city": "Oslo", "days": 1, name: 1, "other": 2})
    assert len(error.errors) == 2 and error.errors[0].parameter == name  # the field keeps it whole
    assert all(len(each.reason) < 500 for each in error.errors)


def test_str_names_every_argument_and_the_error_survives_pickling() -> None:
    error = failure(WEATHER, {"city": 3, "days": "x"})
    error.tool = "weather"
    assert str(error) == (
        "tool 'weather': argument 'city' at /city: expected string; got 3; "
        "argument 'days' at /days: expected integer; got \"x\""
    )
    copy = pickle.loads(pickle.dumps(error))
    assert listed(copy) == listed(error) and str(copy) == str(error)


def test_validate_raises_the_listing_error_and_compile_validator_lists_too() -> None:
    with pytest.raises(ArgumentsError) as caught:
        InputSchema.parse(WEATHER).validate({"city": 3, "days": 0})
    assert listed(caught.value) == [("/city", "type", "city"), ("/days", "minimum", "days")]
    with pytest.raises(ArgumentsError) as caught:
        compile_validator(WEATHER)({"zz": 1})
    assert [each.parameter for each in caught.value.errors] == ["city", "days", "zz"]


def test_references_and_nested_failures_are_found_in_each_argument() -> None:
    schema = {
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {"a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/$defs/point"}, "c": {"type": "boolean"}},
        "additionalProperties": False,
    }
    error = failure(schema, {"a": {"x": "1"}, "b": {}, "c": 1})
    assert listed(error) == [("/a/x", "type", "a"), ("/b", "required", "b"), ("/c", "type", "c")]


@pytest.mark.parametrize("schema", [WEATHER, UNORDERED], ids=["ordered", "unordered"])
def test_an_argument_nested_too_deeply_to_check_keeps_the_failures_found_before_it(schema: dict[str, Any]) -> None:
    deep: list[Any] = []
    for _ in range(5_000):  # a Python value: JSON text this deep is refused before it is checked
        deep = [deep]
    error = failure(
        {
            **schema,
            "properties": {**schema["properties"], "tags": {"$ref": "#/$defs/nest"}},
            "$defs": {"nest": {"type": "array", "items": {"$ref": "#/$defs/nest"}}},
        },
        {"city": "", "days": 2, "tags": deep},
    )
    assert listed(error)[0] == ("/city", "minLength", "city")


@pytest.mark.parametrize("depth", [7, 8, 9, 16])
@pytest.mark.parametrize("keyword", ["contains", "anyOf"])
def test_an_argument_nested_past_where_subschemas_get_functions_of_their_own_compiles(keyword: str, depth: int) -> None:
    """Each argument's checks sit in two more blocks than before (Python allows 20 statically nested)."""
    node: dict[str, Any] = {"type": "integer"}
    for level in range(depth):  # `contains` nests a loop and a trial a level, `anyOf` a trial and a loop
        inner = {"type": "array", "contains": node} if keyword == "contains" else {"type": "array", "items": node}
        node = inner if keyword == "contains" or level % 2 else {"anyOf": [inner, {"type": "null"}]}
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "x": node}, "additionalProperties": False}
    value: Any = "deepest"
    for _ in range(depth):
        value = [value]
    assert [each.parameter for each in failure(schema, {"a": 1, "x": value}).errors] == ["a", "x"]


def test_a_name_that_is_not_a_string_is_named_not_a_crash() -> None:
    error = failure(WEATHER, {"city": 3, "days": 1, 7: "x"})  # only a Python value checked directly holds one
    assert ("/7", "additionalProperties", "7") in listed(error)
    assert listed(error)[0] == ("/city", "type", "city")


def test_a_value_that_is_not_an_object_has_one_failure() -> None:
    error = failure(WEATHER, [1, 2])
    assert error.errors == (error,) and error.keyword == "type"


# --- the property: exactly the arguments made bad are named --------------------------------


@st.composite
def bad_calls(draw: st.DrawFn) -> tuple[Signature, dict[str, Any], dict[str, Any], set[str]]:
    """A generated tool, arguments with a random subset of them bad, and the names at fault."""
    signature = draw(signatures().filter(lambda s: s.parameters))
    defaults = {p.name: draw(p.case.valid) for p in signature.parameters if p.has_default}
    arguments: dict[str, Any] = {}
    bad: set[str] = set()
    for p in signature.parameters:
        fate = draw(st.sampled_from(["valid", "invalid", "omitted"]))
        if fate == "invalid":
            arguments[p.name] = draw(p.case.invalid)
            bad.add(p.name)
        elif fate == "valid":
            arguments[p.name] = msgspec.to_builtins(draw(p.case.valid))
        elif not p.has_default:
            bad.add(p.name)  # a required argument left out
    names = {p.name for p in signature.parameters}
    extra = draw(st.lists(st.text(min_size=1, max_size=6).filter(lambda k: k not in names), max_size=4, unique=True))
    arguments.update(dict.fromkeys(extra, 0))
    return signature, defaults, arguments, bad | set(extra)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad_calls())
def test_exactly_the_bad_arguments_are_named(case: tuple[Signature, dict[str, Any], dict[str, Any], set[str]]) -> None:
    signature, defaults, arguments, bad = case
    assume(bad)
    made, seen = build_tool(signature, defaults)
    error = made.schema.check(arguments)
    assert error is not None
    named = [each.parameter for each in error.errors]
    total = len(named) + error.unlisted
    assert set(named) <= bad and total >= len(bad)  # a bad argument may hold several problems (a tuple's items)
    assert len(named) == min(total, MAX_LISTED)
    if total <= MAX_LISTED:
        assert set(named) == bad
    assert (error.errors[0].pointer, error.errors[0].parameter) == (error.pointer, error.parameter)
    unordered = InputSchema.parse({**made.input_schema, "minProperties": 0}).check(arguments)
    assert unordered is not None and listed(unordered) == listed(error)  # the shortcut of a known order agrees
    payload = msgspec.json.encode(arguments)
    result = dispatch(ToolCall("p", made.name, payload), [made], inject=dict.fromkeys(signature.injected))
    assert seen == {} and result.error is not None and result.error.code == "invalid_arguments"
    details = result.error.details
    assert details is not None
    if total == 1:
        assert "errors" not in details
        return
    assert [entry["parameter"] for entry in details["errors"]] == named
    assert details["unlisted"] == error.unlisted
    message = result.error.message
    assert all(f"- argument {name!r} at " in message for name in named)


def test_names_that_need_escaping_or_quoting_are_each_found() -> None:
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in ("a/b~c", "x.y", "{z}", "q'", "")},
        "additionalProperties": False,
    }
    error = failure(schema, dict.fromkeys(("a/b~c", "x.y", "{z}", "q'", ""), "1"))
    assert [each.pointer for each in error.errors] == ["/a~1b~0c", "/x.y", "/{z}", "/q'", "/"]


# --- failures inside an argument, at any depth ----------------------------------------------

ADDRESS = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "floor": {"type": "integer"},
    },
    "required": ["city", "zip", "floor"],
    "additionalProperties": False,
}
SHIP = {
    "type": "object",
    "properties": {
        "to": {"$ref": "#/$defs/Address"},
        "via": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/Address"}, "maxItems": 2},
        "weight": {"type": "number"},
    },
    "required": ["to", "weight"],
    "additionalProperties": False,
    "$defs": {"Address": ADDRESS},
}
CITY, ZIP, FLOOR = (ADDRESS["properties"][name] for name in ("city", "zip", "floor"))


def entries(error: ArgumentsError) -> list[tuple[str, str, str | None, Any]]:
    return [(each.pointer, each.keyword, each.parameter, each.schema) for each in error.errors]


def test_every_problem_inside_a_nested_model_is_listed_with_its_own_schema() -> None:
    error = failure(SHIP, {"to": {"city": 1, "floor": "x", "x": 1}, "weight": 1.0})
    assert entries(error) == [
        ("/to", "required", "to", ZIP),  # the missing property's schema, not the model's
        ("/to/city", "type", "to", CITY),
        ("/to/floor", "type", "to", FLOOR),
        ("/to/x", "additionalProperties", "to", None),
    ]
    assert [each.reason for each in error.errors] == [
        "missing required property 'zip'",
        "expected string; got 1",
        'expected integer; got "x"',
        "unexpected property 'x' (allowed: city, zip, floor)",
    ]
    assert (error.pointer, error.keyword) == ("/to", "required")  # the first failure leads


def test_problems_in_several_arguments_and_items_are_each_listed() -> None:
    arguments = {
        "to": {"city": "Oslo", "zip": "0150", "floor": 2},
        "stops": [{"city": "Rome", "zip": "00100", "floor": 1}, {"city": 3, "zip": "1", "floor": 0}, 7],
        "weight": "heavy",
    }
    error = failure(SHIP, arguments)
    assert entries(error) == [
        ("/to/zip", "pattern", "to", ZIP),
        ("/stops", "maxItems", "stops", SHIP["properties"]["stops"]),
        ("/stops/1/city", "type", "stops", CITY),
        ("/stops/1/zip", "pattern", "stops", ZIP),
        ("/stops/2", "type", "stops", {"$ref": "#/$defs/Address"}),  # the item's schema, as written
        ("/weight", "type", "weight", {"type": "number"}),
    ]


def test_an_optional_model_is_explained_by_the_problems_inside_it() -> None:
    error = failure(SHIP, {"to": {"city": "Oslo", "zip": "01500", "floor": 2}, "via": {"city": 1}, "weight": 1})
    assert entries(error) == [
        ("/via", "required", "via", ZIP),
        ("/via", "required", "via", FLOOR),
        ("/via/city", "type", "via", CITY),
    ]
    assert (error.pointer, error.keyword, error.reason) == ("/via", "required", "missing required property 'zip'")
    alone = failure(
        SHIP,
        {
            "to": {"city": "Oslo", "zip": "01500", "floor": 2},
            "via": {"city": 1, "zip": "01500", "floor": 1},
            "weight": 1,
        },
    )
    assert alone.errors == (alone,) and (alone.pointer, alone.keyword, alone.schema) == ("/via/city", "type", CITY)
    number = failure(SHIP, {"to": {"city": "Oslo", "zip": "01500", "floor": 2}, "via": 5, "weight": 1})
    assert (number.pointer, number.keyword) == ("/via", "anyOf")  # not an object: no branch to look in


def test_nested_problems_are_bounded_and_the_rest_counted() -> None:
    stops = [{"city": index, "zip": index, "floor": "x"} for index in range(2)]
    error = failure(
        {
            **SHIP,
            "properties": {**SHIP["properties"], "stops": {"type": "array", "items": {"$ref": "#/$defs/Address"}}},
        },
        {"to": {"city": 1, "zip": 2, "floor": "3", "a": 0, "b": 0}, "stops": stops * 5, "weight": 1},
    )
    assert len(error.errors) == MAX_LISTED and error.unlisted == 5 + 3 * 10 - MAX_LISTED
    assert [each.pointer for each in error.errors[:5]] == ["/to/city", "/to/zip", "/to/floor", "/to/a", "/to/b"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(faulty_calls())
def test_every_fault_at_any_depth_is_listed_once_with_its_own_schema(case: FaultyCall) -> None:
    assume(case.faults)
    error = InputSchema.parse(case.schema).check(case.arguments)
    assert error is not None
    expected = sorted((f.pointer, f.keyword, json.dumps(f.schema, sort_keys=True)) for f in case.faults)
    found = sorted((e.pointer, e.keyword, json.dumps(e.schema, sort_keys=True)) for e in error.errors)
    assert len(found) + error.unlisted == len(expected)
    if len(expected) <= MAX_LISTED:
        assert found == expected
    else:
        assert len(found) == MAX_LISTED and all(found.count(each) <= expected.count(each) for each in found)
    assert (error.errors[0].pointer, error.errors[0].keyword) == (error.pointer, error.keyword)


TAGGED = {
    "type": "object",
    "properties": {
        "shape": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "circle"}, "radius": {"type": "number", "minimum": 0}},
                    "required": ["kind", "radius"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                    "required": ["kind", "side"],
                    "additionalProperties": False,
                },
            ]
        }
    },
    "required": ["shape"],
    "additionalProperties": False,
}


def test_a_tagged_union_is_explained_by_the_branch_its_tag_names() -> None:
    circle = failure(TAGGED, {"shape": {"kind": "circle", "radius": -1}})
    assert (circle.pointer, circle.keyword) == ("/shape/radius", "minimum")
    square = failure(TAGGED, {"shape": {"kind": "square", "side": "2", "radius": 1}})
    assert listed(square) == [("/shape/side", "type", "shape"), ("/shape/radius", "additionalProperties", "shape")]


def test_a_tag_no_branch_has_is_the_failure_of_the_tag() -> None:
    error = failure(TAGGED, {"shape": {"kind": "hexagon", "side": 2}})
    assert (error.pointer, error.keyword) == ("/shape/kind", "enum")
    assert "circle" in error.reason and "square" in error.reason
    untagged = failure(TAGGED, {"shape": {"side": 2}})  # no tag at all: no branch to blame
    assert (untagged.pointer, untagged.keyword) == ("/shape", "anyOf")


@st.composite
def tagged_unions(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    """A tagged union of 2 to 6 object branches, and a value that may fit one, several or none."""
    count = draw(st.integers(2, 6))
    tags = draw(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), min_size=count, max_size=count, unique=True)
    )
    branches = []
    for tag in tags:
        field = draw(st.sampled_from([{"type": "integer"}, {"type": "string", "maxLength": 2}, {"type": "boolean"}]))
        branches.append(
            {
                "type": "object",
                "properties": {"kind": {"const": tag}, "x": field},
                "required": draw(st.sampled_from([["kind", "x"], ["x"], []])),
                "additionalProperties": draw(st.booleans()),
            }
        )
    schema = {
        "type": "object",
        "properties": {"shape": {"anyOf": branches}},
        "required": ["shape"],
        "additionalProperties": False,
    }
    kind = draw(st.one_of(st.sampled_from(tags), st.just("zz"), st.integers(0, 2), st.none()))
    shape: dict[str, Any] = {} if kind is None else {"kind": kind}
    if draw(st.booleans()):
        shape["x"] = draw(st.one_of(st.integers(-3, 3), st.text("ab", max_size=3), st.booleans()))
    if draw(st.booleans()):
        shape["extra"] = 1
    return schema, {"shape": draw(st.one_of(st.just(shape), st.integers(), st.lists(st.integers(), max_size=1)))}


@settings(max_examples=300, deadline=None)
@given(case=tagged_unions())
def test_a_tagged_union_is_checked_as_fastjsonschema_checks_it(case: tuple[dict[str, Any], Any]) -> None:
    import fastjsonschema

    schema, value = case
    reference = fastjsonschema.compile(schema)
    try:
        reference(value)
        expected = True
    except fastjsonschema.JsonSchemaValueException:
        expected = False
    assert (InputSchema.parse(schema).check(value) is None) == expected


def test_a_value_for_a_false_schema_gets_an_error_not_a_crash() -> None:
    error = failure(
        {"type": "object", "properties": {"v": False}, "required": ["v"], "additionalProperties": False}, {"v": {}}
    )
    assert error.pointer == "/v"
