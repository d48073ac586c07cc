"""The fast way in (`tinytools._schema.fast_decode`) keeps its two promises.

1. The typed decoder never accepts arguments the schema refuses: checked against the official
   JSON Schema Test Suite's verdicts and, by property tests, against the compiled validator.
2. What it accepts decodes to the same values, class and all, as untyped decoding: so a call
   gives the same result whichever way it came in (checked through `dispatch`, text against an
   already decoded dict, which always takes the general way).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tinytools import Dispatcher, Injected, Param, Tool, Toolbox, ToolCall, adispatch, dispatch, tool
from tinytools._errors import ArgumentsError, SchemaError
from tinytools._run.plans import Read, typed_reader
from tinytools._schema.fast_decode import typed_decoder
from tinytools._schema.input_schema import compile_validator

SUITE = Path(__file__).with_name("jsonschema_test_suite") / "draft2020-12"


def closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same class all the way down (``1 == 1.0 == True`` is not enough)."""
    if a.__class__ is not b.__class__:
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def typed_values(schema: dict[str, Any], names: list[str], text: str) -> dict[str, Any] | None:
    """The arguments the typed decoder reads from ``text`` (omitted ones left out), or None if it refuses."""
    decoder = typed_decoder(schema, names)
    assert decoder is not None
    try:
        struct = decoder.decode(text)
    except msgspec.ValidationError:
        return None
    values = msgspec.structs.astuple(struct)
    return {name: value for name, value in zip(names, values, strict=True) if value is not msgspec.UNSET}


# --- 1. the official suite: every case the typed decoder accepts is valid ---------------------


def suite_groups() -> list[tuple[str, dict[str, Any]]]:
    groups = []
    for path in sorted(SUITE.glob("*.json")):
        for index, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            groups.append((f"{path.stem}[{index}]", group))
    return groups


def test_the_suite_never_sees_the_typed_decoder_accept_an_invalid_case() -> None:
    plain_groups = accepted_cases = 0
    for label, group in suite_groups():
        node = group["schema"]
        if isinstance(node, dict):
            node = {key: value for key, value in node.items() if key != "$schema"}
        schema = closed({"x": node}, ["x"])
        if typed_decoder(schema, ["x"]) is None:
            continue
        plain_groups += 1
        for case in group["tests"]:
            text = json.dumps({"x": case["data"]})
            values = typed_values(schema, ["x"], text)
            if values is None:
                continue
            accepted_cases += 1
            assert case["valid"], f"{label}: {group['description']} / {case['description']}"
            assert same(values["x"], msgspec.json.decode(text)["x"]), f"{label}: {case['description']}"
    # the check means something only if many groups are plain and many cases read the fast way
    assert plain_groups >= 45, plain_groups  # 47 when this was written
    assert accepted_cases >= 170, accepted_cases  # 180


# --- 2. property tests against the compiled validator -------------------------------------------

SMALL = st.integers(-3, 3)
BOUND = st.one_of(SMALL, st.sampled_from([0.5, -1.5, 2.0, 2**53, 2**53 + 1, 1e300]))  # BOUNDS, and ints
PATTERNS = st.sampled_from(["^a", "b$", "^[a-c]*$", "x|y", "\\d", "^$", ":"])
TYPE_KEYWORDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "string": {"minLength": st.integers(0, 3), "maxLength": st.integers(0, 3), "pattern": PATTERNS},
    "integer": {
        "minimum": BOUND,
        "maximum": BOUND,
        "exclusiveMinimum": BOUND,
        "exclusiveMaximum": BOUND,
        "multipleOf": st.sampled_from([1, 2, 3, 1.5]),
    },
    "number": {"minimum": BOUND, "maximum": BOUND, "exclusiveMinimum": BOUND, "exclusiveMaximum": BOUND},
    "boolean": {},
    "null": {},
    "array": {"minItems": st.integers(0, 2), "maxItems": st.integers(0, 3)},
    "object": {"minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3)},
}


@st.composite
def node_schemas(draw: st.DrawFn, depth: int = 0) -> Any:
    kind = draw(st.sampled_from(["typed"] * 6 + ["enum", "const", "any", "other"]))
    if kind == "any":
        return draw(st.sampled_from([{}, True, {"description": "anything"}]))
    if kind == "other":
        return draw(st.sampled_from([{"anyOf": [{"type": "string"}]}, {"not": {}}, {"type": "string", "foo": 1}]))
    members = st.one_of(st.text("ab", max_size=2), SMALL, st.none(), st.sampled_from([True, 1.0, 2.5]))
    if kind == "enum":
        node: dict[str, Any] = {"enum": draw(st.lists(members, min_size=1, max_size=3))}
    elif kind == "const":
        node = {"const": draw(members)}
    else:
        names = draw(st.lists(st.sampled_from(sorted(TYPE_KEYWORDS)), min_size=1, max_size=3, unique=True))
        node = {"type": names[0] if len(names) == 1 and draw(st.booleans()) else names}
        for name in names:
            for key, values in TYPE_KEYWORDS[name].items():
                if draw(st.integers(0, 3)) == 0:
                    node[key] = draw(values)
            if name in ("array", "object") and depth < 2 and draw(st.booleans()):
                node["items" if name == "array" else "additionalProperties"] = draw(node_schemas(depth + 1))
        return node
    if draw(st.booleans()):
        node["type"] = draw(st.sampled_from(["string", "integer", "number", ["string", "null"], ["integer", "null"]]))
    return node


BOUNDS = [0.5, -1.5, 2.0, float(2**53), 1e300]
NEAR_BOUNDS = [x for b in BOUNDS for x in (b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf))]
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-4, 4),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, 1.0, -1.0, 3.0, 2**53 + 1, *NEAR_BOUNDS]),
        st.sampled_from(["", "a", "b", "ab", "b\n", "a\n", "\na", "x", "1", ":"]),
        st.text("abcxy1:\n", max_size=4),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner, max_size=3),
    max_leaves=6,
)


def probes(node: Any) -> list[Any]:
    """Values on both sides of every number in ``node``, and strings that straddle the patterns."""
    numbers: list[Any] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item):
            numbers.append(item)

    walk(node)
    near: list[Any] = ["", "a", "b", "ab", "b\n", "a\n", "\na", "x", "1", ":", "xy"]
    for number in numbers:
        near += [number, float(number), math.nextafter(number, math.inf), math.nextafter(number, -math.inf)]
        near += [math.floor(number), math.ceil(number), math.floor(number) - 1, math.ceil(number) + 1]
    return near


def argument_values(node: Any) -> st.SearchStrategy[Any]:
    near = st.sampled_from(probes(node))
    return st.one_of(
        near,
        st.lists(near, max_size=3),
        st.dictionaries(st.text("ab", max_size=2), near, max_size=3),
        JSON_VALUES,
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    nodes=st.lists(node_schemas(), min_size=1, max_size=2),
    data=st.data(),
)
def test_what_the_typed_decoder_accepts_the_validator_accepts_with_the_same_values(nodes: list[Any], data: Any) -> None:
    names = [f"p{i}" for i in range(len(nodes))]
    required = [name for name in names if data.draw(st.booleans())]
    schema = closed(dict(zip(names, nodes, strict=True)), required)
    assume(typed_decoder(schema, names) is not None)
    try:
        validate = compile_validator(schema)
    except SchemaError:
        return  # a schema no tool could have
    arguments = {
        name: data.draw(argument_values(node))
        for name, node in zip(names, nodes, strict=True)
        if name in required or data.draw(st.booleans())
    }
    if data.draw(st.integers(0, 9)) == 0:
        arguments["extra"] = 1
    text = json.dumps(arguments)
    values = typed_values(schema, names, text)
    if values is None:
        return  # refused: the general way decides
    decoded = msgspec.json.decode(text)
    validate(decoded)  # raises if the typed decoder accepted what the schema refuses
    assert same(values, decoded)


GRID_BOUNDS = [0, 0.5, -1.5, 2, 2.0, 2.5, -0.0, 2**53, 2**53 + 1, 2**63, 1e300]
GRID_NODES = (
    [
        {"type": kind, keyword: bound}
        for kind in ("integer", "number", ["integer", "null"], ["number", "string"])
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        for bound in GRID_BOUNDS
    ]
    + [{"type": "integer", "multipleOf": step} for step in (1, 2, 3, 2**53 + 1)]
    + [{"type": "string", keyword: size} for keyword in ("minLength", "maxLength") for size in (0, 1, 2)]
    + [
        {"type": "string", "pattern": pattern}
        for pattern in ("^a", "b$", "^[a-c]*$", "x|y", "\\d", "^$", ":", "\\$", "[$]", "^\\w+$", "\\s", ".")
    ]
    + [{"type": ["array", "object"], keyword: size} for keyword in ("minItems", "maxProperties") for size in (0, 1)]
)
GRID_VALUES = [
    *sorted({x for b in GRID_BOUNDS for x in probes(b) if not isinstance(x, str)}, key=repr),
    *probes("")[:11],
    "\U0001f600",
    "\u00e9\u00e9",
    "a\u2028",
    "1\n",
    "٣",
    "_",
    "a b",
    "\r",
    None,
    True,
    [],
    [1],
    {},
    {"a": 1},
]


@pytest.mark.parametrize("node", GRID_NODES, ids=[json.dumps(node) for node in GRID_NODES])
def test_each_keyword_agrees_with_the_validator_on_values_either_side(node: dict[str, Any]) -> None:
    schema = closed({"x": node}, ["x"])
    if typed_decoder(schema, ["x"]) is None:
        return  # bounds msgspec cannot hold (beyond 64 bits, or not exactly a float): the general way
    validate = compile_validator(schema)
    for value in GRID_VALUES:
        text = json.dumps({"x": value})
        decoded = msgspec.json.decode(text)
        try:
            validate(decoded)
            valid = True
        except ArgumentsError:
            valid = False
        values = typed_values(schema, ["x"], text)
        if values is not None:
            assert valid, f"typed decoding accepted {text}"
            assert same(values, decoded)


def test_most_of_the_grid_is_plain() -> None:
    plain = sum(typed_decoder(closed({"x": node}, ["x"]), ["x"]) is not None for node in GRID_NODES)
    assert plain >= 0.8 * len(GRID_NODES), (plain, len(GRID_NODES))


@pytest.mark.parametrize(
    "node",
    [
        {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$", "description": "d"},
        {"type": "integer", "minimum": 1, "exclusiveMaximum": 10.5, "multipleOf": 2},
        {"type": "number", "minimum": 0.0, "maximum": 1},
        {"type": ["integer", "null"], "default": None},
        {"type": "array", "items": {"type": "string"}, "minItems": 1},
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": "string", "enum": ["fast", "thorough"]},
        {"enum": [1, 2, None]},
        {"const": "x"},
        {},
        {"type": "string", "format": "date-time"},
    ],
)
def test_plain_shapes_get_a_typed_decoder(node: Any) -> None:
    assert typed_decoder(closed({"x": node}, []), ["x"]) is not None


@pytest.mark.parametrize(
    "node",
    [
        {"$ref": "#/$defs/Model"},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "array", "uniqueItems": True},
        {"type": "number", "multipleOf": 0.5},
        {"type": "number", "maximum": 2**53 + 1},
        {"enum": [True, 1]},
        {"enum": [1.5]},
        {"minLength": 1},
        {"type": "string", "pattern": "\\p{Letter}"},
    ],
)
def test_other_shapes_take_the_general_way(node: Any) -> None:
    assert typed_decoder(closed({"x": node}, []), ["x"]) is None


def test_the_properties_must_be_the_parameters_in_order() -> None:
    schema = closed({"a": {"type": "string"}, "b": {"type": "string"}}, ["a"])
    assert typed_decoder(schema, ["a", "b"]) is not None
    assert typed_decoder(schema, ["b", "a"]) is None
    assert typed_decoder(schema, ["a"]) is None


# --- 3. through dispatch: the same result whichever way a call comes in -------------------------


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


SHARED_DEFAULT: list[str] = ["kept"]


@tool
def search(
    query: Annotated[str, Param(min_length=1)],
    limit: Annotated[int, Param(ge=1, le=100)],
    ratio: float,
    mode: Mode,
    style: Literal["short", "long"] = "short",
    page: int | None = None,
    tags: list[str] = SHARED_DEFAULT,
    weights: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Search.

    Args:
        query: What to look for.
        limit: How many hits.
        ratio: A ratio.
        mode: How.
        style: Style.
        page: Page.
        tags: Tags.
        weights: Weights.
    """
    return {
        "query": query,
        "limit": limit,
        "ratio": [type(ratio).__name__, ratio],
        "mode": [type(mode).__name__, mode.value],
        "style": style,
        "page": page,
        "tags_is_default": tags is SHARED_DEFAULT,
        "tags": tags,
        "weights": None if weights is None else {k: [type(v).__name__, v] for k, v in weights.items()},
    }


def test_the_search_tool_has_a_fast_way_in() -> None:
    assert typed_reader(search) is not None
    text = '{"query": "a", "limit": 3, "ratio": 1, "mode": "fast"}'
    args = typed_reader(search)(ToolCall("c", "search", text))  # type: ignore[misc]
    assert args is not None
    assert args[2].__class__ is float and args[3] is Mode.FAST and args[6] is SHARED_DEFAULT


ARGUMENT_VALUES = {
    "query": st.one_of(st.text("ab:", max_size=3), JSON_VALUES),
    "limit": st.one_of(st.integers(-1, 102), st.sampled_from([1.0, 5.5, True, 10**30]), JSON_VALUES),
    "ratio": st.one_of(st.integers(-2, 2), st.floats(allow_nan=False, allow_infinity=False), st.just(10**400)),
    "mode": st.one_of(st.sampled_from(["fast", "slow", "FAST"]), JSON_VALUES),
    "style": st.sampled_from(["short", "long", "other", None]),
    "page": st.one_of(st.none(), st.integers(-2, 2), st.just(2.0), JSON_VALUES),
    "tags": st.one_of(st.lists(st.text("ab:", max_size=2), max_size=2), JSON_VALUES),
    "weights": st.one_of(st.none(), st.dictionaries(st.text("ab", max_size=2), st.integers(0, 2) | st.floats(0, 1))),
}


WAYS = {
    "dispatch": lambda call: dispatch(call, Toolbox([search])),
    # an event sink sends every call through the lifecycle's path, which takes the typed way as keywords
    "Dispatcher with a sink": Dispatcher(Toolbox([search]), on_event=lambda event: None).dispatch,
}


@pytest.mark.parametrize("way", list(WAYS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_text_and_decoded_arguments_give_the_same_result(way: str, data: Any) -> None:
    arguments = {name: data.draw(values) for name, values in ARGUMENT_VALUES.items() if data.draw(st.integers(0, 3))}
    text = json.dumps(arguments)
    fast = WAYS[way](ToolCall("c1", "search", text))
    general = WAYS[way](ToolCall("c1", "search", msgspec.json.decode(text)))
    assert fast.status == general.status
    assert same(fast.output, general.output)
    assert fast.error == general.error


def test_a_repeated_key_is_refused_on_the_fast_way_too() -> None:
    text = '{"query": "a", "limit": 3, "ratio": 1, "mode": "fast", "query": "b"}'
    result = dispatch(ToolCall("c1", "search", text), Toolbox([search]))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "malformed_arguments" and "'query'" in result.error.message


VALID_VALUES = {
    "query": st.text("ab:", min_size=1, max_size=3),
    "limit": st.integers(1, 100),
    "ratio": st.floats(0, 1),
    "mode": st.sampled_from(["fast", "slow"]),
    "style": st.sampled_from(["short", "long"]),
    "page": st.none() | st.integers(0, 3),
    "tags": st.lists(st.text("ab", max_size=2), max_size=2),
    "weights": st.none() | st.dictionaries(st.text("ab", max_size=2), st.floats(0, 1), max_size=2),
}


@pytest.mark.parametrize("way", [*WAYS, "adispatch"])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_repeated_key_is_refused_whichever_arguments_are_left_out(way: str, data: Any) -> None:
    """The colon count allows for the arguments left out: one left out can never hide a key named twice."""
    run = WAYS.get(way) or (lambda call: asyncio.run(adispatch(call, Toolbox([search]))))
    given = ["query", "limit", "ratio", "mode"]
    given += data.draw(st.lists(st.sampled_from(["style", "page", "tags", "weights"]), unique=True))
    pairs = [(name, data.draw(VALID_VALUES[name])) for name in data.draw(st.permutations(given))]
    text = "{" + ", ".join(f"{json.dumps(name)}: {json.dumps(value)}" for name, value in pairs) + "}"
    assert run(ToolCall("c1", "search", text)).status == "succeeded"
    repeated = data.draw(st.sampled_from(given))
    pairs.insert(data.draw(st.integers(0, len(pairs))), (repeated, data.draw(VALID_VALUES[repeated])))
    text = "{" + ", ".join(f"{json.dumps(name)}: {json.dumps(value)}" for name, value in pairs) + "}"
    result = run(ToolCall("c1", "search", text))
    assert result.error is not None and result.error.code == "malformed_arguments", text
    assert repr(repeated) in result.error.message
    with pytest.raises(ArgumentsError):
        typed_reader(search)(ToolCall("c1", "search", text))  # type: ignore[misc]


def test_colons_in_strings_and_nested_objects_are_read_the_fast_way() -> None:
    text = '{"query": "at 10:30", "limit": 3, "ratio": 0.5, "mode": "slow", "weights": {"a:b": 1}}'
    result = dispatch(ToolCall("c1", "search", text.encode()), Toolbox([search]))
    assert result.status == "succeeded", result.error
    assert result.output["query"] == "at 10:30" and result.output["weights"] == {"a:b": ["float", 1.0]}
    assert result.output["tags_is_default"] is True


def test_a_value_too_large_for_a_float_fails_the_same_way() -> None:
    text = '{"query": "a", "limit": 3, "ratio": ' + "9" * 400 + ', "mode": "fast"}'
    result = dispatch(ToolCall("c1", "search", text), Toolbox([search]))
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert "/ratio" in result.error.message


def test_positional_only_parameters_are_passed_by_position() -> None:
    @tool
    def divide(a: int, b: int, /) -> float:
        """Divide."""
        return a / b

    assert typed_reader(divide) is not None
    result = dispatch(ToolCall("c1", "divide", '{"a": 6, "b": 3}'), Toolbox([divide]))
    assert result.output == 2.0


def test_tools_with_injected_or_keyword_only_parameters_take_the_general_way() -> None:
    @tool
    def greet(name: str, *, punctuation: str = "!") -> str:
        """Greet."""
        return name + punctuation

    @tool
    def whoami(name: str, user: Annotated[str, Injected]) -> str:
        """Who."""
        return f"{name}/{user}"

    assert typed_reader(greet) is None and typed_reader(whoami) is None
    assert dispatch(ToolCall("c1", "greet", '{"name": "a"}'), Toolbox([greet])).output == "a!"
    result = dispatch(ToolCall("c1", "whoami", '{"name": "a"}'), Toolbox([whoami]), inject={"user": "u"})
    assert result.output == "a/u"


def test_an_invalid_call_is_reported_exactly_as_before() -> None:
    result = dispatch(ToolCall("c1", "search", '{"query": "a", "limit": 1000, "ratio": 1, "mode": "fast"}'), [search])
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.details == {"pointer": "/limit", "keyword": "maximum", "parameter": "limit"}
    read = (
        Dispatcher([search])
        .plan(search)
        .read(ToolCall("c1", "search", '{"query": "a", "limit": 1000, "ratio": 1, "mode": "fast"}'))
    )
    assert isinstance(read, ArgumentsError) and read.pointer == "/limit"


def test_a_wrapped_function_is_called_the_general_way() -> None:
    """A decorator may look at its keywords: the fast way must not bypass it by calling by position."""

    def guard(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if str(kwargs.get("path", "")).startswith("/etc"):
                raise PermissionError("not there")
            return fn(*args, **kwargs)

        return wrapper

    @tool
    @guard
    def read(path: str) -> str:
        """Read."""
        return path

    assert typed_reader(read) is None
    result = dispatch(ToolCall("c1", "read", '{"path": "/etc/shadow"}'), [read])
    assert result.status == "failed"


def test_an_optional_argument_without_a_default_is_not_filled_with_a_placeholder() -> None:
    schema = closed({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a"])

    def add(a: int, b: int) -> int:
        return a + b

    made = Tool.from_schema("add", "Add.", schema, add)
    assert typed_reader(made) is None
    text, decoded = (
        dispatch(ToolCall("c1", "add", '{"a": 1}'), [made]),
        dispatch(ToolCall("c1", "add", {"a": 1}), [made]),
    )
    assert text.status == decoded.status == "failed" and text.error is not None
    assert decoded.error is not None and text.error.code == decoded.error.code == "tool_error"


def test_an_enum_member_beyond_64_bits_takes_the_general_way() -> None:
    @tool
    def pick(x: Literal[0, 2**64]) -> int:
        """Pick."""
        return x

    assert dispatch(ToolCall("c1", "pick", '{"x": 18446744073709551616}'), [pick]).output == 2**64
    assert dispatch(ToolCall("c1", "pick", '{"x": 1}'), [pick]).status == "failed"


def test_building_the_reader_leaves_the_schema_as_shown() -> None:
    @tool
    def scale(x: float | int) -> float:
        """Scale."""
        return x * 2

    shown = json.dumps(scale.input_schema)
    assert dispatch(ToolCall("c1", "scale", '{"x": 2}'), [scale]).output == 4
    assert json.dumps(scale.input_schema) == shown


def test_the_pipeline_reads_the_typed_way_and_binds_the_same_values() -> None:
    plan = Dispatcher(Toolbox([search]), on_event=lambda event: None).plan(search)
    text = '{"query": "a", "limit": 3, "ratio": 1, "mode": "fast"}'
    typed = plan.read(ToolCall("c1", "search", text))
    assert isinstance(typed, Read) and typed.values is not None  # read the typed way
    args, kwargs, _ = plan.bind(typed, None, None)
    assert args[6] is SHARED_DEFAULT and args[2].__class__ is float and not kwargs
    general = plan.read(ToolCall("c1", "search", msgspec.json.decode(text)))
    assert isinstance(general, Read) and general.values is None
    by_name, keywords, _ = plan.bind(general, None, None)
    assert not by_name and "tags" not in keywords  # the general way leaves omitted arguments out
    names = [slot.name for slot in search.slots or ()]
    assert {key: args[names.index(key)] for key in keywords} == keywords


def test_an_applications_keyword_call_is_never_bypassed() -> None:
    def read(path: str) -> str:
        return path

    def guarded(**kwargs: Any) -> str:
        if kwargs["path"].startswith("/etc"):
            raise PermissionError("not there")
        return read(**kwargs)

    schema = closed({"path": {"type": "string"}}, ["path"])
    made = Tool.from_schema("read", "Read.", schema, read, keyword_call=guarded)
    assert typed_reader(made) is None
    assert dispatch(ToolCall("c1", "read", '{"path": "/etc/shadow"}'), [made]).status == "failed"
    assert dispatch(ToolCall("c1", "read", '{"path": "/tmp/x"}'), [made]).output == "/tmp/x"
