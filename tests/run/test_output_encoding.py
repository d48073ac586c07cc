"""What tools return becomes JSON data: the input types, pydantic models, the application's encoders.

Every type tinytools accepts as an input encodes as an output and matches the output schema made
from the return annotation (a hypothesis property over nested types). ``encoders=`` on a
`Toolbox` or a `Dispatcher` teaches the rest, looked up by the MRO, on every entry point: the
module functions, a dispatcher's, a process pool's workers and the MCP server. A value that still
cannot be encoded fails ``invalid_output`` naming its type and its JSON pointer.
"""

from __future__ import annotations

import array
import dataclasses
import datetime
import decimal
import multiprocessing
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, Optional

import anyio
import msgspec
import numpy as np
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from typing_extensions import TypedDict

from tests.cases import Address, Level, Pair, Point, Tree, Unit
from tinytools import Dispatcher, Toolbox, ToolCall, ToolDefinitionError, ToolResult, tool
from tinytools._schema.input_schema import compile_validator
from tinytools.providers import mcp

from .paths import BATCH_ENTRIES, DISPATCHER_ENTRIES, ENTRIES, run_batch
from .paths import run_call as _run_call

# --- the types -------------------------------------------------------------------------------


class Order(msgspec.Struct, rename="camel"):
    unit_price: int
    line_count: int = 1


class Line(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    unit_price: int = pydantic.Field(alias="unitPrice")
    sku: str
    when: datetime.date


class Basket(pydantic.BaseModel):
    lines: list[Line]
    owner: str = pydantic.Field(serialization_alias="ownerName", default="")


class Ratio(Fraction):
    """A subclass of a registered type."""


class Opaque:
    """A type with no encoder, that pydantic does not know either."""


# --- the property: input types encode as outputs that match the output schema ---------------

texts = st.text(max_size=8)
finite = st.floats(allow_nan=False, allow_infinity=False)
decimals = st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False, allow_infinity=False)
datetimes = st.datetimes(timezones=st.none() | st.just(datetime.timezone.utc))
trees = st.recursive(
    st.builds(Tree, label=texts), lambda kids: st.builds(Tree, label=texts, children=st.lists(kids, max_size=2))
)
lines = st.builds(Line, unit_price=st.integers(), sku=texts, when=st.dates())

Shape = tuple[Any, st.SearchStrategy[Any]]
LIST: Any = list  # generic aliases built at run time, from drawn types
DICT: Any = dict
TUPLE: Any = tuple
SET: Any = set
FROZENSET: Any = frozenset
OPTIONAL: Any = Optional  # not `X | None`: X may be None itself

HASHABLE: list[Shape] = [
    (int, st.integers()),
    (str, texts),
    (Unit, st.sampled_from(Unit)),
    (uuid.UUID, st.uuids()),
    (datetime.date, st.dates()),
]
LEAVES: list[Shape] = [
    *HASHABLE,
    (float, finite),
    (bool, st.booleans()),
    (None, st.none()),
    (Level, st.sampled_from(Level)),
    (Literal["a", 1, True], st.sampled_from(["a", 1, True])),
    (datetime.datetime, datetimes),
    (datetime.time, st.times()),
    (datetime.timedelta, st.timedeltas()),
    (decimal.Decimal, decimals),
    (Point, st.builds(Point, x=finite, y=finite)),
    (Tree, trees),
    (Address, st.builds(Address, street=texts) | st.builds(Address, street=texts, zip=texts)),
    (Order, st.builds(Order, unit_price=st.integers(), line_count=st.integers())),
    (Pair, st.builds(Pair, st.integers(), texts)),
    (Line, lines),
    (Basket, st.builds(Basket, lines=st.lists(lines, max_size=3), owner=texts)),
]


def _containers(children: st.SearchStrategy[Shape]) -> st.SearchStrategy[Shape]:
    def listed(shape: Shape) -> Shape:
        return LIST[shape[0]], st.lists(shape[1], max_size=3)

    def mapped(shape: Shape) -> Shape:
        return DICT[str, shape[0]], st.dictionaries(texts, shape[1], max_size=3)

    def optional(shape: Shape) -> Shape:
        return OPTIONAL[shape[0]], st.none() | shape[1]

    def varied(shape: Shape) -> Shape:
        return TUPLE[shape[0], ...], st.lists(shape[1], max_size=3).map(tuple)

    def paired(shapes: tuple[Shape, Shape]) -> Shape:
        (a, va), (b, vb) = shapes
        return TUPLE[a, b], st.tuples(va, vb)

    hashable = st.sampled_from(HASHABLE)
    return st.one_of(
        children.map(listed),
        children.map(mapped),
        children.map(optional),
        children.map(varied),
        st.tuples(children, children).map(paired),
        hashable.map(lambda shape: (SET[shape[0]], st.sets(shape[1], max_size=3))),
        hashable.map(lambda shape: (FROZENSET[shape[0]], st.frozensets(shape[1], max_size=3))),
    )


SHAPES = st.recursive(st.sampled_from(LEAVES), _containers, max_leaves=6)


def run_call(entry: str, tools: Any, call: ToolCall, **options: Any) -> ToolResult:
    """`paths.run_call`, given a `Toolbox` (with its encoders) rather than a list of tools."""
    return _run_call(entry, tools, call, **options)


def _returning(hint: Any, value: Any, *, validate_output: bool = False) -> Any:
    def returns() -> Any:
        return value

    returns.__annotations__ = {"return": hint}
    return tool(name="returns", description="Return the value.", validate_output=validate_output)(returns)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_input_type_encodes_as_an_output_that_matches_its_schema(data: st.DataObject) -> None:
    hint, values = data.draw(SHAPES, label="type")
    value = data.draw(values, label="value")
    checked = _returning(hint, value, validate_output=True)
    result = Dispatcher([checked]).dispatch(ToolCall("c1", "returns", {}))
    assert result.status == "succeeded", result.error
    validate = compile_validator(checked.output_schema)
    validate(result.output)
    assert _plain_data(result.output), result.output
    unchecked = Dispatcher([_returning(hint, value)]).dispatch(ToolCall("c2", "returns", {}))
    assert unchecked.status == "succeeded", unchecked.error
    read = unchecked.text() if isinstance(unchecked.output, str) else msgspec.json.decode(unchecked.text())
    assert read == result.output  # what the model reads is that same data


def _plain_data(value: Any) -> bool:
    """Whether ``value`` is made of JSON's types only."""
    if type(value) is dict:
        return all(type(key) is str and _plain_data(item) for key, item in value.items())
    if type(value) is list:
        return all(map(_plain_data, value))
    return type(value) in (str, int, float, bool, type(None))


# --- pydantic models ------------------------------------------------------------------------

WHEN = datetime.date(2026, 12, 1)


@tool
def basket() -> Basket:
    """A pydantic model, with aliases."""
    return Basket(lines=[Line(unitPrice=3, sku="a", when=WHEN)], owner="ann")


@tool
def baskets() -> list[Basket]:
    """Pydantic models inside a list."""
    return [basket.fn(), Basket(lines=[])]


BASKET = {"lines": [{"unitPrice": 3, "sku": "a", "when": "2026-12-01"}], "ownerName": "ann"}


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_pydantic_model_returns_its_json_data_by_alias(entry: str) -> None:
    result = run_call(entry, Toolbox([basket]), ToolCall("c1", "basket", {}))
    assert result.status == "succeeded", result.error
    assert result.output == BASKET == basket.fn().model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize("entry", ENTRIES)
def test_pydantic_models_nested_in_a_list_encode(entry: str) -> None:
    result = run_call(entry, Toolbox([baskets]), ToolCall("c1", "baskets", {}))
    assert result.output == [BASKET, {"lines": [], "ownerName": ""}]


# --- the application's encoders --------------------------------------------------------------


@tool
def priced() -> dict[str, Any]:
    """Foreign types in a plain dict."""
    return {"items": [{"price": Fraction(1, 3)}, {"price": Ratio(1, 2)}], "n": 2}


class Stamp(TypedDict):
    when: datetime.date
    tags: set[str]
    pair: tuple[int, int]


@tool
def stamped() -> Stamp:
    """A plain dict holding values JSON writes differently: a date, a set, a tuple."""
    return {"when": WHEN, "tags": {"x"}, "pair": (1, 2)}


@tool
def numbers() -> dict[str, Any]:
    """numpy scalars."""
    return {"i": np.int64(7), "f": np.float32(1.5), "d": np.float64(0.25), "b": np.bool_(True)}


@tool
def in_a_model() -> dict[str, Any]:
    """A dataclass beside a registered type."""
    return {"point": Point(x=1.0, y=2), "codes": array.array("i", [1, 2])}


def _ratio_text(value: Ratio) -> str:
    return f"ratio {value}"


TOOLS = Toolbox([priced, numbers, in_a_model], encoders={Fraction: str, np.generic: np.generic.item})


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_toolbox_s_encoders_apply_on_every_entry_point(entry: str) -> None:
    result = run_call(entry, TOOLS, ToolCall("c1", "priced", {}))
    assert result.output == {"items": [{"price": "1/3"}, {"price": "1/2"}], "n": 2}
    numbers_result = run_call(entry, TOOLS, ToolCall("c2", "numbers", {}))
    assert numbers_result.output == {"i": 7, "f": 1.5, "d": 0.25, "b": True}
    assert [type(value) for value in numbers_result.output.values()] == [int, float, float, bool]


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_a_dispatcher_s_encoders_win_over_the_toolbox_s_and_the_nearest_class_wins(entry: str) -> None:
    dispatcher = Dispatcher(TOOLS, encoders={Fraction: float, Ratio: _ratio_text})
    result = run_call(entry, TOOLS, ToolCall("c1", "priced", {}), dispatcher=dispatcher)
    assert result.output == {"items": [{"price": 1 / 3}, {"price": "ratio 1/2"}], "n": 2}
    nearest = Dispatcher(Toolbox([priced], encoders={Ratio: _ratio_text}), encoders={Fraction: str})
    assert run_call(entry, [], ToolCall("c2", "priced", {}), dispatcher=nearest).output["items"] == [
        {"price": "1/3"},
        {"price": "ratio 1/2"},
    ]


def test_object_encodes_what_nothing_nearer_does() -> None:
    anything = Dispatcher([basket, priced], encoders={object: repr, Ratio: _ratio_text})
    assert anything.dispatch(ToolCall("c1", "priced", {})).output["items"] == [
        {"price": "Fraction(1, 3)"},
        {"price": "ratio 1/2"},
    ]
    assert anything.dispatch(ToolCall("c2", "basket", {})).output == BASKET  # a model is nearer than object


def test_without_encoders_numpy_floats_are_floats_and_other_scalars_are_named() -> None:
    result = Dispatcher([numbers]).dispatch(ToolCall("c1", "numbers", {}))
    assert result.error is not None and result.error.details == {"pointer": "/i", "type": "int64"}
    assert Dispatcher([numbers], encoders={np.integer: int, np.bool_: bool, np.float32: float}).dispatch(
        ToolCall("c2", "numbers", {})
    ).output == {"i": 7, "f": 1.5, "d": 0.25, "b": True}


def test_a_registered_type_encodes_inside_dataclasses_and_pydantic_models() -> None:
    class Held(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
        share: Fraction
        codes: list[Any]

    @tool
    def held() -> dict[str, Any]:
        """A registered type inside a pydantic model."""
        return {"held": Held(share=Fraction(2, 3), codes=[array.array("i", [4])])}

    dispatcher = Dispatcher([held, in_a_model], encoders={Fraction: str, array.array: array.array.tolist})
    assert dispatcher.dispatch(ToolCall("c1", "held", {})).output == {"held": {"share": "2/3", "codes": [[4]]}}
    assert dispatcher.dispatch(ToolCall("c2", "in_a_model", {})).output == {
        "point": {"x": 1.0, "y": 2},
        "codes": [1, 2],
    }


@pytest.mark.parametrize(
    "encoders",
    [{datetime.datetime: str}, {int: str}, {dict: str}, {Point: str}, {Unit: str}, {Order: str}],
    ids=["datetime", "int", "dict", "dataclass", "enum", "struct"],
)
def test_an_encoder_msgspec_would_never_call_is_refused(encoders: dict[type, Callable[[Any], Any]]) -> None:
    with pytest.raises(ToolDefinitionError, match="encoded by msgspec itself"):
        Toolbox([priced], encoders=encoders)
    with pytest.raises(ToolDefinitionError, match="encoded by msgspec itself"):
        Dispatcher([priced], encoders=encoders)


def test_encoders_are_keyed_by_class_and_are_callable() -> None:
    with pytest.raises(ToolDefinitionError, match="not callable"):
        Toolbox([], encoders={Fraction: "str"})  # type: ignore[dict-item]
    with pytest.raises(ToolDefinitionError, match="keyed by class"):
        Dispatcher([], encoders={"Fraction": str})  # type: ignore[dict-item]


# --- what cannot be encoded is named, with its pointer --------------------------------------


def _details(result: ToolResult) -> dict[str, Any]:
    assert result.status == "failed" and result.error is not None, result
    assert result.error.code == "invalid_output"
    return result.error.details or {}


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_unregistered_type_is_named_with_its_pointer(entry: str) -> None:
    result = run_call(entry, [priced], ToolCall("c1", "priced", {}))
    assert _details(result) == {"pointer": "/items/0/price", "type": "Fraction"}
    assert result.error is not None and "'Fraction' at /items/0/price" in result.error.message


def test_pointers_escape_keys_and_reach_inside_models_structs_and_tuples() -> None:
    class Holder(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
        inner: Any = pydantic.Field(alias="theInner")

    cases: list[tuple[Any, dict[str, str]]] = [
        ({"a/b": {"c~d": [0, Fraction(1)]}}, {"pointer": "/a~1b/c~0d/1", "type": "Fraction"}),
        ([Holder(theInner=(1, Opaque()))], {"pointer": "/0/theInner/1", "type": "Opaque"}),
        ({"p": Point(x=Fraction(1))}, {"pointer": "/p/x", "type": "Fraction"}),  # type: ignore[arg-type]
        (Order(unit_price=Fraction(1)), {"pointer": "/unitPrice", "type": "Fraction"}),  # type: ignore[arg-type]
        ({"k": {Fraction(1): 1}}, {"pointer": "/k", "type": "Fraction"}),
        (Fraction(1), {"pointer": "", "type": "Fraction"}),
        ({"ok": [1, {"s": {threading.Lock()}}]}, {"pointer": "/ok/1/s/0", "type": "lock"}),
    ]
    for value, expected in cases:
        result = Dispatcher([_returning(Any, value)]).dispatch(ToolCall("c1", "returns", {}))
        assert _details(result) == expected, value


def test_a_value_that_contains_itself_and_a_failing_encoder_are_named() -> None:
    looped: list[Any] = [1]
    looped.append({"again": looped})
    result = Dispatcher([_returning(Any, {"x": looped})]).dispatch(ToolCall("c1", "returns", {}))
    assert _details(result) == {"pointer": "/x/1/again", "type": "list"}
    assert result.error is not None and "contains itself" in result.error.message

    def refuse(value: Fraction) -> str:
        raise ValueError("no")

    failing = Dispatcher([priced], encoders={Fraction: refuse}).dispatch(ToolCall("c1", "priced", {}))
    assert _details(failing) == {"pointer": "/items/0/price", "type": "Fraction"}
    assert failing.error is not None and "its encoder failed" in failing.error.message
    inner = Dispatcher([priced], encoders={Fraction: lambda value: [value.numerator, Point]})
    assert _details(inner.dispatch(ToolCall("c2", "priced", {}))) == {"pointer": "/items/0/price/1", "type": "type"}


# --- a process pool's workers ----------------------------------------------------------------


@tool(executor="process")
def pooled_basket() -> Basket:
    """A pydantic model, returned from a worker process."""
    return Basket(lines=[Line(unitPrice=3, sku="a", when=WHEN)], owner="ann")


@tool(executor="process")
def pooled_priced() -> dict[str, Any]:
    """A registered type, returned from a worker process."""
    return {"items": [{"price": Fraction(1, 3)}, {"price": Ratio(1, 2)}], "n": 2}


@tool(executor="process")
def pooled_lock() -> dict[str, Any]:
    """A value that neither pickles nor encodes."""
    return {"ok": [1, {"lock": threading.Lock()}]}


@pytest.fixture(scope="module")
def processes() -> Iterator[ProcessPoolExecutor]:
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver"))
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_outputs_from_workers_are_encoded_with_the_dispatcher_s_encoders(
    entry: str, processes: ProcessPoolExecutor
) -> None:
    unpicklable = lambda value: str(value)  # noqa: E731 - a lambda does not pickle: encoders stay here
    tools = Toolbox([pooled_basket, pooled_priced, pooled_lock])
    dispatcher = Dispatcher(tools, executor=processes, encoders={Fraction: unpicklable})
    assert run_call(entry, tools, ToolCall("c1", "pooled_basket", {}), dispatcher=dispatcher).output == BASKET
    priced_result = run_call(entry, tools, ToolCall("c2", "pooled_priced", {}), dispatcher=dispatcher)
    assert priced_result.output == {"items": [{"price": "1/3"}, {"price": "1/2"}], "n": 2}
    plain = Dispatcher(tools, executor=processes)
    missing = run_call(entry, tools, ToolCall("c3", "pooled_priced", {}), dispatcher=plain)
    assert _details(missing) == {"pointer": "/items/0/price", "type": "Fraction"}
    lock = run_call(entry, tools, ToolCall("c4", "pooled_lock", {}), dispatcher=dispatcher)
    assert lock.error is not None and lock.error.code == "invalid_output"
    assert "'lock' at /ok/1/lock" in lock.error.message


# --- the MCP server -------------------------------------------------------------------------


async def _over_mcp(server: Any) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            return {
                name: await client.call_tool(name, {}) for name in ("basket", "baskets", "priced", "numbers", "stamped")
            }


def test_the_mcp_server_sends_encoded_outputs_as_structured_content() -> None:
    toolbox = Toolbox(
        [basket, baskets, priced, numbers, stamped], encoders={Fraction: str, np.generic: np.generic.item}
    )
    answers = anyio.run(_over_mcp, mcp.build_server(toolbox))
    assert answers["basket"].structured_content == BASKET
    assert answers["baskets"].structured_content == {"result": [BASKET, {"lines": [], "ownerName": ""}]}
    assert answers["priced"].structured_content == {"items": [{"price": "1/3"}, {"price": "1/2"}], "n": 2}
    assert answers["numbers"].structured_content == {"i": 7, "f": 1.5, "d": 0.25, "b": True}
    assert answers["stamped"].structured_content == {"when": "2026-12-01", "tags": ["x"], "pair": [1, 2]}
    assert not any(answer.is_error for answer in answers.values())
    plain = Dispatcher(Toolbox([basket, baskets, priced, numbers, stamped]))
    refused = anyio.run(_over_mcp, mcp.build_server(toolbox, dispatcher=plain))
    assert refused["priced"].is_error and "'Fraction' at /items/0/price" in refused["priced"].content[0].text
    assert refused["basket"].structured_content == BASKET


@dataclasses.dataclass
class Where:
    path: Path


def _must_exist(path: Path) -> str:
    return str(path.resolve(strict=True))  # FileNotFoundError for a path the model chose


@tool
def locate(name: str) -> Where:
    """Where a file is."""
    return Where(Path("/nonexistent") / name)


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_encoder_that_raises_anything_ends_its_call_invalid_output(entry: str) -> None:
    box = Toolbox([locate, priced], encoders={Path: _must_exist, Fraction: str})
    result = run_call(entry, box, ToolCall("c1", "locate", {"name": "x"}))
    assert result.status == "failed" and result.error is not None and result.error.code == "invalid_output"
    assert "/path" in result.error.message and "No such file" not in result.text()  # its text stays in the log


@pytest.mark.parametrize("entry", BATCH_ENTRIES)
def test_an_encoder_that_raises_loses_nothing_else_of_a_batch(entry: str) -> None:
    dispatcher = Dispatcher(Toolbox([locate, priced], encoders={Path: _must_exist, Fraction: str}))
    calls = [ToolCall("a", "priced", {}), ToolCall("b", "locate", {"name": "x"}), ToolCall("c", "priced", {})]
    results = run_batch(entry, dispatcher, calls)
    assert [(r.call_id, r.status) for r in results] == [("a", "succeeded"), ("b", "failed"), ("c", "succeeded")]


@dataclasses.dataclass
class _Unreadable:
    """A value whose field raises as it is read (a property over a closed connection, say)."""

    x: int

    def __getattribute__(self, name: str) -> Any:
        if name == "x":
            raise RuntimeError("the connection is closed")
        return object.__getattribute__(self, name)


@tool
def unreadable() -> list[Any]:
    """Return a value that cannot be read to the end."""
    return [_Unreadable(1)]


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_output_that_raises_as_it_is_read_ends_its_call_invalid_output(entry: str) -> None:
    # finding what in the output could not be encoded reads it again: that raises too, and stays in its call
    for later in (False, True):
        result = run_call(entry, [unreadable], ToolCall("c1", "unreadable", {}), later=later)
        assert result.status == "failed" and result.error is not None and result.error.code == "invalid_output"
        assert "RuntimeError" in result.error.message and "connection is closed" not in result.text()
