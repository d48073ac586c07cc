"""What a model sends as arguments: conversion faults, costly values, echoes and exact bounds.

A conversion that raises (``__post_init__``, a pydantic validator) is an ``invalid_arguments``
result on every entry point, never an exception, and its text never reaches the model; an Enum
whose values are tuples is refused when the tool is defined. Cost stays linear: a set of
integers whose hashes all collide, a pattern with nested quantifiers and a Decimal that is not
a plain number are refused promptly. An unexpected key is echoed cut, an integer that rounds
onto an exclusive float bound is refused, and memoryview arguments that repeat a key are
malformed. Anything that could hang runs under a watchdog and fails instead.
"""

from __future__ import annotations

import asyncio
import datetime
import enum
import json
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Annotated, Any

import pytest

from tests.faults import FAULTS, RAN, SECRET, asserted, looked_up, validated
from tests.run.paths import run_in_thread
from tinytools import (
    Dispatcher,
    InputSchema,
    Param,
    SchemaError,
    Toolbox,
    ToolCall,
    ToolDefinitionError,
    ToolResult,
    adispatch,
    dispatch,
    tool,
)

WATCHDOG = 10.0
"""Seconds a call may run before the test fails instead of waiting on."""


@pytest.fixture(autouse=True)
def _clear_ran() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


def bounded(work: Callable[[], Any], timeout: float = WATCHDOG) -> Any:
    """What ``work`` returns, run in a daemon thread; fail if it is still running after ``timeout`` s."""
    watched = run_in_thread(work, timeout)
    assert watched.finished, f"the call was still running after {timeout} s"
    return watched.value()


# --- conversion faults ----------------------------------------------------------------------


@tool
def echo(text: str = "") -> str:
    """Echo text."""
    return text


CONVERSION_TOOLS = Toolbox([asserted, looked_up, validated, echo])


def _via_dispatch(call: ToolCall) -> ToolResult:
    return dispatch(call, CONVERSION_TOOLS)


def _via_adispatch(call: ToolCall) -> ToolResult:
    return asyncio.run(adispatch(call, CONVERSION_TOOLS))


def _via_dispatcher(call: ToolCall) -> ToolResult:
    return Dispatcher(CONVERSION_TOOLS).dispatch(call)


def _via_batch(call: ToolCall) -> ToolResult:
    first, second = Dispatcher(CONVERSION_TOOLS).dispatch_many([call, ToolCall("beside", "echo", '{"text": "x"}')])
    assert second.status == "succeeded", second
    return first


@pytest.mark.parametrize(
    "run",
    [_via_dispatch, _via_adispatch, _via_dispatcher, _via_batch],
    ids=["dispatch", "adispatch", "Dispatcher", "batch"],
)
@pytest.mark.parametrize(("name", "parameter"), FAULTS)
def test_a_conversion_that_raises_is_invalid_arguments(
    run: Callable[[ToolCall], ToolResult], name: str, parameter: str
) -> None:
    call = ToolCall("c1", name, json.dumps({parameter: {"x": 0}}))
    result = bounded(lambda: run(call))
    assert (result.status, result.error and result.error.code) == ("failed", "invalid_arguments"), result
    assert result.error.details is not None and result.error.details["parameter"] == parameter
    assert SECRET not in result.to_json().decode("utf-8", "replace")
    assert RAN == []


class Pair(enum.Enum):
    LOW = (1, 2)
    HIGH = (3, 4)


def test_an_enum_whose_values_are_tuples_is_refused_at_definition() -> None:
    with pytest.raises(ToolDefinitionError):

        @tool
        def choose(pair: Pair) -> str:
            """Choose a pair."""
            return pair.name


# --- cost stays linear ----------------------------------------------------------------------

MERSENNE = 2**61 - 1  # CPython hashes ints modulo this, so n + k * MERSENNE all hash alike


@tool
def distinct(values: set[int]) -> int:
    """Count distinct integers."""
    RAN.append("distinct")
    return len(values)


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "dict"])
def test_a_set_of_colliding_hashes_is_refused_promptly(as_text: bool) -> None:
    values = [7 + k * MERSENNE for k in range(20_000)]
    assert len({hash(v) for v in values[:100]}) == 1  # the premise: they all hash alike
    arguments: Any = json.dumps({"values": values}) if as_text else {"values": values}
    result = bounded(lambda: dispatch(ToolCall("c1", "distinct", arguments), [distinct]))
    assert (result.status, result.error and result.error.code) == ("failed", "invalid_arguments"), (
        result.status,
        result.error,
    )
    assert RAN == []


@tool
def distinct_ids(ids: set[uuid.UUID]) -> int:
    """Count distinct ids."""
    RAN.append("distinct_ids")
    return len(ids)


@tool
def distinct_amounts(amounts: frozenset[Decimal]) -> int:
    """Count distinct amounts."""
    RAN.append("distinct_amounts")
    return len(amounts)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("distinct_ids", {"ids": [str(uuid.UUID(int=k * MERSENNE)) for k in range(1, 20_000)]}),
        ("distinct_amounts", {"amounts": [str(k * MERSENNE) for k in range(1, 20_000)]}),
    ],
    ids=["uuid", "decimal"],
)
def test_values_that_collide_only_once_converted_are_refused_promptly(name: str, arguments: dict[str, Any]) -> None:
    tools = [distinct_ids, distinct_amounts]
    result = bounded(lambda: dispatch(ToolCall("c1", name, json.dumps(arguments)), tools))
    assert (result.status, result.error and result.error.code) == ("failed", "invalid_arguments"), result.error
    assert "hashes collide" in result.text()
    assert RAN == []


def test_a_set_of_a_few_colliding_values_is_still_a_set() -> None:
    few = [str(uuid.UUID(int=k * MERSENNE)) for k in range(1, 10)]
    result = dispatch(ToolCall("c1", "distinct_ids", {"ids": few}), [distinct_ids])
    assert result.output == 9


@pytest.mark.parametrize("pattern", ["^(a|aa)+$", "^(a+)+$"])
def test_a_hand_written_pattern_with_nested_quantifiers_is_refused(pattern: str) -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "pattern": pattern}},
        "additionalProperties": False,
    }
    with pytest.raises(SchemaError):
        InputSchema.parse(schema)


def test_a_param_pattern_with_nested_quantifiers_is_refused_at_definition() -> None:
    with pytest.raises(ToolDefinitionError):

        @tool
        def match(x: Annotated[str, Param(pattern="^(a+)+$")]) -> str:
            """Match a run of a."""
            return x


ARRIVED: list[Any] = []


@tool
def amount(x: Decimal) -> str:
    """Take a decimal amount."""
    ARRIVED.append(x)
    return str(x)


def test_a_decimal_accepts_plain_numbers_only() -> None:
    refused = ["NaN", "sNaN", "Infinity", "-Infinity", "1e999999999", " 1", "1_000", "\u0661\u0662\u0663"]
    accepted = ["1.5", "-0.25", "1e5", "0"]
    wrong: dict[str, Any] = {}
    for value in refused + accepted:
        ARRIVED.clear()
        result = bounded(lambda value=value: dispatch(ToolCall("c1", "amount", json.dumps({"x": value})), [amount]))
        code = result.error.code if result.error is not None else None
        if value in refused and code != "invalid_arguments":
            wrong[value] = (result.status, code, ARRIVED[:])
        if value in accepted and not (
            result.status == "succeeded"
            and len(ARRIVED) == 1
            and type(ARRIVED[0]) is Decimal
            and ARRIVED[0] == Decimal(value)
        ):
            wrong[value] = (result.status, code, ARRIVED[:])
    assert wrong == {}, "mishandled (status, code, what the tool received)"


# --- bounded echoes, exact bounds, memoryview -----------------------------------------------


@tool
def closed(a: int = 0) -> int:
    """Take one optional integer; nothing else."""
    RAN.append("closed")
    return a


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "dict"])
@pytest.mark.parametrize("via", ["dispatch", "Dispatcher"])
@pytest.mark.parametrize("keys", [1, 12])
def test_a_huge_unexpected_key_is_echoed_cut(as_text: bool, via: str, keys: int) -> None:
    sent = {f"{n}" + "a" * 100_000: 1 for n in range(keys)}
    arguments: Any = json.dumps(sent) if as_text else sent
    call = ToolCall("c1", "closed", arguments)
    dispatcher = Dispatcher([closed])
    for _ in range(2):  # the first call, then the express path
        result = dispatch(call, [closed]) if via == "dispatch" else dispatcher.dispatch(call)
        assert result.error is not None and result.error.code == "invalid_arguments"
        assert len(result.error.message) <= 2000 * keys
        assert len(result.text()) <= 2000 * keys
        assert len(json.dumps(result.error.details)) <= 1000 * keys  # the pointers and names it holds are cut too
        assert len(result.to_json()) <= 4000 * keys


@tool
def booked(room: uuid.UUID, day: datetime.date | None = None) -> str:
    """Book a room for a day."""
    return f"{room} {day}"


@pytest.mark.parametrize("argument", ["room", "day"])
def test_a_huge_value_that_cannot_become_its_type_is_echoed_cut(argument: str) -> None:
    sent = {"room": "12345678-1234-5678-1234-567812345678", argument: "z" * 100_000}
    dispatcher = Dispatcher([booked])
    for _ in range(2):  # the first call, then the express path
        result = dispatcher.dispatch(ToolCall("c1", "booked", json.dumps(sent)))
        assert result.error is not None and result.error.code == "invalid_arguments"
        assert f"/{argument}" in result.error.message and "zzz" in result.error.message
        assert len(result.error.message) <= 1000


SEEN_FLOATS: list[float] = []


@tool
def below(x: Annotated[float, Param(lt=1e16)]) -> float:
    """Take a float below 1e16."""
    SEEN_FLOATS.append(x)
    return x


@tool
def above(x: Annotated[float, Param(gt=-1e16)]) -> float:
    """Take a float above -1e16."""
    SEEN_FLOATS.append(x)
    return x


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "dict"])
@pytest.mark.parametrize("via", ["dispatch", "Dispatcher"])
@pytest.mark.parametrize(("target", "value"), [(below, 9999999999999999), (above, -9999999999999999)], ids=["lt", "gt"])
def test_an_integer_that_rounds_onto_an_exclusive_bound_is_refused(
    target: Any, value: int, as_text: bool, via: str
) -> None:
    SEEN_FLOATS.clear()
    assert float(value) in (1e16, -1e16)  # the premise: as a float it equals the bound
    arguments: Any = json.dumps({"x": value}) if as_text else {"x": value}
    call = ToolCall("c1", target.name, arguments)
    result = dispatch(call, [target]) if via == "dispatch" else Dispatcher([target]).dispatch(call)
    assert SEEN_FLOATS == [], "the function received a value equal to its exclusive bound"
    assert result.error is not None and result.error.code == "invalid_arguments", result


@tool
def grouped(a: dict[str, int] | None = None) -> int:
    """Take an optional mapping of integers."""
    RAN.append("grouped")
    return 0


@pytest.mark.parametrize(
    "data", [b'{"a": {"b": 1, "b": 2}}', b'{"a": {"b": 1}, "a": {"b": 2}}'], ids=["nested", "top-level"]
)
@pytest.mark.parametrize("via", ["dispatch", "Dispatcher"])
def test_memoryview_arguments_with_a_repeated_key_are_malformed(data: bytes, via: str) -> None:
    call = ToolCall("c1", "grouped", memoryview(data))
    result = dispatch(call, [grouped]) if via == "dispatch" else Dispatcher([grouped]).dispatch(call)
    assert result.error is not None and result.error.code == "malformed_arguments", result
    assert RAN == []
