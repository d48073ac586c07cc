from __future__ import annotations

import dataclasses
import datetime
import decimal
import inspect
import ipaddress
import json
import sys
import types
import uuid
from typing import Annotated, Any

import msgspec
import pytest

from tinytools import (
    Injected,
    InjectionError,
    Tool,
    ToolCall,
    ToolDefinitionError,
    dispatch,
    tool,
)
from tinytools._run.argument_messages import fragment


def received(made: Tool[..., Any], arguments: dict[str, Any], **inject: Any) -> dict[str, Any]:
    """What the function got, through the full dispatch path."""
    seen: dict[str, Any] = {}
    original = made.fn
    signature = inspect.signature(original)

    def spy(*args: Any, **kwargs: Any) -> None:
        seen.update(signature.bind(*args, **kwargs).arguments)
        original(*args, **kwargs)

    made.fn = spy
    try:
        result = dispatch(ToolCall("id", made.name, arguments), [made], inject=inject)
    finally:
        made.fn = original
    assert result.status == "succeeded", result.error
    return seen


def test_tool_is_still_the_function(cases: types.ModuleType) -> None:
    assert cases.hidden("Paris", cases.Session(), "k", ToolCall("x", "hidden")) == {
        "city": "Paris",
        "session": "Session",
        "key_length": 1,
        "call": "x",
    }
    assert cases.hidden.name == "hidden"
    assert cases.hidden.__wrapped__.__name__ == "hidden"


def test_tool_with_options() -> None:
    @tool(name="lookup", description="Look it up.", timeout=2.5, parallel_safe=False)
    def f(x: int) -> int:
        """Ignored: the option wins."""
        return x

    assert (f.name, f.description, f.timeout, f.parallel_safe) == (
        "lookup",
        "Look it up.",
        2.5,
        False,
    )
    assert f(3) == 3


def test_values_arrive_as_declared_types(cases: types.ModuleType) -> None:
    got = received(
        cases.formats,
        {
            "when": "2024-05-01T10:00:00Z",
            "day": "2024-05-01",
            "at": "10:30:00",
            "span": "PT1H",
            "key": "12345678-1234-5678-1234-567812345678",
            "price": "1.25",
        },
    )
    assert got == {
        "when": datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.timezone.utc),
        "day": datetime.date(2024, 5, 1),
        "at": datetime.time(10, 30),
        "span": datetime.timedelta(hours=1),
        "key": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "price": decimal.Decimal("1.25"),
    }


def test_containers_convert(cases: types.ModuleType) -> None:
    got = received(
        cases.containers,
        {
            "names": ["a"],
            "seq": [1.0, 2],
            "unique": ["x", "y"],
            "frozen": [1],
            "many": [1, 2.5],
            "pair": [1, "b"],
            "table": {"k": 2.0},
            "mapping": {"any": [1]},
            "bare": [None],
        },
    )
    assert got == {
        "names": ["a"],
        "seq": [1, 2],
        "unique": {"x", "y"},
        "frozen": frozenset({1}),
        "many": (1.0, 2.5),
        "pair": (1, "b"),
        "table": {"k": 2},
        "mapping": {"any": [1]},
        "bare": [None],
    }
    assert type(got["many"][0]) is float
    assert type(got["seq"][0]) is int
    assert type(got["table"]["k"]) is int


def test_named_types_convert(cases: types.ModuleType) -> None:
    got = received(
        cases.structured,
        {
            "tree": {"label": "root", "children": [{"label": "leaf"}]},
            "address": {"street": "Main"},
            "loose": {"a": 1},
            "pair": [3, "x"],
            "item": {"sku": "A1"},
        },
    )
    assert got["tree"] == cases.Tree("root", [cases.Tree("leaf")])
    assert got["address"] == {"street": "Main"}
    assert got["pair"] == cases.Pair(3, "x")
    assert got["item"] == cases.Item("A1")


def test_enums_and_literals(cases: types.ModuleType) -> None:
    got = received(cases.choices, {"unit": "f", "level": 2, "color": "f", "mixed": 1.0})
    assert got == {"unit": "f", "level": cases.Level.HIGH, "color": cases.Unit.F, "mixed": 1}
    assert type(got["mixed"]) is int


def test_float_parameter_receives_float(define) -> None:
    module = define("@tool\ndef f(x: float, xs: list[float]) -> float:\n    return x\n")
    got = received(module.f, {"x": 3, "xs": [1, 2]})
    assert type(got["x"]) is float
    assert all(type(v) is float for v in got["xs"])


def test_union_smart_mode(define) -> None:
    module = define(
        "@dataclasses.dataclass\nclass A:\n    a: int\n"
        "@dataclasses.dataclass\nclass B:\n    b: int\n"
        "@tool\ndef f(n: Union[float, int], m: Union[int, float], s: Union[datetime.date, str],"
        " ab: Union[A, B], d: Union[datetime.date, int]) -> None: ...\n"
    )
    got = received(module.f, {"n": 3, "m": 2.5, "s": "2024-01-01", "ab": {"b": 1}, "d": "2024-01-02"})
    assert got["n"] == 3 and type(got["n"]) is int
    assert got["m"] == 2.5 and type(got["m"]) is float
    assert got["s"] == "2024-01-01"
    assert got["ab"] == module.B(1)
    assert got["d"] == datetime.date(2024, 1, 2)


def test_injection_by_name_key_and_type(cases: types.ModuleType) -> None:
    session = cases.Session()
    got = received(cases.hidden, {"city": "Paris"}, session=session, api_key="s3cret")
    assert got["session"] is session
    assert got["key"] == "s3cret"
    assert got["call"] == ToolCall("id", "hidden", {"city": "Paris"})


def test_missing_injection_names_tool_and_parameter(cases: types.ModuleType) -> None:
    with pytest.raises(InjectionError) as info:
        dispatch(ToolCall("1", "hidden", {"city": "Paris"}), [cases.hidden], inject={"api_key": "k"})
    assert (info.value.tool, info.value.parameter, info.value.key) == (
        "hidden",
        "session",
        "session",
    )
    assert "hidden" in str(info.value) and "session" in str(info.value)


def test_injected_default_is_used_when_not_supplied() -> None:
    @tool
    def f(x: int, scale: Annotated[int, Injected] = 10) -> int:
        return x * scale

    assert dispatch(ToolCall("1", "f", {"x": 2}), [f]).output == 20
    assert dispatch(ToolCall("1", "f", {"x": 2}), [f], inject={"scale": 3}).output == 6


def test_injected_name_sent_by_model_is_refused(cases: types.ModuleType) -> None:
    result = dispatch(
        ToolCall("1", "hidden", {"city": "Paris", "session": "fake"}),
        [cases.hidden],
        inject={"session": cases.Session(), "api_key": "k"},
    )
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.details is not None and result.error.details["pointer"] == "/session"


def test_from_schema_wraps_a_function_without_a_signature() -> None:
    def handler(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    made = Tool.from_schema(
        "echo",
        "Echo the arguments.",
        '{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],'
        ' "additionalProperties": false}',
        handler,
    )
    assert made.input_schema["required"] == ["x"]
    assert dispatch(ToolCall("1", "echo", '{"x": 1}'), [made]).output == {"x": 1}
    bad = dispatch(ToolCall("2", "echo", '{"x": "one"}'), [made])
    assert bad.error is not None and bad.error.code == "invalid_arguments"


def test_from_schema_refuses_open_root() -> None:
    with pytest.raises(ToolDefinitionError):
        Tool.from_schema("x", "", {"type": "object"}, lambda: None)


def test_async_tool_is_detected() -> None:
    @tool
    async def f(x: int) -> int:
        return x

    assert f.is_async


def test_dataclass_default_factory_field_is_optional(define) -> None:
    module = define(
        "@dataclasses.dataclass\nclass C:\n    tags: list[str] = dataclasses.field(default_factory=list)\n"
        "@tool\ndef f(c: C) -> None: ...\n"
    )
    assert module.f.input_schema["$defs"]["C"] == {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": False,
    }


def test_dataclass_without_init_field(define) -> None:
    module = define(
        "@dataclasses.dataclass\nclass C:\n    a: int\n"
        "    b: int = dataclasses.field(init=False, default=0)\n"
        "@tool\ndef f(c: C) -> int:\n    return c.a\n"
    )
    assert set(module.f.input_schema["$defs"]["C"]["properties"]) == {"a"}
    assert dataclasses.is_dataclass(module.C)


def test_a_renamed_tool_names_itself_in_every_message() -> None:
    @tool(idempotent=True, timeout=2.0)
    def fetch(page: int) -> int:
        """Fetch a page."""
        return page

    assert "'fetch'" in fetch.invoke({"page": "x"}).error.message  # the original's messages are cached
    copy = fetch.renamed("fetch_page")
    failed = copy.invoke({"page": "x"})
    assert failed.name == "fetch_page" and "'fetch_page'" in failed.error.message
    assert "'fetch'" not in failed.error.message
    assert copy.invoke({"page": 2}).output == 2 and fetch.name == "fetch"
    assert (copy.policy, copy.idempotent, copy.timeout, copy.schema) == (fetch.policy, True, 2.0, fetch.schema)
    with pytest.raises(ToolDefinitionError):
        fetch.renamed("not a name")


def _resolved(schema: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """The quoted fragment's meaning, written plainly: each $ref shown as its definition, three levels deep."""
    if isinstance(schema, list):
        return [_resolved(item, defs, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    name = ref[8:] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
    if name in defs and name not in seen and len(seen) < 3 and isinstance(defs[name], dict):
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        return {**_resolved(defs[name], defs, (*seen, name)), **_resolved(rest, defs, seen)}
    return {key: _resolved(value, defs, seen) for key, value in schema.items()}


def _fragment(properties: dict[str, Any], defs: dict[str, Any]) -> Tool[..., Any]:
    schema = {"type": "object", "properties": properties, "additionalProperties": False, "$defs": defs}
    return Tool.from_schema("quoted", "", schema, lambda **arguments: arguments)


CHAIN = {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/C"}, "C": {"$ref": "#/$defs/D"}, "D": {"type": "null"}}
LEVELS: dict[str, Any] = {f"L{n}": {"anyOf": [{"$ref": f"#/$defs/L{n - 1}"}] * 3} for n in range(1, 4)}
QUOTED = [
    ({"a": {"$ref": "#/$defs/P", "description": "beside it"}}, {"P": {"type": "integer", "description": "P"}}),
    ({"a": {"$ref": "#/$defs/N"}}, {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}),
    ({"a": {"$ref": "#/$defs/A"}}, CHAIN),
    (
        {"a": {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "string", "enum": ["ü", "\n", "\u2028"]}]}},
        {"S": {"type": "number", "minimum": 1.5}},
    ),
    ({"a": {"type": "array", "items": {"$ref": "#/$defs/L3"}}}, {**LEVELS, "L0": {"type": "integer"}}),
]


@pytest.mark.parametrize(("properties", "defs"), QUOTED)
def test_the_quoted_schema_shows_each_ref_as_its_definition(properties: dict[str, Any], defs: dict[str, Any]) -> None:
    made = _fragment(properties, defs)
    plain = json.dumps(_resolved(properties["a"], defs), ensure_ascii=False, separators=(",", ":"))
    assert fragment(made, "a") == (plain if len(plain) <= 400 else plain[:399] + "…")


def test_the_quoted_schema_costs_no_more_than_the_characters_it_shows() -> None:
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, 4):  # three levels resolved in full: 27,000 references to L0
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(30)]}
    made = _fragment({"a": {"$ref": "#/$defs/L3"}}, defs)
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call" and frame.f_code.co_filename.endswith("fragments.py")

    sys.setprofile(profile)
    try:
        quoted = fragment(made, "a")
    finally:
        sys.setprofile(None)
    assert (
        quoted is not None
        and len(quoted) == 400
        and quoted.startswith('{"anyOf":[{"anyOf":[{"anyOf":[{"$ref":"#/$defs/L0"},')
    )
    assert calls < 3 * 400


STRING_EXAMPLES: dict[type, tuple[str, str]] = {
    datetime.datetime: ("2024-05-01T10:00:00Z", "2024-05-01 10:00"),
    datetime.date: ("2024-05-01", "May 1st"),
    datetime.time: ("10:30:00", "half past ten"),
    datetime.timedelta: ("PT1H", "an hour"),
    uuid.UUID: ("12345678-1234-5678-1234-567812345678", "not-a-uuid"),
    decimal.Decimal: ("1.25", "1,25"),
    ipaddress.IPv4Address: ("192.0.2.7", "999.0.2.7"),
    ipaddress.IPv6Address: ("2001:db8::7", "2001:db8::g"),
}
"""A valid and an invalid text of each class written as a JSON string."""


def test_every_string_written_class_reads_and_writes_through_the_one_table() -> None:
    from tinytools._schema.type_forms import LATER_STRING_TYPES, STRING_TYPES, string_form

    named = {(cls.__module__, cls.__qualname__) for cls in STRING_EXAMPLES}
    table = {(cls.__module__, cls.__qualname__) for cls in STRING_TYPES} | set(LATER_STRING_TYPES)
    assert named == table  # a class added to the table needs its case here
    for cls, (good, bad) in STRING_EXAMPLES.items():

        def echo(value: Any) -> Any:
            return value

        echo.__annotations__ = {"value": cls, "return": cls}
        made = tool(echo, description="Echo.")
        form = string_form(cls)
        assert form is not None
        assert made.input_schema["properties"]["value"]["format"] == form.format
        assert made.output_schema is not None
        result = dispatch(ToolCall("ok", "echo", {"value": good}), made)
        assert result.status == "succeeded", (cls, result)
        value = form.parse(good)
        written = form.write(value) if form.write is not None else json.loads(msgspec.json.encode(value))
        assert json.loads(result.to_json())["output"] == written
        failed = dispatch(ToolCall("bad", "echo", {"value": bad}), made)
        assert failed.error is not None and failed.error.code == "invalid_arguments", (cls, failed)
        assert form.expected in failed.error.message or failed.error.details["keyword"] == "pattern"  # Decimal's
