"""Defining a tool does each piece of work once: what `@tool` skips must not change what it makes.

`@tool` takes a schema it built of plain parts (types, numeric bounds, descriptions) without
`InputSchema.parse`'s check, keeps a parameter type's schema for the next tool with that type, and
compiles each string annotation once per process. The properties here hold those shortcuts to
the long way: the schema is the one `parse` accepts and orders, for any type the builder reads.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import math
import typing
import uuid
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytools import InputSchema, Param, SchemaError, ToolDefinitionError, tool
from tinytools._schema import callables, hints
from tinytools._schema.input_schema import _Translation
from tinytools._schema.keyword_order import in_keyword_order


class Colour(enum.Enum):
    """A colour."""

    RED = "red"
    BLUE = "blue"


SCALARS = [str, int, float, bool, type(None), Any, decimal.Decimal, datetime.date, uuid.UUID, Colour]
SCALARS += [Literal["a", "b"], Literal["b", "a"], Literal[1, 2], Literal[True], Literal["x", None]]
SCALARS += [Literal[1, True], Literal[True, 1], Literal[1.0, 2], Literal[-0.0], Literal[0.0], Literal[math.inf]]


def _params() -> st.SearchStrategy[Param]:
    number = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.just("x"), st.just(float("inf")))
    count = st.one_of(st.integers(0, 4), st.just(-1), st.just(1.5))
    fields = st.fixed_dictionaries(
        {},
        optional={
            "ge": number,
            "lt": number,
            "multiple_of": st.one_of(st.sampled_from([0.5, 2, 0, -1]), number),
            "min_length": count,
            "max_items": count,
            "description": st.text(max_size=5),
            "pattern": st.sampled_from(["^a", "(?<=a)b", "\\d+"]),
        },
    )
    return fields.map(lambda given: Param(**given))


def _types() -> st.SearchStrategy[Any]:
    def wrap(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            inner.map(lambda t: list[t]),  # type: ignore[valid-type]
            inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
            inner.map(lambda t: set[t]),  # type: ignore[valid-type]
            st.tuples(inner, inner).map(lambda ts: tuple[ts[0], ts[1]]),  # type: ignore[valid-type]
            inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
            st.tuples(inner, inner).map(lambda ts: typing.Union[ts[0], ts[1]]),  # noqa: UP007
            inner.map(lambda t: typing.Optional[t]),  # noqa: UP045
            st.tuples(inner, _params()).map(lambda tp: Annotated[tp[0], tp[1]]),
        )

    return st.recursive(st.sampled_from(SCALARS), wrap, max_leaves=4)


NOTHING = object()


def _define(hint: Any, default: Any = NOTHING) -> Any:
    def fn(x):  # type: ignore[no-untyped-def]
        """A tool.

        Args:
            x: An argument.
        """
        return x

    fn.__annotations__ = {"x": hint}
    if default is not NOTHING:
        fn.__defaults__ = (default,)
    return tool(fn)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_types(), st.one_of(st.just(NOTHING), st.none(), st.integers(), st.just(float("inf"))))
def test_a_built_schema_is_the_one_parse_accepts_in_the_same_order(hint: Any, default: Any) -> None:
    try:
        made = _define(hint, default)
    except (ToolDefinitionError, SchemaError):
        return  # refused at definition: nothing is taken unchecked
    shown = made.input_schema
    checked = InputSchema.parse(shown)  # the full check: what the validator would refuse
    assert json.dumps(checked.schema) == json.dumps(shown)  # the same keywords, in the same order
    assert in_keyword_order(shown) is shown
    for value in (None, 1, "a", [1], {"x": 1}):
        assert (made.schema.check({"x": value}) is None) == (checked.check({"x": value}) is None)


def test_a_type_remembered_keeps_its_members_in_the_order_each_tool_gives() -> None:
    first = _define(int | str).input_schema["properties"]["x"]
    second = _define(str | int).input_schema["properties"]["x"]
    assert (first["type"], second["type"]) == (["integer", "string"], ["string", "integer"])
    ab = _define(list[Literal["a", "b"]]).input_schema["properties"]["x"]
    ba = _define(list[Literal["b", "a"]]).input_schema["properties"]["x"]
    assert (ab["items"]["enum"], ba["items"]["enum"]) == (["a", "b"], ["b", "a"])


def test_a_remembered_schema_is_each_tools_own() -> None:
    first = _define(list[int] | None)
    first.input_schema["properties"]["x"]["type"].append("string")  # an application changing what it was given
    assert _define(list[int] | None).input_schema["properties"]["x"]["type"] == ["array", "null"]


def test_a_plain_tool_is_not_translated_until_a_call_needs_its_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    translated: list[object] = []
    original = _Translation.document

    def counted(self: _Translation, schema: Any) -> Any:
        translated.append(schema)
        return original(self, schema)

    monkeypatch.setattr(_Translation, "document", counted)
    made = _define(Annotated[int, Param(ge=1, le=10)] | None, None)
    assert translated == []
    assert made.schema.check({"x": 11}) is not None and len(translated) == 1  # compiled by the first check
    _define(Annotated[str, Param(pattern="^a")])  # a pattern is checked at definition
    assert len(translated) == 2


SOURCE = """
from typing import Annotated, Literal, Optional
from tinytools import Param

def f(query: str, limit: Annotated[int, Param(ge=1)] = 5, mode: Literal["a", "b"] = "a",
      tags: Optional[list[str]] = None, kind: "Kind | None" = None, when: Kind = None) -> dict:
    return {}
"""


def _compiled_source(future: bool, kind: Any) -> Any:
    namespace: dict[str, Any] = {"Kind": kind}
    text = ("from __future__ import annotations\n" if future else "") + SOURCE
    exec(compile(text, "<tools>", "exec", dont_inherit=True), namespace)
    return namespace


def test_string_annotations_make_the_tool_plain_ones_make_and_are_compiled_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[str] = []
    counted = lambda text, *rest: compiled.append(text) or compile(text, *rest)  # noqa: E731
    monkeypatch.setattr(callables, "compile", counted, raising=False)
    callables._COMPILED.clear()
    plain, future = _compiled_source(False, Colour), _compiled_source(True, Colour)
    assert tool(future["f"]).input_schema == tool(plain["f"]).input_schema
    first = len(compiled)
    assert first == len(set(compiled)) and first > 0
    again = _compiled_source(True, int)  # the same text, its name now another type
    assert tool(again["f"]).input_schema["properties"]["kind"]["type"] == ["integer", "null"]
    assert len(compiled) == first  # nothing compiled again, every name looked up again


def test_a_string_annotation_that_names_nothing_is_refused_as_before() -> None:
    namespace = _compiled_source(True, Colour)
    del namespace["Kind"]
    with pytest.raises(ToolDefinitionError, match="cannot resolve a type hint"):
        tool(namespace["f"])


@pytest.mark.parametrize(
    ("first", "second"),
    [(Literal[1, True], Literal[True, 1]), (Literal[1, 1.0], Literal[1.0, 1]), (Literal[0.0], Literal[-0.0])],
)
def test_literals_equal_as_sets_each_keep_their_own_values_in_order(first: Any, second: Any) -> None:
    for hint in (first, second, list[first], list[second]):  # type: ignore[valid-type]
        alone = json.dumps(_define(hint).input_schema)  # what its schema is, whatever was defined before
        hints._REMEMBERED.clear()
        assert json.dumps(_define(hint).input_schema) == alone
    shown = [_define(hint).input_schema["properties"]["x"]["enum"] for hint in (first, second)]
    assert [json.dumps(values) for values in shown] == [json.dumps(list(typing.get_args(h))) for h in (first, second)]


def test_a_schema_that_is_not_plain_json_is_refused_every_time_and_one_with_odd_text_is_kept_as_it_is() -> None:
    for _ in range(2):
        with pytest.raises((ToolDefinitionError, SchemaError)):
            _define(Literal[math.inf])
    for _ in range(2):
        assert _define(Literal["\ud800", "ok"]).input_schema["properties"]["x"]["enum"] == ["\ud800", "ok"]
        assert (
            _define(Literal["\ud800", "ok"] | list[int]).input_schema["properties"]["x"]["anyOf"][1]["type"] == "array"
        )


def test_a_refused_tool_leaves_nothing_a_later_tool_of_the_same_types_depends_on() -> None:
    class Bad(typing.TypedDict):
        code: Annotated[str, Param(pattern="(a+)+$")]  # exponential: refused

    def a(u: list[int] | dict[str, int], m: Bad) -> None:
        """A."""

    def b(u: list[int] | dict[str, int]) -> list[int] | dict[str, int]:
        """B."""
        return u

    with pytest.raises(SchemaError, match="exponential"):
        tool(a)
    made = tool(b)
    result = made.invoke({"u": [1, 2]})
    assert (result.status, result.output) == ("succeeded", [1, 2])


def test_metadata_on_a_sets_items_of_any_type_keeps_the_keyword_order() -> None:
    for hint in (set[Annotated[Any, "some values"]], set[Annotated[object, Param(ge=1)]]):
        shown = _define(hint).input_schema
        assert in_keyword_order(shown) is shown


@pytest.mark.parametrize(
    "hint",
    [
        typing.Optional[Annotated[None, Param(description="")]],  # noqa: UP045
        Annotated[None, Param(description="nothing")] | None,
        list[Annotated[Literal[None], Param(description="nothing")] | None],
        None | Annotated[None, Param(description="nothing")],
    ],
)
def test_an_annotated_none_or_none_is_one_null_type(hint: Any) -> None:
    made = _define(hint)
    shown = made.input_schema
    assert json.dumps(InputSchema.parse(shown).schema) == json.dumps(shown)  # no type named twice
    assert made.schema.check({"x": None if "list" not in repr(hint) else [None]}) is None
    assert made.schema.check({"x": 1 if "list" not in repr(hint) else [1]}) is not None
