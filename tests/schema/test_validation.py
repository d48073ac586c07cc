from __future__ import annotations

import copy
import enum
import json
import random
import re
import shutil
import subprocess
import sys
from collections import Counter, OrderedDict
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytools import Tool, Toolbox
from tinytools._errors import ArgumentsError, SchemaError
from tinytools._schema.anchors import pointed
from tinytools._schema.input_schema import MAX_SCHEMA_DEPTH, InputSchema, compile_validator
from tinytools._schema.patterns import translate_pattern
from tinytools._schema.references import Call, repeated_targets
from tinytools.providers import anthropic, gemini, openai

DIALECT = "https://json-schema.org/draft/2020-12/schema"
WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z ]+$"},
        "unit": {"enum": ["c", "f"], "description": "Temperature unit."},
        "days": {"type": "integer", "minimum": 1, "maximum": 100},
        "limit": {"type": ["integer", "null"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}},
        "point": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "required": ["x"],
            "additionalProperties": False,
        },
        "a/b~c": {"type": "boolean"},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def closed(properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties or {},
        "additionalProperties": False,
        **extra,
    }


def resolve(data: Any, pointer: str) -> Any:
    """Follow an RFC 6901 pointer; raises if it does not exist in ``data``."""
    for token in pointer.split("/")[1:] if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        data = data[int(token)] if isinstance(data, list) else data[token]
    return data


def outcome(check: Any, data: Any) -> tuple[str, str, str | None, str] | None:
    try:
        check(data)
    except ArgumentsError as exc:
        return exc.pointer, exc.keyword, exc.parameter, exc.reason
    return None


def accepts(schema: Any, data: Any) -> bool:
    return outcome(compile_validator(schema), data) is None


scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
weather_arguments = st.dictionaries(
    st.sampled_from([*WEATHER["properties"], "bogus", "x/y"]), json_values, max_size=5
) | st.fixed_dictionaries(
    {"city": st.sampled_from(["Paris", "New York", "", "L1"])},
    optional={
        "unit": st.sampled_from(["c", "f", "k", 0]),
        "days": st.integers(-5, 200) | st.floats(0, 200),
        "limit": st.none() | st.integers() | st.text(max_size=2),
        "tags": st.lists(st.text(max_size=7) | st.integers(), max_size=4),
        "point": st.dictionaries(st.sampled_from(["x", "y"]), json_values, max_size=2),
    },
)


# --- parsing: the root rule, copies, JSON text -------------------------------------------------


def test_parse_keeps_a_deep_copy_of_the_schema() -> None:
    raw = copy.deepcopy(WEATHER)
    schema = InputSchema.parse(raw)
    raw["properties"]["unit"]["enum"].append("k")
    assert schema.schema == WEATHER
    assert schema.properties == WEATHER["properties"]
    assert schema.required == ("city",)
    assert repr(schema).startswith("InputSchema(properties=['city', 'unit'")


def test_parse_without_copy_keeps_a_plain_schema_and_checks_it() -> None:
    raw = copy.deepcopy(WEATHER)
    schema = InputSchema.parse(raw, copy=False)
    assert schema.schema is raw
    assert outcome(schema.validate, {"city": 1}) == outcome(InputSchema.parse(WEATHER).validate, {"city": 1})
    other = {**copy.deepcopy(WEATHER), "required": ("city",)}  # not plain JSON: copied
    assert InputSchema.parse(other, copy=False).schema == WEATHER


@pytest.mark.parametrize("encode", [json.dumps, lambda s: json.dumps(s).encode()])
def test_parse_accepts_json_text(encode: Any) -> None:
    assert InputSchema.parse(encode(WEATHER)).schema == WEATHER


def test_smallest_input_schema() -> None:
    schema = InputSchema.parse(closed())
    schema.validate({})
    with pytest.raises(ArgumentsError) as caught:
        schema.validate({"x": 1})
    assert (caught.value.pointer, caught.value.parameter) == ("/x", "x")
    assert caught.value.reason == "unexpected argument 'x' (allowed: none)"


def test_compiles_on_first_validate_only() -> None:
    schema = InputSchema.parse(WEATHER)
    assert "check" not in vars(schema)
    schema.validate({"city": "Paris"})
    compiled = vars(schema)["check"]
    schema.validate({"city": "Rome"})
    assert vars(schema)["check"] is compiled
    with pytest.raises(ArgumentsError):
        schema.validate({"city": 1})
    problem = schema.check({"city": 1})  # the same error, returned rather than raised
    assert isinstance(problem, ArgumentsError) and problem.pointer == "/city"
    assert schema.check({"city": "Oslo"}) is None


REFUSED: list[tuple[Any, str, str]] = [
    ([], "", "object schema"),
    ({"type": "string"}, "/type", "object schema"),
    ({"type": "object"}, "/additionalProperties", "closed"),
    ({"type": "object", "additionalProperties": True}, "/additionalProperties", "closed"),
    (closed(patternProperties={"^x": {}}), "/patternProperties", "named"),
    (closed({"a": {"typo": 1}}), "/properties/a/typo", "unknown keyword 'typo'"),
    (closed({"a": {"$ref": "http://example.com/s.json"}}), "/properties/a/$ref", "local"),
    (closed({"a": {"$ref": "#foo"}}), "/properties/a/$ref", "names no $anchor"),
    (closed({"a": {"$anchor": "1x"}}), "/properties/a/$anchor", "is not a name"),
    (closed({"a": {"$anchor": "x"}, "b": {"$anchor": "x"}}), "/properties/b/$anchor", "given twice"),
    (closed({"a": {"$ref": "#/$defs/missing"}}), "/properties/a/$ref", "points at no schema"),
    (closed({"a": {"$ref": "#/required"}}, required=[]), "/properties/a/$ref", "no schema"),
    (closed({"a": {"$id": "https://example.com/a"}}), "/properties/a/$id", "$id"),
    (closed({"a": {"$dynamicRef": "#x"}}), "/properties/a/$dynamicRef", "$dynamicRef"),
    (closed({"a": {"$dynamicAnchor": "x"}}), "/properties/a/$dynamicAnchor", "$dynamicAnchor"),
    (closed({"a": {"$recursiveRef": "#"}}), "/properties/a/$recursiveRef", "unknown keyword"),
    ({**closed(), "$schema": "http://json-schema.org/draft-07/schema#"}, "/$schema", "2020-12"),
    (closed({"a": {"$schema": DIALECT}}), "/properties/a/$schema", "root"),
    (closed({"a": {"allOf": [{}], "unevaluatedProperties": False}}),
     "/properties/a/unevaluatedProperties", "in-place"),
    (closed({"a": {"$ref": "#/$defs/d", "unevaluatedProperties": False}}, **{"$defs": {"d": {}}}),
     "/properties/a/unevaluatedProperties", "in-place"),
    (closed({"a": {"contains": {}, "unevaluatedItems": False}}),
     "/properties/a/unevaluatedItems", "contains"),
    (closed({"a": {"contains": {}, "minContains": 2}}), "/properties/a", "minContains"),
    (closed({"a": {"contains": {}, "maxContains": 3}}), "/properties/a", "maxContains"),
    (closed({"a": {"pattern": "^\\p{L}+$"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "(?i)a"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "(a)\\1"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "(?<year>a)"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "a{,3}"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "a*+"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "\\Aa\\Z"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "[a"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"pattern": "(?<=a+)b"}}), "/properties/a/pattern", "not portable"),
    (closed({"a": {"patternProperties": {"\\p{L}": {}}}}),
     "/properties/a/patternProperties/\\p{L}", "not portable"),
    (closed({"a": {"minLength": -1}}), "/properties/a/minLength", "invalid value"),
    (closed({"a": {"maxItems": 1.5}}), "/properties/a/maxItems", "invalid value"),
    (closed({"a": {"multipleOf": 0}}), "/properties/a/multipleOf", "invalid value"),
    (closed({"a": {"minimum": True}}), "/properties/a/minimum", "invalid value"),
    (closed({"a": {"type": "str"}}), "/properties/a/type", "invalid value"),
    (closed({"a": {"type": ["string", "string"]}}), "/properties/a/type", "invalid value"),
    (closed({"a": {}}, required=["a", "a"]), "/required", "invalid value"),
    (closed({"a": {"enum": "a"}}), "/properties/a/enum", "invalid value"),
    (closed({"a": {"dependentRequired": {"b": "c"}}}), "/properties/a/dependentRequired", "value"),
    (closed({"a": {"prefixItems": []}}), "/properties/a/prefixItems", "invalid value"),
    (closed({"a": {"anyOf": {}}}), "/properties/a/anyOf", "invalid value"),
    (closed({"a": {"properties": {"b": 1}}}), "/properties/a/properties/b", "object or a boolean"),
    (closed({"a": {"dependencies": {}}}), "/properties/a/dependencies", "dependentRequired"),
    (closed({"a": {"additionalItems": False}}), "/properties/a/additionalItems", "prefixItems"),
    (closed(required=["b"]), "", "forbidden by additionalProperties"),
    (closed({"a": {"const": float("nan")}}), "/properties/a/const", "not a JSON number"),
    (closed({"a": {"enum": [float("inf")]}}), "/properties/a/enum/0", "not a JSON number"),
    (closed({"a": {"enum": [{1: 2}]}}), "/properties/a/enum/0", "keys must be strings"),
    (closed({"a": {"enum": [{1, 2}]}}), "/properties/a/enum/0", "not JSON"),
]  # fmt: skip


@pytest.mark.parametrize("copied", [True, False])
@pytest.mark.parametrize(("schema", "pointer", "message"), REFUSED)
def test_parse_refuses_what_it_cannot_enforce(schema: Any, pointer: str, message: str, copied: bool) -> None:
    with pytest.raises(SchemaError) as caught:
        InputSchema.parse(copy.deepcopy(schema), copy=copied)
    assert caught.value.pointer == pointer
    assert message in caught.value.reason


@pytest.mark.parametrize("text", ['{"type": "object", "additionalProperties": false, "default": NaN}', "{", b"\xff"])
def test_parse_refuses_text_that_is_not_json(text: str | bytes) -> None:
    with pytest.raises(SchemaError) as caught:
        InputSchema.parse(text)
    assert caught.value.pointer == ""


def test_parse_refuses_loops_that_never_descend() -> None:
    defs = {"x": {"allOf": [{"$ref": "#/$defs/y"}]}, "y": {"not": {"$ref": "#/$defs/x"}}}
    with pytest.raises(SchemaError) as caught:
        InputSchema.parse(closed({"a": {"$ref": "#/$defs/x"}}, **{"$defs": defs}))
    assert caught.value.pointer.startswith("/$defs/")
    assert "loop" in caught.value.reason


def test_a_vendors_x_keywords_are_annotations_shown_as_given_and_not_enforced() -> None:
    vendor = {"x-fastmcp-wrap-result": True, "x-ref": {"$ref": "#/nowhere", "type": "integer"}, "x-": None}
    raw = closed({"a": {"type": "integer", "x-unit": "cm", "x-pattern": "^z$"}}, required=["a"], **vendor)
    schema = InputSchema.parse(raw)
    assert schema.schema == raw  # kept, as providers are shown it
    assert schema.check({"a": 3}) is None
    problem = schema.check({"a": "3"})
    assert isinstance(problem, ArgumentsError) and (problem.pointer, problem.keyword) == ("/a", "type")
    output = compile_validator({"type": "object", "properties": {"result": {"type": "string"}}, **vendor})
    output({"result": "yes"})
    with pytest.raises(ArgumentsError):
        output({"result": 1})


def test_a_ref_into_an_x_keyword_is_refused_it_holds_no_schema() -> None:
    raw = closed({"a": {"$ref": "#/x-defs/n"}}, **{"x-defs": {"n": {"type": "integer"}}})
    with pytest.raises(SchemaError) as caught:
        InputSchema.parse(raw)
    assert (caught.value.pointer, "points at no schema" in caught.value.reason) == ("/properties/a/$ref", True)


def test_recursion_through_data_is_accepted() -> None:
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    check = compile_validator(tree)
    check({"kids": [{"kids": []}, {}]})
    with pytest.raises(ArgumentsError) as caught:
        check({"kids": [{"kids": [{"kids": 3}]}]})
    assert caught.value.pointer == "/kids/0/kids/0/kids"


def layered(levels: int, fan: int = 10) -> dict[str, Any]:
    """``x`` of ``levels`` levels of ``anyOf`` over ``fan`` references each to the level below."""
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, levels + 1):
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(fan)]}
    return closed({"x": {"$ref": f"#/$defs/L{levels}"}}, required=["x"], **{"$defs": defs})


def runs(check: Any, data: Any) -> Counter[tuple[Any, int]]:
    """How often each generated function ran on each value while ``check(data)`` ran."""
    counted: Counter[tuple[Any, int]] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == "<string>" and "data" in frame.f_locals:
            counted[(frame.f_code, id(frame.f_locals["data"]))] += 1

    sys.setprofile(profile)
    try:
        check(data)
    finally:
        sys.setprofile(None)
    return counted


def inlined(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` replaced by a copy of its definition (no loops)."""
    if isinstance(schema, list):
        return [inlined(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return {
            **inlined(defs[schema["$ref"][8:]], defs),
            **inlined({k: v for k, v in schema.items() if k != "$ref"}, defs),
        }
    return {key: inlined(value, defs) for key, value in schema.items() if key != "$defs"}


SHARED_DEFS: dict[str, Any] = {
    "Leaf": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 3}, {"const": None}]},
    "Pair": closed({"a": {"$ref": "#/$defs/Leaf"}, "b": {"$ref": "#/$defs/Leaf"}}, required=["a"]),
    "Either": {"anyOf": [{"$ref": "#/$defs/Pair"}, {"type": "array", "items": {"$ref": "#/$defs/Leaf"}}]},
}
SHARED = closed(
    {
        "p": {"$ref": "#/$defs/Pair"},
        "q": {"type": "array", "items": {"$ref": "#/$defs/Either"}},
        "r": {"$ref": "#/$defs/Either"},
        "s": {"allOf": [{"$ref": "#/$defs/Leaf"}, {"not": {"const": 5}}]},
    },
    required=["p"],
    **{"$defs": SHARED_DEFS},
)
JSON_VALUES = st.recursive(
    st.none() | st.integers(-3, 6) | st.sampled_from(["", "ab", "long"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=8,
)


def test_a_definition_shared_by_many_paths_runs_once_per_value() -> None:
    check = InputSchema.parse(layered(4)).check
    assert isinstance(check({"x": "bad"}), ArgumentsError)  # the first failure compiles what lists its errors
    counted = runs(check, {"x": "bad"})  # fails every one of the 10**4 paths to the integer
    assert max(counted.values()) == 1 and len(counted) == 1 + 5  # the root once, each of L4 to L0 once
    tree = closed({"t": {"$ref": "#/$defs/T"}}, **{"$defs": {"T": {"anyOf": [
        {"type": "array", "items": {"$ref": "#/$defs/T"}},
        {"type": "array", "items": {"$ref": "#/$defs/T"}, "maxItems": 1},
        {"type": "integer"},
    ]}}})  # fmt: skip
    deep: Any = "leaf"
    for _ in range(12):  # each level tried by two branches: 2**12 runs without sharing
        deep = [deep]
    checked = InputSchema.parse(tree).check
    checked({"t": deep})  # the first failure compiles what lists its errors
    counted = runs(checked, {"t": deep})
    assert max(counted.values()) == 1 and len(counted) <= 2 * (1 + 13)  # the check, then the listing of its errors


def _nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(map(_nodes, value.values()))
    if isinstance(value, list):
        return 1 + sum(map(_nodes, value))
    return 1


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({}, optional={name: JSON_VALUES for name in "pqrsz"}))
def test_shared_definitions_report_as_their_inlined_copies_do(arguments: dict[str, Any]) -> None:
    schema = InputSchema.parse(SHARED)
    shared = schema.check(arguments)
    counted = runs(schema.check, arguments).values()
    if shared is None:
        assert max(counted) == 1  # no definition runs twice on one value
    else:  # listing a failure's errors checks each place once more (one None object may sit in many places)
        assert max(counted) <= 2 * _nodes(arguments)
    copies = InputSchema.parse(inlined(SHARED, SHARED_DEFS)).check(arguments)
    assert (shared is None) == (copies is None)
    if shared is not None and copies is not None:
        seen = [(e.pointer, e.keyword, e.reason, e.parameter) for e in shared.errors]
        assert seen == [(e.pointer, e.keyword, e.reason, e.parameter) for e in copies.errors]


@pytest.mark.parametrize(
    ("calls", "repeated"),
    [
        ([("root", "A", ("src",)), ("root", "A", ("dst",))], set()),  # one type, two arguments
        ([("root", "P", ("p",)), ("root", "C", ("c",)), ("P", "A", ("a",)), ("C", "A", ("a",))], set()),
        ([("root", "L2", ("x",)), ("L2", "L1", ()), ("L2", "L1", ()), ("L1", "L0", ()), ("L1", "L0", ())],
         {"L1", "L0"}),
        ([("root", "N", ("t",)), ("N", "N", ("left",)), ("N", "N", ("right",))], set()),  # a binary tree
        ([("root", "T", ("t",)), ("T", "T", (None,)), ("T", "T", (None,))], {"T"}),  # two branches, same items
        ([("root", "A", ("a",)), ("root", "A", (None,))], {"A"}),  # a property and a pattern of names
        ([("root", "F", ()), ("root", "G", ()), ("F", "A", ("a",)), ("G", "A", ("a",))], {"A"}),  # anyOf[F, G]
        ([("root", "A", ("a", 0)), ("root", "A", ("a", "0"))], set()),  # an index is not a key
        ([("root", "R", ("r",)), ("R", "R", ("n",)), ("R", "A", ("a",)), ("root", "A", ("r", "a"))], {"A"}),
        # unsure, so remembered: the paths of a loop are taken as any path
        ([("root", "R", ("r",)), ("R", "R", ("n",)), ("R", "A", ("a",)), ("root", "A", ("a",))], {"A"}),
        ([("root", "R", ("r",)), ("R", "R", ("n",)), ("R", "A", ("a",)), ("root", "A", ("b",))], set()),
    ],
)  # fmt: skip
def test_the_targets_one_value_could_reach_twice(
    calls: list[tuple[str, str, tuple[Any, ...]]], repeated: set[str]
) -> None:
    assert repeated_targets([Call(*call) for call in calls], "root") == repeated


def test_parse_refuses_schemas_nested_too_deeply() -> None:
    node: dict[str, Any] = {}
    schema = closed({"a": node})
    for _ in range(MAX_SCHEMA_DEPTH):
        node["items"] = node = {}
    with pytest.raises(SchemaError, match="deeper than"):
        InputSchema.parse(schema)


@pytest.mark.parametrize("depth", range(MAX_SCHEMA_DEPTH - 4, MAX_SCHEMA_DEPTH + 3))
def test_taking_a_schema_over_and_copying_it_agree_on_depth(depth: int) -> None:
    def verdict(copy: bool) -> bool:
        value: Any = 1
        for _ in range(depth):
            value = [value]
        try:
            InputSchema.parse(closed({"a": {"default": value}}), copy=copy)
        except SchemaError:
            return False
        return True

    assert verdict(copy=False) == verdict(copy=True)


def test_deeply_nested_schemas_compile() -> None:
    # Python refuses more than 20 nested blocks; deep subschemas move to their own functions.
    schema: dict[str, Any] = {"type": "integer"}
    data: Any = 1
    for _ in range(40):
        schema, data = {"type": "array", "items": schema}, [data]
    check = compile_validator(schema)
    check(data)
    bad = json.loads(json.dumps(data).replace("1", '"1"'))
    with pytest.raises(ArgumentsError) as caught:
        check(bad)
    assert caught.value.pointer == "/0" * 40


def test_deep_arguments_are_an_arguments_error() -> None:
    schema = {"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    check = compile_validator(schema)
    data: list[Any] = []
    for _ in range(5_000):
        data = [data]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)  # mypy, run in-process by other tests, raises it to 2**14
    try:
        with pytest.raises(ArgumentsError) as caught:
            check(data)
    finally:
        sys.setrecursionlimit(limit)
    assert caught.value.keyword == "depth"


# --- errors the model sees ---------------------------------------------------------------------

ERRORS = [
    ({}, "", "required", "city", "missing required argument 'city'"),
    ({"city": "Paris", "bogus": 1}, "/bogus", "additionalProperties", "bogus",
     "unexpected argument 'bogus' (allowed: city, unit, days, limit, tags, point, a/b~c)"),
    ({"city": "Paris", "unit": "kelvin"}, "/unit", "enum", "unit",
     'expected one of "c", "f"; got "kelvin"'),
    ({"city": "Paris", "days": "ten"}, "/days", "type", "days", 'expected integer; got "ten"'),
    ({"city": "Paris", "days": 1000}, "/days", "maximum", "days", "expected at most 100; got 1000"),
    ({"city": "Paris", "days": 0}, "/days", "minimum", "days", "expected at least 1; got 0"),
    ({"city": "Paris", "days": 2.5}, "/days", "type", "days", "expected integer; got 2.5"),
    ({"city": "Paris", "limit": "x"}, "/limit", "type", "limit",
     'expected integer or null; got "x"'),
    ({"city": "Paris", "tags": ["ok", "toolong"]}, "/tags/1", "maxLength", "tags",
     'expected at most 5 characters; got "toolong"'),
    ({"city": "Paris", "tags": ["ok", 3]}, "/tags/1", "type", "tags", "expected string; got 3"),
    ({"city": "Par1s"}, "/city", "pattern", "city",
     'expected a string matching "^[A-Za-z ]+$"; got "Par1s"'),
    ({"city": ""}, "/city", "minLength", "city", 'expected at least 1 character; got ""'),
    ({"city": "Paris", "point": {}}, "/point", "required", "point",
     "missing required property 'x'"),
    ({"city": "Paris", "point": {"x": 1, "y/z": 2}}, "/point/y~1z", "additionalProperties",
     "point", "unexpected property 'y/z' (allowed: x)"),
    ({"city": "Paris", "a/b~c": 1}, "/a~1b~0c", "type", "a/b~c", "expected boolean; got 1"),
    ([], "", "type", None, "expected object; got []"),
]  # fmt: skip


@pytest.mark.parametrize(("arguments", "pointer", "keyword", "parameter", "reason"), ERRORS)
def test_error_fields(arguments: Any, pointer: str, keyword: str, parameter: str | None, reason: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        InputSchema.parse(WEATHER).validate(arguments)
    error = caught.value
    assert (error.pointer, error.keyword, error.parameter) == (pointer, keyword, parameter)
    assert error.reason == reason
    assert error.schema == LEAVES.get((pointer, keyword), WEATHER["properties"].get(parameter) if parameter else None)
    assert error.tool is None
    resolve(arguments, pointer)


LEAVES = {
    ("/tags/1", "maxLength"): WEATHER["properties"]["tags"]["items"],
    ("/tags/1", "type"): WEATHER["properties"]["tags"]["items"],
    ("/point", "required"): {"type": "number"},  # the missing property's own schema
    ("/point/y~1z", "additionalProperties"): None,  # a key the schema does not describe
}
"""The schema an error inside an argument quotes: the failing value's own, not the argument's."""


def test_error_message_names_argument_and_pointer() -> None:
    with pytest.raises(ArgumentsError) as caught:
        InputSchema.parse(WEATHER).validate({"city": "Paris", "unit": "kelvin"})
    caught.value.tool = "get_weather"
    expected = 'tool \'get_weather\', argument \'unit\' at /unit: expected one of "c", "f"; got "kelvin"'
    assert str(caught.value) == expected


def test_missing_arguments_are_all_named() -> None:
    schema = InputSchema.parse(closed({"a": {}, "b": {}}, required=["a", "b"]))
    with pytest.raises(ArgumentsError) as caught:
        schema.validate({})
    assert caught.value.reason == "missing required arguments 'a', 'b'"
    assert caught.value.parameter == "a"


def test_echoed_values_are_cut_to_200_characters() -> None:
    with pytest.raises(ArgumentsError) as caught:
        InputSchema.parse(WEATHER).validate({"city": "Paris", "days": "9" * 5000})
    got = caught.value.reason.split("; got ", 1)[1]
    assert len(got) == 200
    assert got.endswith("…")
    assert got.startswith('"999')


ERRORS_ELSEWHERE = [
    ({"prefixItems": [{}], "items": False}, [1, 2, 3], "/1", "items",
     "expected at most 1 item; got 3"),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "", "dependentRequired",
     "property 'a' requires 'b'"),
    ({"dependentSchemas": {"a": False}}, {"a": 1}, "/a", "dependentSchemas",
     "property 'a' is not allowed"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1, "", "anyOf",
     "expected a value matching at least one of 2 schemas; got 1"),
    ({"properties": {"a": False}}, {"a": 1}, "/a", "false", "expected no value here; got 1"),
    ({"const": {"$ref": "#/x"}}, {"$ref": "#/y"}, "", "const",
     'expected {"$ref": "#/x"}; got {"$ref": "#/y"}'),
    ({"multipleOf": 0.01}, 0.015, "", "multipleOf", "expected a multiple of 0.01; got 0.015"),
    ({"uniqueItems": True}, [1, 1.0], "", "uniqueItems", "expected unique items; got [1, 1.0]"),
    ({"dependentRequired": {"a": [], "b": ["c"]}}, {"a": 1, "b": 1}, "", "dependentRequired",
     "property 'b' requires 'c'"),
    ({"patternProperties": {"^x": {"type": "integer"}}}, {"x/1": "s"}, "/x~11", "type",
     'expected integer; got "s"'),
    ({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {"a": 1, "b.c": 2},
     "/b.c", "type", "expected string; got 2"),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, [1, 2], "/1", "type",
     "expected string; got 2"),
    ({"prefixItems": [{}], "items": {"type": "string"}}, ["x", "y", 3], "/2", "type",
     "expected string; got 3"),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, "", "propertyNames",
     'expected property names matching \'propertyNames\'; got {"abc": 1}'),
    ({"$defs": {"o": {"required": ["a"]}}, "$ref": "#/$defs/o"}, {}, "", "required",
     "missing required argument 'a'"),
    ({"$defs": {"s": {"type": "string"}}, "properties": {"a": {"items": {"$ref": "#/$defs/s"}}}},
     {"a": ["x", 1]}, "/a/1", "type", "expected string; got 1"),
    ({"$defs": {"o": {"required": ["b"]}}, "items": {"$ref": "#/$defs/o"}}, [{"b": 1}, {}], "/1",
     "required", "missing required property 'b'"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "pointer", "keyword", "reason"), ERRORS_ELSEWHERE)
def test_error_fields_for_other_keywords(schema: Any, data: Any, pointer: str, keyword: str, reason: str) -> None:
    found = outcome(compile_validator(schema), data)
    assert found is not None
    assert (found[0], found[1], found[3]) == (pointer, keyword, reason)


def test_an_integer_too_long_to_print_is_still_reported() -> None:
    found = outcome(compile_validator({"type": "string"}), 10**5000)
    assert found == ("", "type", None, "expected string; got <int too long to show>")


def test_pointer_is_exact_through_hoisted_subschemas_and_refs() -> None:
    names = ["a.b", "{x}", "c[0]", "~/", '"', "$ref", "data", "d"] * 2
    schema: dict[str, Any] = {"type": "integer"}
    data: Any = "wrong"
    for name in reversed(names):  # 16 objects in 16 arrays: deep enough to be hoisted into refs
        schema = {"type": "array", "items": {"type": "object", "properties": {name: schema}}}
        data = [{}, {name: data}]
    with pytest.raises(ArgumentsError) as caught:
        compile_validator(schema)(data)
    expected = "".join(f"/1/{name.replace('~', '~0').replace('/', '~1')}" for name in names)
    assert caught.value.pointer == expected
    assert resolve(data, caught.value.pointer) == "wrong"
    assert caught.value.reason == 'expected integer; got "wrong"'


@settings(max_examples=300, deadline=None)
@given(weather_arguments)
def test_error_pointer_exists_in_the_arguments(arguments: dict[str, Any]) -> None:
    schema = InputSchema.parse(WEATHER)
    before = copy.deepcopy(arguments)
    found = outcome(schema.validate, arguments)
    assert arguments == before
    if found is None:
        return
    pointer, _, parameter, _ = found
    resolve(arguments, pointer)
    if pointer:
        first = pointer.split("/")[1].replace("~1", "/").replace("~0", "~")
        assert parameter == first
    else:
        assert parameter is None or parameter not in arguments


@st.composite
def schemas_with_data(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], Any]:
    """A schema (objects, arrays, scalars; odd property names) and a value it accepts."""
    kinds = ["object"] if depth == 0 else ["integer", "string", "object", "array"][: 4 - depth // 3]
    kind = draw(st.sampled_from(kinds))
    if kind == "integer":
        return {"type": "integer", "maximum": 9}, draw(st.integers(-9, 9))
    if kind == "string":
        return {"type": "string", "pattern": "^[a-z]*$"}, draw(st.from_regex("[a-z]{0,3}", fullmatch=True))
    if kind == "array":
        item, value = draw(schemas_with_data(depth + 1))
        return {"type": "array", "items": item}, [value]
    names = st.text(max_size=4) | st.sampled_from(["a.b", "x[0]", "{x}", '"', "\\", "~/", "$ref", "id"])
    keys = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    pairs = {key: draw(schemas_with_data(depth + 1)) for key in keys}
    properties = {key: pair[0] for key, pair in pairs.items()}
    schema = {
        "type": "object",
        "properties": properties,
        "required": keys,
        "additionalProperties": False,
    }
    return schema, {key: pair[1] for key, pair in pairs.items()}  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_with_data(), st.randoms(use_true_random=False))
def test_pointer_is_where_an_invalid_value_was_planted(pair: tuple[dict[str, Any], Any], rnd: random.Random) -> None:
    schema, data = pair
    check = compile_validator(schema)
    check(data)
    path: list[str | int] = []
    parent = data
    while True:
        key = rnd.choice(list(parent) if isinstance(parent, dict) else range(len(parent)))
        path.append(key)
        if not isinstance(parent[key], (dict, list)):
            parent[key] = {"planted": True}
            break
        parent = parent[key]
    found = outcome(check, data)
    assert found is not None
    expected = "".join(f"/{str(t).replace('~', '~0').replace('/', '~1')}" for t in path)
    assert found[0] == expected


@settings(max_examples=100, deadline=None)
@given(weather_arguments)
def test_json_round_trip_behaves_identically(arguments: dict[str, Any]) -> None:
    first = InputSchema.parse(WEATHER)
    second = InputSchema.parse(json.dumps(first.schema))
    assert second.schema == first.schema
    assert outcome(second.validate, arguments) == outcome(first.validate, arguments)


# --- semantics that Python gets wrong by default -----------------------------------------------

EQUALITY = [
    ({"enum": [0]}, False, False), ({"enum": [False]}, 0, False), ({"const": True}, 1, False),
    ({"const": 1}, 1.0, True), ({"enum": [[0]]}, [False], False), ({"enum": [1.0]}, 1, True),
    ({"const": {"a": 1}}, {"a": True}, False), ({"const": {"a": [0]}}, {"a": [0.0]}, True),
    ({"uniqueItems": True}, [1, True], True), ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, [[1], [True]], True),
    ({"uniqueItems": True}, [{"a": 0}, {"a": False}], True),
    ({"uniqueItems": True}, [{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
    ({"type": "integer"}, 1.0, True), ({"type": "integer"}, True, False),
    ({"type": "number"}, False, False), ({"minimum": 1}, True, True),
    ({"type": "integer", "maximum": 10}, 10**400, False), ({"type": "integer"}, 10**400, True),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "valid"), EQUALITY)
def test_json_equality_is_not_python_equality(schema: Any, data: Any, valid: bool) -> None:
    assert accepts(schema, data) == valid


class Mode(str, enum.Enum):
    FAST = "fast"  # a str-Enum hashes by its name: no frozenset lookup for it


class Level(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


OBJECT = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
CLASSES = [
    ({"type": "string", "enum": ["fast", "slow"]}, Mode.FAST, True), ({"enum": ["fast"]}, Mode.FAST, True),
    ({"enum": ["FAST"]}, Mode.FAST, False), ({"enum": [1, "a"]}, Level.ONE, True),
    ({"enum": [1]}, True, False), ({"enum": [True]}, 1, False), ({"enum": [1.0, "a"]}, 1, True),
    ({"enum": [1, "a"]}, 1.0, True), ({"enum": ["a", 1]}, Text("a"), True), ({"enum": []}, "a", False),
    ({"type": "integer", "minimum": 1}, True, False), ({"type": "integer", "maximum": 5}, 5.0, True),
    ({"type": "integer", "maximum": 5}, Level.ONE, True), ({"type": "number", "maximum": 1}, Decimal(2), False),
    ({"type": "number", "minimum": 0}, Decimal("0.5"), True), ({"type": ["integer", "null"], "minimum": 0}, None, True),
    ({"type": ["integer", "null"], "minimum": 0}, -1, False), ({"type": "boolean"}, 0, False),
    ({"type": ["string", "null"], "minLength": 2}, None, True),
    ({"type": ["string", "null"], "minLength": 2}, Text("a"), False),
    ({"type": "array", "items": {"type": "string"}}, ("a", Text("b")), True),
    ({"type": "array", "items": {"type": "string"}}, ("a", 1), False),
    (OBJECT, OrderedDict(a=Mode.FAST), True), (OBJECT, OrderedDict(a="x", b=1), False), (OBJECT, {"b": 1}, False),
    ({"anyOf": [OBJECT, {"type": "null"}]}, None, True), ({"anyOf": [OBJECT, {"type": "null"}]}, 1, False),
    ({"uniqueItems": True}, [(1, [2]), [1, [2]]], False), ({"uniqueItems": True}, [(True,), [1]], True),
    ({"multipleOf": 0.5}, Level.ONE, True),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "valid"), CLASSES)
def test_values_of_other_classes_than_decoded_json(schema: Any, data: Any, valid: bool) -> None:
    # Decoded JSON takes exact-class shortcuts; subclasses, bool, tuples and Decimal must not.
    assert accepts(schema, data) == valid


ITEM_POINTERS = [
    ({"items": {"type": "string"}}, ["a", 3, 3], "/1"),
    ({"items": {"items": {"type": "string"}}}, [["a"], ["b", 2, 2]], "/1/1"),
    ({"items": {"anyOf": [{"type": "string"}, {"items": {"type": "integer"}}]}}, ["a", [1, "x"]], "/1"),
    ({"items": {"properties": {"a": {"items": {"minimum": 0}}}}}, [{"a": [0]}, {"a": [1, -1]}], "/1/a/1"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "pointer"), ITEM_POINTERS)
def test_failing_item_is_located_after_the_loop(schema: Any, data: Any, pointer: str) -> None:
    found = outcome(compile_validator(schema), data)
    assert found is not None
    assert found[0] == pointer


MULTIPLES = [
    (0.3, 1e30, False), (7, 1e30, False), (0.3, 10**40, False), (0.5, 10**400, True),
    (0.1, 0.3, True), (0.01, 19.99, True), (0.01, 0.015, False), (1e-300, 1.0, True),
    (0.123456789, 1e308, False), (3, 9.0, True), (1.5, 4.5, True), (2, 3, False),
    (1e-8, 12391239123, True),
]  # fmt: skip


@pytest.mark.parametrize(("divisor", "value", "valid"), MULTIPLES)
def test_multiple_of_is_exact(divisor: float, value: float, valid: bool) -> None:
    assert accepts({"multipleOf": divisor}, value) == valid


PATTERNS = [
    ("^\\d+$", "123", True), ("^\\d+$", "١٢٣", False), ("^\\w+$", "été", False),
    ("^a$", "a\n", False), ("a$", "ba", True), ("^.$", "\u2028", False), ("^.$", "😀", True),
    ("^\\s$", "\u00a0", True), ("^\\s$", "\ufeff", True), ("^\\s$", "\x85", False),
    ("\\bé", "é", False), ("\\B", "", True), ("^[^]$", "\n", True), ("[]", "a", False),
    ("^[\\b]$", "\b", True), ("^\\u00e9$", "é", True), ("^\\u{1F600}$", "😀", True),
    ("^\\cJ$", "\n", True), ("^[a-c\\d]+$", "b2", True), ("^\\$$", "$", True), ("[$]", "$", True),
    ("^\\/\\-$", "/-", True), ("^(?:ab)+?$", "abab", True), ("(?=a)b", "ab", False),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "text", "matches"), PATTERNS)
def test_patterns_follow_ecma_262(pattern: str, text: str, matches: bool) -> None:
    assert accepts({"pattern": pattern}, text) == matches
    assert accepts({"patternProperties": {pattern: False}}, {text: 1}) != matches


def _random_pattern(rnd: random.Random, depth: int = 0) -> str:
    atoms = ["a", "b", "0", "_", " ", "é", "😀", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S",
             "\\n", "\\.", "\\u00e9", "\\x41", "-", "\\$", "[a-z]", "[^a\\d]", "[\\s.]", "^", "$",
             "\\b", "\\B", "|"]  # fmt: skip
    out = ""
    for _ in range(rnd.randint(1, 5)):
        atom = rnd.choice(atoms)
        if depth < 2 and rnd.random() < 0.15:
            atom = "(" + rnd.choice(["", "?:", "?=", "?!"]) + _random_pattern(rnd, depth + 1) + ")"
        if atom not in "^$|" and rnd.random() < 0.3:
            atom += rnd.choice(["*", "+", "?", "{2}", "{0,2}", "*?", "{1,}"])
        out += atom
    return out


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run ECMA-262 RegExp")
def test_patterns_agree_with_javascript() -> None:
    rnd = random.Random(2020_12)
    chars = ["a", "b", "0", "_", " ", "é", "\n", "\r", "\u2028", "\u00a0", "😀", "A", "-", ".", "$"]
    cases: list[dict[str, Any]] = []
    for _ in range(400):
        pattern = _random_pattern(rnd)
        texts = ["".join(rnd.choices(chars, k=rnd.randint(0, 5))) for _ in range(8)]
        cases.append({"p": pattern, "s": texts})
    script = (
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(cases.map(c => { try { const r = new RegExp(c.p, 'u');"
        " return c.s.map(s => r.test(s)); } catch (e) { return null; } })));"
    )
    stdin = json.dumps(cases)
    run = subprocess.run(["node", "-e", script], input=stdin, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    compared = 0
    for case, expected in zip(cases, json.loads(run.stdout), strict=True):
        try:
            translated = re.compile(translate_pattern(case["p"]))
        except (ValueError, re.error):
            continue  # refused: fail closed
        assert expected is not None, f"accepted a pattern JavaScript rejects: {case['p']!r}"
        assert [bool(translated.search(s)) for s in case["s"]] == expected, case["p"]
        compared += 1
    assert compared > 300


# --- translations of 2020-12 keywords ----------------------------------------------------------

TRANSLATED = [
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a", "b"], True),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a", 2], False),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], False),
    ({"items": {"type": "integer"}}, [1, 2.0], True),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}, True),
    ({"dependentSchemas": {"a": {"required": ["b"]}}, "dependentRequired": {"b": ["c"]}},
     {"a": 1, "b": 1}, False),
    ({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2}, "abc", False),
    ({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2}, "ab", True),
    ({"definitions": {"s": {"type": "string"}}, "items": {"$ref": "#/definitions/s"}}, [1], False),
    ({"prefixItems": [{"type": "integer"}, {"$ref": "#/prefixItems/0"}]}, [1, "x"], False),
    ({"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}, {"b": 1}, False),
    ({"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}, {"a": 1}, True),
    ({"prefixItems": [{}], "unevaluatedItems": {"type": "integer"}}, ["x", 1], True),
    ({"prefixItems": [{}], "unevaluatedItems": {"type": "integer"}}, ["x", "y"], False),
    ({"contains": {"type": "integer"}, "minContains": 0}, ["x"], True),
    ({"contains": {"type": "integer"}, "minContains": 1}, ["x"], False),
    ({"format": "email"}, "not an email", True),
    ({"contentMediaType": "application/json", "contentEncoding": "base64"}, "%%", True),
    ({"properties": {"a": {"default": 1}}}, {}, True),
    ({"not": True}, None, False), ({"not": False}, None, True),
    ({"patternProperties": {"^\\d$": {"type": "string"}, "^[0-9]$": {"minLength": 2}}},
     {"1": "a"}, False),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "valid"), TRANSLATED)
def test_translated_keywords_keep_2020_12_meaning(schema: Any, data: Any, valid: bool) -> None:
    before = copy.deepcopy(data)
    assert accepts(schema, data) == valid
    assert data == before  # defaults are never filled in


@pytest.mark.parametrize("schema", [True, {}])
@given(value=json_values)
def test_true_schema_accepts_everything(schema: Any, value: Any) -> None:
    assert accepts(schema, value)
    assert not accepts(False, value)


COUNTS = [
    ({"minLength": 1}, "", "expected at least 1 character; got \"\""),
    ({"maxLength": 2}, "abc", 'expected at most 2 characters; got "abc"'),
    ({"minItems": 1}, [], "expected at least 1 item; got []"),
    ({"maxItems": 3}, [1, 2, 3, 4], "expected at most 3 items; got [1, 2, 3, 4]"),
    ({"minProperties": 1}, {}, "expected at least 1 property; got {}"),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, 'expected at most 1 property; got {"a": 1, "b": 2}'),
    ({"minProperties": 2}, {"a": 1}, 'expected at least 2 properties; got {"a": 1}'),
    ({"anyOf": [{"type": "string"}]}, 1, "expected a value matching at least one of 1 schema; got 1"),
    ({"oneOf": [{}, {}]}, 1, "expected a value matching exactly one of 2 schemas; got 1"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "data", "reason"), COUNTS)
def test_counts_are_singular_for_one_and_plural_otherwise(schema: Any, data: Any, reason: str) -> None:
    found = outcome(compile_validator(schema), data)
    assert found is not None and found[3] == reason


def test_a_reference_to_a_plain_name_anchor_is_written_as_the_pointer_it_stands_for() -> None:
    node = {
        "$anchor": "node",
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#node"}}},
        "additionalProperties": False,
    }
    given = closed({"root": {"$ref": "#node"}, "leaf": {"$ref": "#leaf"}}, required=["root"])
    given["$defs"] = {"A Node/~": node, "leaf": {"$anchor": "leaf", "type": "integer"}}
    schema = InputSchema.parse(given)
    assert schema.schema["properties"] == {"root": {"$ref": "#/$defs/A%20Node~1~0"}, "leaf": {"$ref": "#/$defs/leaf"}}
    assert schema.schema["$defs"]["leaf"] == {"$anchor": "leaf", "type": "integer"}  # the anchors are kept
    assert '"#node"' not in json.dumps(schema.schema) and '"#node"' in json.dumps(given)  # the given schema is kept
    unused = closed({"a": {"$ref": "#/$defs/A"}})
    unused["$defs"] = {"A": {"$anchor": "named", "type": "integer"}}
    assert InputSchema.parse(unused).schema == unused  # an anchor nothing refers to: the schema as given
    schema.validate({"root": {"kids": [{"kids": []}]}, "leaf": 3})
    with pytest.raises(ArgumentsError) as deep:
        schema.validate({"root": {"kids": [{"kids": [{"kids": 1}]}]}})
    assert deep.value.pointer == "/root/kids/0/kids/0/kids"
    with pytest.raises(ArgumentsError) as leaf:
        schema.validate({"root": {}, "leaf": "x"})
    assert leaf.value.pointer == "/leaf"


def test_an_anchor_is_shown_as_given_and_left_out_only_where_a_provider_takes_a_subset() -> None:
    node = {"$anchor": "node", "type": "object", "properties": {"label": {"type": "string"}}}
    node["additionalProperties"], node["required"] = False, ["label"]
    given = closed({"root": {"$ref": "#node"}}, required=["root"])
    given["$defs"] = {"Node": node}
    made = Tool.from_schema("tree", "A tree.", given, lambda root: root)
    box = Toolbox([made])
    for shown in (anthropic.export_tools(box), openai.export_tools(box), gemini.export_tools(box)):
        assert '"$anchor": "node"' in json.dumps(shown) and '"#node"' not in json.dumps(shown)
    for subset in (openai.export_tools(box, strict=True), gemini.export_tools(box, schema_format="openapi")):
        assert "$anchor" not in json.dumps(subset)
    assert made.strict().schema["$defs"]["Node"]["properties"] == {"label": {"type": "string"}}


def test_a_definition_whose_name_a_pointer_must_encode_is_found_by_every_reader() -> None:
    given = closed({"root": {"$ref": "#node"}}, required=["root"])
    given["$defs"] = {"A Node/~": {"$anchor": "node", "type": "string"}, "A%20Node~1~0": {"type": "integer"}}
    made = Tool.from_schema("named", "Named.", given, lambda root: root)
    assert made.input_schema["properties"]["root"] == {"$ref": "#/$defs/A%20Node~1~0"}  # the one named "A Node/~"
    assert made.invoke({"root": "x"}).status == "succeeded" and made.invoke({"root": 5}).status == "failed"
    ((declared,),) = (group["functionDeclarations"] for group in gemini.export_tools([made], schema_format="openapi"))
    assert declared["parameters"]["properties"]["root"]["type"] == "STRING"
    assert made.strict().schema["$defs"]["A Node/~"] == {"type": "string"}


def test_anchors_nested_past_the_depth_limit_are_refused_as_too_deep() -> None:
    node: dict[str, Any] = {"$anchor": "leaf", "type": "integer"}
    for _ in range(300):
        node = {"type": "object", "properties": {"x": node}}
    deep = closed({"a": node, "b": {"$ref": "#leaf"}})
    with pytest.raises(SchemaError, match="deeper than 128 levels"):
        InputSchema.parse(deep)
    with pytest.raises(SchemaError, match="deeper than 128 levels"):  # a remote output schema is not copied first
        pointed(deep)
