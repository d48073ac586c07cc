"""What crosses the boundary whatever a dict holds: keys of any type JSON writes, decoded arguments
checked as text is, and outputs JSON has no number for.

- An output with keys that are not strings (numbers, enums, UUIDs, dates, Decimals, at any depth)
  succeeds the same with a secret injected as without, and a secret in a key or a value never
  reaches the model.
- Arguments handed over already decoded (``ToolCall(arguments=<dict>)``) are refused, as
  ``malformed_arguments`` with a pointer, where text would be: a lone surrogate, a key that is
  not a string; never raised out of a batch.
- An output holding NaN or an infinity fails ``invalid_output`` naming where it sits.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import uuid
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.run.facing import ENTRY_POINTS, assert_no_leak
from tests.run.paths import BATCH_ENTRIES, ENTRIES, run_batch, run_call, summary
from tinytools import Dispatcher, Injected, Toolbox, ToolCall, tool

SECRET = "sk-live-abcdefghijk"


class Color(enum.Enum):
    RED = "red-ish"
    BLUE = 7


@tool
def give(kind: str, *, key: Annotated[str, Injected("api_key", secret=True)]) -> Any:
    """Return the output under test (set by the test), the secret in place of each marker."""
    return _fill(OUTPUTS[kind], key)


@tool
def give_plain(kind: str) -> Any:
    """The same outputs, with no secret injected."""
    return _fill(OUTPUTS[kind], SECRET)


OUTPUTS: dict[str, Any] = {}
MARK = object()


def _fill(value: Any, key: str) -> Any:
    if value is MARK:
        return key
    if isinstance(value, dict):
        return {(key if k is MARK else k): _fill(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(item, key) for item in value]
    return value


KEYS = st.one_of(
    st.text(max_size=6),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(list(Color)),
    st.uuids(),
    st.dates(),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-1000, max_value=1000),
)
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-100, 100), st.text(max_size=6))


def _outputs(secret_places: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    node = st.recursive(
        st.one_of(LEAVES, secret_places),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.one_of(KEYS, st.just(MARK)), inner, max_size=3),
        ),
        max_leaves=8,
    )
    return st.dictionaries(KEYS, node, min_size=1, max_size=3)


def _holds_mark(value: Any) -> bool:
    if value is MARK:
        return True
    if isinstance(value, dict):
        return any(k is MARK or _holds_mark(v) for k, v in value.items())
    return isinstance(value, list) and any(map(_holds_mark, value))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=_outputs(st.just(MARK)), entry=st.sampled_from(ENTRY_POINTS))
def test_outputs_with_keys_of_any_type_succeed_with_a_secret_that_never_leaks(output: Any, entry: str) -> None:
    OUTPUTS["case"] = output
    call = ToolCall(id="c", name="give", arguments='{"kind": "case"}')
    plain = run_call(entry, [give_plain], ToolCall(id="c", name="give_plain", arguments='{"kind": "case"}'))
    assert plain.status == "succeeded"
    result = run_call(entry, [give], call, inject={"api_key": SECRET})
    assert result.status == "succeeded", result.error
    assert_no_leak(result, SECRET)
    structured = result.structured()
    if structured is not None:
        assert SECRET not in json.dumps(structured, default=str)
    if not _holds_mark(output):  # nothing to redact: the model reads what it reads without a secret
        assert result.text() == plain.text()


@pytest.mark.parametrize(
    "output",
    [
        {1: "a"},
        {1.5: "a"},
        {Color.RED: 1, Color.BLUE: 2},
        {uuid.UUID(int=1): 1},
        {datetime.date(2020, 1, 1): 1},
        {decimal.Decimal("1.5"): 1},
        {True: 1},
        [{"a": {2: 3}}],
    ],
)
def test_a_secret_changes_nothing_in_an_output_that_holds_none(output: Any) -> None:
    OUTPUTS["case"] = output
    with_secret = Dispatcher([give]).dispatch(
        ToolCall(id="s", name="give", arguments='{"kind": "case"}'), inject={"api_key": SECRET}
    )
    without = Dispatcher([give_plain]).dispatch(ToolCall(id="p", name="give_plain", arguments='{"kind": "case"}'))
    assert (with_secret.status, with_secret.text()) == ("succeeded", without.text())
    assert with_secret.output == without.output  # the same rule for `output`, secret or not


@pytest.mark.parametrize("key", [1, Color.BLUE, SECRET])
def test_a_secret_as_a_dict_key_is_redacted(key: Any) -> None:
    OUTPUTS["case"] = {"k": {key: 1, MARK: 2}, MARK: [MARK]}
    result = Dispatcher([give]).dispatch(
        ToolCall(id="s", name="give", arguments='{"kind": "case"}'), inject={"api_key": SECRET}
    )
    assert result.status == "succeeded"
    assert_no_leak(result, SECRET)
    assert result.output is None or SECRET not in repr(result.output)


def test_an_output_too_deep_to_walk_is_still_sealed_when_it_holds_a_secret() -> None:
    deep: Any = [SECRET]
    for _ in range(2000):
        deep = [deep]
    OUTPUTS["deep"] = deep
    result = Dispatcher([give]).dispatch(
        ToolCall(id="d", name="give", arguments='{"kind": "deep"}'), inject={"api_key": SECRET}
    )
    if result.status == "succeeded":
        assert SECRET not in result.text()
        assert result.structured() is None or SECRET not in repr(result.structured())
    else:
        assert result.error is not None and SECRET not in result.text()


# --- decoded arguments ---------------------------------------------------------------------


@tool
def send(text: str) -> str:
    """Send a message (a side effect: it must not run on refused arguments)."""
    SENT.append(text)
    return "sent"


@tool
def nested(d: dict[str, str], items: list[str] | None = None) -> int:
    """Take a mapping of strings."""
    SENT.append(d)
    return len(d)


SENT: list[Any] = []


BAD_ARGUMENTS = [
    pytest.param("nested", {"d": {"s": "\ud800"}}, "/d/s", id="surrogate-nested-value"),
    pytest.param("nested", {"d": {"ok": "x"}, "items": ["a", "\udfff"]}, "/items/1", id="surrogate-in-list"),
    pytest.param("nested", {"d": {"\udc80": "x"}}, "/d", id="surrogate-key"),
    pytest.param("nested", {"d": {1: "x"}}, "/d", id="int-key-nested"),
    pytest.param("nested", {"d": {"a": "b"}, 2: "x"}, "", id="int-key-top"),
    pytest.param("send", {"text": "\ud800"}, "/text", id="surrogate-top-scalar"),
    pytest.param("send", {1: "x"}, "", id="int-key-top-scalar"),
    pytest.param("send", {"text": "a", 1: "x"}, "", id="int-key-beside-scalar"),
]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("name", "arguments", "pointer"), BAD_ARGUMENTS)
def test_decoded_arguments_json_cannot_hold_are_refused_with_a_pointer(
    entry: str, name: str, arguments: dict[Any, Any], pointer: str
) -> None:
    SENT.clear()
    result = run_call(entry, [send, nested], ToolCall(id="a", name=name, arguments=arguments))
    assert (result.status, result.error and result.error.code) == ("failed", "malformed_arguments")
    assert SENT == []
    assert f"at {pointer or '/'}:" in result.error.message
    result.text().encode("utf-8")  # the refusal itself is valid text: it does not echo a surrogate


def test_text_with_a_lone_surrogate_is_refused_the_same_way() -> None:
    result = Dispatcher([send]).dispatch(ToolCall(id="t", name="send", arguments='{"text": "\ud800"}'))
    assert result.error is not None and result.error.code == "malformed_arguments"


@pytest.mark.parametrize("entry", BATCH_ENTRIES)
@pytest.mark.parametrize(
    "arguments",
    [{"d": {1: "x"}}, pytest.param({3: "x"}, id="top"), {"d": {"a": "\ud800"}}],
)
def test_a_bad_dict_fails_its_call_alone_in_a_batch(entry: str, arguments: dict[Any, Any]) -> None:
    calls = [
        ToolCall(id="bad", name="nested", arguments=arguments),
        ToolCall(id="ok", name="send", arguments={"text": "x"}),
    ]
    results = run_batch(entry, Dispatcher([send, nested]), calls)
    assert summary(results) == [("bad", "failed", "malformed_arguments"), ("ok", "succeeded", None)]


@given(
    st.recursive(
        st.one_of(st.text(), st.integers(), st.booleans(), st.none()),
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
        max_leaves=10,
    )
)
def test_valid_decoded_arguments_reach_the_tool_equal_and_unshared(value: Any) -> None:
    SENT.clear()
    arguments = {"d": {"v": json.dumps(value)}, "items": [json.dumps(value)]}
    result = Dispatcher([nested]).dispatch(ToolCall(id="v", name="nested", arguments=arguments))
    assert result.status == "succeeded", result.error
    assert [arguments["d"]] == SENT and SENT[0] is not arguments["d"]


# --- non-finite outputs --------------------------------------------------------------------


class Fraction(float):
    """A float subclass: the output goes through conversion, not the plain path."""


@tool
def number(kind: str) -> Any:
    """Return a value holding a number JSON has no text for."""
    return NON_FINITE[kind]


NON_FINITE: dict[str, Any] = {
    "nan": float("nan"),
    "inf-in-list": [1.0, float("inf")],
    "nested": {"a": {"b/c": [0, {"x": float("-inf")}]}},
    "subclass": Fraction("nan"),
    "subclass-inside": {"k": [Fraction("inf")]},
    "enum-key": {Color.RED: float("nan")},
    "tuple": ("a", float("nan")),
}
POINTERS = {
    "nan": "",
    "inf-in-list": "/1",
    "nested": "/a/b~1c/1/x",
    "subclass": "",
    "subclass-inside": "/k/0",
    "enum-key": "/red-ish",
    "tuple": "/1",
}


@pytest.mark.parametrize(
    ("entry", "kind"),
    [(entry, kind) for entry in ENTRIES for kind in NON_FINITE],
)
def test_non_finite_outputs_fail_invalid_output_naming_the_pointer(entry: str, kind: str) -> None:
    toolbox = Toolbox([number])
    runner = Dispatcher(toolbox)
    for attempt in range(3):  # later calls of a plain tool may take the express path
        call = ToolCall(id=f"n{attempt}", name="number", arguments=json.dumps({"kind": kind}))
        result = run_call(entry, toolbox, call, dispatcher=runner)
        assert result.status == "failed" and result.error is not None, (attempt, result.output)
        assert result.error.code == "invalid_output"
        assert result.error.details == {"pointer": POINTERS[kind], "type": "float"}
        assert result.output is None


@pytest.mark.parametrize("output", [None, {"x": None, "y": "null"}, [None, 1.5, "NaN"], 1e308])
def test_null_and_finite_outputs_still_succeed(output: Any) -> None:
    NON_FINITE["ok"] = output
    result = Dispatcher([number]).dispatch(ToolCall(id="n", name="number", arguments='{"kind": "ok"}'))
    assert (result.status, result.output) == ("succeeded", output)
