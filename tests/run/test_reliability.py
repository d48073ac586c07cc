"""The execution boundary under bad input and faults: every call gets exactly one result.

Each case runs through every way an application can run a call (`dispatch`, `adispatch`, a plain
`Dispatcher`, a `Dispatcher` with an event sink, which takes the general path, and a batch
beside a call that must still succeed) and checks the result: it carries the call's id, it is
well formed, it encodes, and its model-facing text is bounded and leaks nothing internal.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import enum
import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, ThreadPoolExecutor
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytools import (
    CancellationToken,
    Dispatcher,
    Injected,
    Limits,
    MemoryArtifactStore,
    RetryableError,
    Toolbox,
    ToolCall,
    ToolError,
    ToolEvent,
    ToolNotFound,
    ToolResult,
    adispatch,
    dispatch,
    tool,
)
from tinytools._schema.strict_json import MAX_DEPTH

from .paths import run_in_thread

INTERNAL = "internal-detail-7f3a"
"""Text only exceptions carry: it must never reach a result."""
SECRET = "sk-secret-value-91c2"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
def scale(x: float) -> float:
    """Return a float as received."""
    return x


@tool
def tags(items: list[str]) -> list[str]:
    """Return the list as received."""
    return items


@tool
def anything(value: Any = None) -> Any:
    """Return any JSON value as received."""
    return value


@tool
def mapping(data: dict[str, Any]) -> dict[str, Any]:
    """Return an object as received."""
    return data


@tool
def point(p: Point) -> list[Any]:
    """Return the class and fields of a point."""
    return [type(p).__name__, p.x, p.y]


@tool
def keyed(q: str, *, key: Annotated[str, Injected("api_key", secret=True)]) -> str:
    """Use a secret key."""
    return f"{q}:{key}"


@tool
def stoppable(n: int, token: CancellationToken) -> int:
    """Take the run's cancellation token."""
    return n


TOOLS = [add, scale, tags, anything, mapping, point, keyed, stoppable]
INJECT = {"api_key": SECRET}
COMPANION = ToolCall("companion", "add", '{"a": 20, "b": 22}')


def run_everywhere(call: ToolCall, tools: list[Any] | None = None, **options: Any) -> dict[str, ToolResult]:
    """The result of ``call`` on every path; the batch's companion call must still succeed."""
    tools = TOOLS if tools is None else tools
    box = Toolbox(tools)
    events: list[ToolEvent] = []
    results = {
        "dispatch": dispatch(call, box, inject=INJECT),
        "adispatch": asyncio.run(adispatch(call, box, inject=INJECT)),
        "Dispatcher": Dispatcher(box, **options).dispatch(call, inject=INJECT),
        "Dispatcher+events": Dispatcher(box, on_event=events.append, **options).dispatch(call, inject=INJECT),
    }
    batch = Dispatcher(box, **options).dispatch_many([COMPANION, call], inject=INJECT)
    assert len(batch) == 2 and batch[0].call_id == "companion" and batch[0].output == 42
    results["batch"] = batch[1]
    for result in results.values():
        check(result, call)
    assert sum(1 for event in events if type(event).__name__ == "ToolCompleted") == 1
    return results


def check(result: ToolResult, call: ToolCall) -> None:
    """A well-formed result for ``call`` that encodes and says nothing it should not."""
    assert result.call_id == call.id
    result.validate()
    encoded = result.to_json()
    assert INTERNAL.encode() not in encoded
    assert SECRET.encode() not in encoded
    if result.error is not None:
        message = result.error.message
        assert "Traceback" not in message
        assert len(message) < 1200
        assert result.error.code


def codes(results: dict[str, ToolResult]) -> set[str | None]:
    return {result.error.code if result.error else None for result in results.values()}


def only_code(call: ToolCall, tools: list[Any] | None = None, **options: Any) -> dict[str, ToolResult]:
    results = run_everywhere(call, tools, **options)
    assert len(codes(results)) == 1, {path: r.error for path, r in results.items()}
    return results


def failed_with(code: str, call: ToolCall, tools: list[Any] | None = None, **options: Any) -> ToolResult:
    results = only_code(call, tools, **options)
    assert codes(results) == {code}, {path: r.error for path, r in results.items()}
    return results["dispatch"]


def succeeded(call: ToolCall, tools: list[Any] | None = None, **options: Any) -> Any:
    results = only_code(call, tools, **options)
    assert codes(results) == {None}, {path: r.error for path, r in results.items()}
    outputs = [result.output for result in results.values()]
    assert all(output == outputs[0] for output in outputs)
    return outputs[0]


# -- bad input ---------------------------------------------------------------------------------


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


surrogates = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])


def any_text(max_size: int) -> st.SearchStrategy[str]:
    """Text that may hold lone surrogates, which st.text() never makes."""
    return st.lists(st.characters() | surrogates, max_size=max_size).map("".join)


@st.composite
def damaged_json(draw: st.DrawFn) -> str | bytes:
    """JSON text with a few characters cut out or put in, as str or as (maybe invalid) UTF-8."""
    document = {"value": draw(json_values), "items": draw(st.lists(any_text(5), max_size=3))}
    text = json.dumps(document, ensure_ascii=draw(st.booleans()))
    cut = draw(st.integers(0, len(text)))
    text = text[:cut] + draw(any_text(4)) + text[cut + draw(st.integers(0, 3)) :]
    return text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text


@SETTINGS
@given(
    st.binary(max_size=200) | any_text(200) | damaged_json(),
    st.sampled_from(["add", "tags", "anything", "mapping"]),
)
def test_arbitrary_bytes_and_text_get_one_result(arguments: str | bytes, name: str) -> None:
    results = run_everywhere(ToolCall("fuzz", name, arguments))
    assert codes(results) <= {None, "malformed_arguments", "invalid_arguments"}


@SETTINGS
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5), st.booleans())
def test_any_json_object_round_trips_as_text_or_dict(data: dict[str, Any], as_text: bool) -> None:
    arguments = json.dumps({"data": data}) if as_text else {"data": data}
    assert succeeded(ToolCall("c", "mapping", arguments)) == data


@pytest.mark.parametrize(
    "arguments",
    [b'{"a": "\xff"}', b'{"a": "\xc3\x28"}', b'{"a": 1, "b": "\xed\xa0\x80"}', b"\xfe\xff\x00{", b'{"\x80": 1}'],
)
def test_invalid_utf8_is_malformed(arguments: bytes) -> None:
    failed_with("malformed_arguments", ToolCall("c", "add", arguments))


@pytest.mark.parametrize("arguments", ['{"items": ["\ud800"]}', '{"items": ["a\udfff"]}', '{"\ud83d": 1}'])
def test_lone_surrogates_in_text_are_malformed(arguments: str) -> None:
    failed_with("malformed_arguments", ToolCall("c", "tags", arguments))


@pytest.mark.parametrize("arguments", [r'{"items": ["\ud800"]}', r'{"items": ["\udc00x"]}'])
def test_escaped_lone_surrogates_are_malformed(arguments: str) -> None:
    failed_with("malformed_arguments", ToolCall("c", "tags", arguments))


def test_a_lone_surrogate_in_decoded_arguments_is_refused_as_in_text() -> None:
    result = failed_with("malformed_arguments", ToolCall("c", "add", {"a": "\ud800"}))
    assert result.error is not None and "at /a" in result.error.message and "\ud800" not in result.error.message
    result.to_json()  # the message itself is text JSON can carry


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "nan", "inf", "1e999", "-1e400"])
def test_nan_and_infinity_in_text_are_malformed(number: str) -> None:
    failed_with("malformed_arguments", ToolCall("c", "scale", f'{{"x": {number}}}'))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nan_and_infinity_for_scalar_parameters_are_malformed_as_in_text(value: float) -> None:
    failed_with("malformed_arguments", ToolCall("c", "add", {"a": value}))
    failed_with("malformed_arguments", ToolCall("c", "keyed", {"q": value}))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    ("name", "wrap"), [("scale", lambda v: {"x": v}), ("anything", lambda v: {"value": [1, {"k": v}]})]
)
def test_nan_and_infinity_in_decoded_arguments_are_malformed(
    value: float, name: str, wrap: Callable[[float], Any]
) -> None:
    failed_with("malformed_arguments", ToolCall("c", name, wrap(value)))


class _Text(str):
    """What an application's own decoder may make of a string."""


class _Number(float):
    """What an application's own decoder may make of a number."""


class _Count(int):
    """What an application's own decoder may make of an integer."""


@pytest.mark.parametrize(
    ("value", "pointer"),
    [
        (OrderedDict(k=float("nan")), "/value/1/k"),
        ((1, float("inf")), "/value/1/1"),
        ([_Number("nan")], "/value/1/0"),
        (_Text("\ud800"), "/value/1"),
        (object(), "/value/1"),
        ({1, 2}, "/value/1"),
        (b"bytes", "/value/1"),
        (datetime.date(2026, 12, 4), "/value/1"),
    ],
    ids=[
        "ordered-dict-nan",
        "tuple-inf",
        "float-subclass-nan",
        "str-subclass-surrogate",
        "object",
        "set",
        "bytes",
        "date",
    ],
)
def test_a_decoded_dict_holding_what_json_cannot_is_malformed_at_its_pointer(value: Any, pointer: str) -> None:
    result = failed_with("malformed_arguments", ToolCall("c", "anything", {"value": [1, value]}))
    assert result.error is not None and f"at {pointer}:" in result.error.message
    failed_with("malformed_arguments", ToolCall("c", "anything", {"value": value}))  # at the top as well


def test_a_decoded_dict_of_subclasses_and_tuples_arrives_as_plain_json_data_of_its_own() -> None:
    sent = {"value": OrderedDict(a=(1, [2], _Text("t")), b=_Number(0.5), c=_Count(3), d=[(4,)])}
    output = succeeded(ToolCall("c", "anything", sent))
    assert output == {"a": [1, [2], "t"], "b": 0.5, "c": 3, "d": [[4]]}
    assert sent == {"value": OrderedDict(a=(1, [2], _Text("t")), b=_Number(0.5), c=_Count(3), d=[(4,)])}
    kinds = {type(output["a"]), type(output["a"][2]), type(output["b"]), type(output["c"]), type(output["d"][0])}
    assert kinds == {list, str, float, int}


def test_arguments_decoded_into_a_dict_subclass_are_read_as_the_object_they_are() -> None:
    assert succeeded(ToolCall("c", "anything", OrderedDict(value=OrderedDict(k=(1, 2))))) == {"k": [1, 2]}
    failed_with("malformed_arguments", ToolCall("c", "anything", OrderedDict(value=float("nan"))))


def test_a_tool_that_changes_a_decoded_dicts_inner_subclass_changes_nothing_of_the_callers() -> None:
    @tool
    def grow(data: dict[str, Any]) -> int:
        """Change what it was given."""
        data["inner"]["k"].append(99)
        data["added"] = True
        return len(data["inner"]["k"])

    sent = {"data": {"inner": OrderedDict(k=[1])}}
    dispatcher = Dispatcher([grow])
    for _ in range(2):  # the first call, then the express path
        assert dispatcher.dispatch(ToolCall("c", "grow", sent)).output == 2
    assert sent == {"data": {"inner": OrderedDict(k=[1])}}


def test_a_value_json_cannot_hold_does_not_slip_past_the_argument_budget() -> None:
    sent = {"value": {"blob": "x" * 100_000, "odd": object()}}
    result = Dispatcher([anything], limits=Limits(max_argument_bytes=1000)).dispatch(ToolCall("c", "anything", sent))
    assert result.error is not None and result.error.code in {"arguments_too_large", "malformed_arguments"}


@pytest.mark.parametrize("value", [2**63, 2**64 + 1, -(2**200), 10**300])
@pytest.mark.parametrize("as_text", [True, False])
def test_integers_beyond_64_bits_stay_exact(value: int, as_text: bool) -> None:
    arguments = f'{{"a": {value}}}' if as_text else {"a": value}
    output = succeeded(ToolCall("c", "add", arguments))
    assert output == value and type(output) is int


def test_integers_beyond_any_float_or_digit_limit_are_refused() -> None:
    failed_with("invalid_arguments", ToolCall("c", "scale", f'{{"x": {10**400}}}'))
    failed_with("invalid_arguments", ToolCall("c", "scale", {"x": -(10**400)}))
    failed_with("malformed_arguments", ToolCall("c", "add", '{"a": ' + "9" * 5000 + "}"))
    result = failed_with("invalid_arguments", ToolCall("c", "keyed", {"q": 10**5000}))
    assert result.error is not None and "too long to show" in result.error.message


@pytest.mark.parametrize("value", ["true", "false", '"1"', "[1]", "null"])
def test_non_integers_for_an_int_are_invalid(value: str) -> None:
    result = failed_with("invalid_arguments", ToolCall("c", "add", f'{{"a": {value}}}'))
    assert result.error is not None and result.error.details is not None
    assert result.error.details["pointer"] == "/a"


@pytest.mark.parametrize(("value", "expected"), [("1.0", 1), ("-0.0", 0), ("1e2", 100), ("2.5e1", 25)])
def test_an_integral_float_for_an_int_is_accepted_as_an_int(value: str, expected: int) -> None:
    received: list[Any] = []

    @tool
    def count(n: int, ns: list[int]) -> int:
        received.append((n, ns))
        return n

    output = succeeded(ToolCall("c", "count", f'{{"n": {value}, "ns": [{value}, 3]}}'), [add, count])
    assert output == expected and type(output) is int
    assert all(type(n) is int and [type(i) for i in ns] == [int, int] for n, ns in received)
    failed_with("invalid_arguments", ToolCall("c", "add", '{"a": 1.5}'))


@pytest.mark.parametrize("depth", [50, 900, 1_000, 5_000, 100_000])
@pytest.mark.parametrize("name", ["anything", "tags", "add", "keyed"])
def test_deep_nesting_never_raises(depth: int, name: str) -> None:
    parameter = {"anything": "value", "tags": "items", "add": "a", "keyed": "q"}[name]
    text = f'{{"{parameter}": ' + "[" * depth + "]" * depth + "}"
    results = run_everywhere(ToolCall("deep", name, text))
    assert codes(results) <= {None, "malformed_arguments", "invalid_arguments"}
    nested: list[Any] = []
    inner = nested
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    results = run_everywhere(ToolCall("deep", name, {parameter: nested}))
    assert codes(results) <= {None, "malformed_arguments", "invalid_arguments"}


@pytest.mark.parametrize("form", ["text", "bytes", "dict"])
@pytest.mark.parametrize("extra", [0, 1])
def test_one_depth_limit_for_every_form_of_arguments_on_every_python(form: str, extra: int) -> None:
    # the arguments object is the first level: MAX_DEPTH - 1 lists inside it is the deepest call that runs
    lists = MAX_DEPTH - 1 + extra
    text = '{"value": ' + "[" * lists + "]" * lists + "}"
    arguments: Any = {"text": text, "bytes": text.encode(), "dict": json.loads(text)}[form]
    results = run_everywhere(ToolCall("deep", "anything", arguments))
    assert codes(results) == ({"malformed_arguments"} if extra else {None}), results
    if extra:
        assert all(result.error and "nested too deeply" in result.error.message for result in results.values())


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": 1, "b": "' + "x" * 100 + '"}',
        b'{"a": 1, "b": "' + b"x" * 100 + b'"}',
        {"a": 1, "b": "x" * 100},
        '{"a": "' + "é" * 40 + '"}',  # 40 characters, 80 bytes of UTF-8
        '{"a": "' + "\ud800" * 30 + '"}',
        {"a": [[[[[[]]]]]] * 20},
    ],
)
def test_arguments_over_max_argument_bytes_are_refused_before_decoding(arguments: Any) -> None:
    call = ToolCall("big", "add", arguments)
    limits = Limits(max_argument_bytes=64)
    for dispatcher in (Dispatcher(TOOLS, limits=limits), Dispatcher(TOOLS, limits=limits, on_event=lambda e: None)):
        result = dispatcher.dispatch(call)
        check(result, call)
        assert result.error is not None and result.error.code == "arguments_too_large"
    (batched,) = Dispatcher(TOOLS, limits=Limits(max_argument_bytes=64)).dispatch_many([call])
    assert batched.error is not None and batched.error.code == "arguments_too_large"


def test_arguments_at_the_limit_pass() -> None:
    text = '{"a": 1, "b": 2}'
    result = Dispatcher(TOOLS, limits=Limits(max_argument_bytes=len(text))).dispatch(ToolCall("c", "add", text))
    assert result.output == 3


@pytest.mark.parametrize(
    ("name", "arguments", "key"),
    [
        ("add", '{"a": 1, "a": 2}', "a"),
        ("add", b'{"a": 1, "b": 2, "a": 1}', "a"),
        ("add", '{"a": 1, "\\u0061": 2}', "a"),  # the same key, spelled with an escape
        ("mapping", '{"data": {"k": "x:y", "k": "z"}}', "k"),
        ("mapping", '{"data": {"outer": [{"k": 1, "k": 1}]}}', "k"),
        ("mapping", '{"data": {"u": "https://a", "u": "https://b"}}', "u"),
        ("mapping", '{"data": {"t": "\\u003a", "t": "\\u003a"}}', "t"),  # colons only as escapes
        ("mapping", '{"data": {}, "data": {"k": 1}}', "data"),
    ],
)
def test_repeated_keys_are_refused(name: str, arguments: str | bytes, key: str) -> None:
    result = failed_with("malformed_arguments", ToolCall("dup", name, arguments))
    assert result.error is not None and f"key {key!r} appears more than once" in result.error.message


@pytest.mark.parametrize(
    "arguments",
    [
        '{"data": {"url": "https://example.com:8080/a:b", "at": "12:30:00"}}',
        '{"data": {"a": {"b": {"c": [{"d": 1}, {"d": 2}]}}, "e": {"d": 3}}}',
        '{"data": {"k\\u003a": "\\u003a", "k": ":"}}',
        '{"data": {"x": "\\\\u003a", "y": ":"}}',
        b'{"data": {"\xc3\xa9:": "\xe2\x80\x94:"}}',
    ],
)
def test_no_repeated_key_is_seen_where_there_is_none(arguments: str | bytes) -> None:
    assert succeeded(ToolCall("c", "mapping", arguments)) == json.loads(arguments)["data"]


@st.composite
def objects_with_a_repeated_key(draw: st.DrawFn) -> tuple[str, str]:
    pairs = draw(st.lists(st.tuples(st.text(max_size=6), json_values), min_size=1, max_size=5))
    key = draw(st.sampled_from([k for k, _ in pairs]))
    pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(json_values)))
    text = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"
    return '{"data": ' + text + "}", key


@SETTINGS
@given(objects_with_a_repeated_key())
def test_any_repeated_key_is_refused(case: tuple[str, str]) -> None:
    arguments, _ = case
    for result in run_everywhere(ToolCall("dup", "mapping", arguments)).values():
        assert result.error is not None and result.error.code == "malformed_arguments"
        assert "appears more than once" in result.error.message


def test_injected_parameters_cannot_be_smuggled_in() -> None:
    for arguments in ('{"q": "x", "key": "mine"}', '{"q": "x", "api_key": "mine"}', {"q": "x", "key": "mine"}):
        result = failed_with("invalid_arguments", ToolCall("c", "keyed", arguments))
        assert result.error is not None and result.error.details is not None
    failed_with("invalid_arguments", ToolCall("c", "stoppable", '{"n": 1, "token": {"cancelled": true}}'))
    assert succeeded(ToolCall("c", "keyed", '{"q": "x"}')) == "x:[redacted]"


@pytest.mark.parametrize("key", ["__class__", "__init__", "__dict__", "__proto__", "constructor", "__getattr__"])
def test_dunder_keys_are_unexpected_arguments_or_plain_data(key: str) -> None:
    result = failed_with("invalid_arguments", ToolCall("c", "add", {"a": 1, key: "x"}))
    assert result.error is not None and result.error.details is not None
    assert result.error.details["pointer"] == f"/{key}"
    failed_with("invalid_arguments", ToolCall("c", "point", json.dumps({"p": {"x": 1, key: "str"}})))
    assert succeeded(ToolCall("c", "mapping", json.dumps({"data": {key: "str"}}))) == {key: "str"}
    assert succeeded(ToolCall("c", "point", '{"p": {"x": 1}}')) == ["Point", 1, 0]


@pytest.mark.parametrize(
    "name",
    [
        "\u0430dd",  # Cyrillic a
        "\uff41\uff44\uff44",  # fullwidth
        "\U0001d41a\U0001d41d\U0001d41d",  # mathematical bold
        "add\u200b",  # zero-width space
        "\u202eadd",  # right-to-left override
        "a\u0308dd",  # combining diaeresis
        "ADD",
        "Add",
        "add ",
        "add\x00",
    ],
)
def test_look_alike_names_are_unknown_tools(name: str) -> None:
    result = failed_with("unknown_tool", ToolCall("c", name, '{"a": 1}'))
    assert result.error is not None and "Available tools: add, " in result.error.message
    assert repr(name) in result.error.message  # quoted with repr: invisible characters show


def test_a_lone_surrogate_as_a_name_is_escaped_in_the_message() -> None:
    result = dispatch(ToolCall("c", "\ud800add", "{}"), TOOLS)
    assert result.error is not None and result.error.code == "unknown_tool"
    assert "\\ud800add" in msgspec.json.encode(result.error.message).decode()


def test_a_tool_name_of_ten_thousand_characters() -> None:
    name = "x" * 5_000 + "add" + "y" * 4_997
    result = failed_with("unknown_tool", ToolCall("c", name, "{}"))
    assert result.error is not None and name not in result.error.message
    assert len(result.error.message) < 200 + 200
    with pytest.raises(ToolNotFound) as raised:
        Dispatcher(TOOLS, unknown_tool="fail").dispatch(ToolCall("c", name, "{}"))
    assert len(str(raised.value)) < 400
    refused = Dispatcher(TOOLS).dispatch(ToolCall("c", name, "{}"), allowed=["add"])
    assert refused.error is not None and len(refused.error.message) < 400


# -- faults ------------------------------------------------------------------------------------


class Custom(BaseException):
    """A BaseException that is neither an interrupt nor an exit."""


def raising(exc: BaseException, *, is_async: bool = False, **options: Any) -> Any:
    name = f"raise_{type(exc).__name__.lower()}"
    if is_async:

        @tool(name=name, **options)
        async def fails_async() -> None:
            raise exc

        return fails_async

    @tool(name=name, **options)
    def fails() -> None:
        raise exc

    return fails


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("options", [{}, {"timeout": 5.0}])
@pytest.mark.parametrize(
    "exc", [ValueError(INTERNAL), KeyError(INTERNAL), RuntimeError(INTERNAL), GeneratorExit(INTERNAL), Custom(INTERNAL)]
)
def test_a_tool_that_raises_fails_alone_and_leaks_nothing(
    exc: BaseException, is_async: bool, options: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    broken = raising(exc, is_async=is_async, **options)
    result = failed_with("tool_error", ToolCall("c", broken.name), [add, broken])
    assert result.error is not None and result.error.details is not None
    assert result.error.details["error_id"] in result.error.message
    assert INTERNAL in caplog.text  # the detail goes to the log instead


def test_a_tool_error_message_reaches_the_model_with_secrets_redacted() -> None:
    @tool
    def refuse(*, key: Annotated[str, Injected("api_key", secret=True)]) -> None:
        raise ToolError(f"quota exceeded for {key}", code="quota")

    result = failed_with("quota", ToolCall("c", "refuse"), [add, refuse])
    assert result.error is not None and result.error.message == "quota exceeded for [redacted]"


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("is_async", [False, True])
def test_keyboard_interrupt_and_system_exit_propagate(exc_type: type[BaseException], is_async: bool) -> None:
    broken = raising(exc_type("stop"), is_async=is_async)
    call = ToolCall("c", broken.name)
    box = Toolbox([add, broken])
    runs: list[Callable[[], Any]] = [
        lambda: dispatch(call, box),
        lambda: asyncio.run(adispatch(call, box)),
        lambda: Dispatcher(box).dispatch(call),
        lambda: Dispatcher(box, on_event=lambda event: None).dispatch(call),
        lambda: Dispatcher(box).dispatch_many([call]),
        lambda: Dispatcher(box).dispatch_many([COMPANION, call, COMPANION]),
    ]
    for run in runs:
        with pytest.raises(exc_type):
            run()
    wait_for_threads()


@pytest.mark.parametrize(
    "exc",
    [
        SystemExit(3),
        KeyboardInterrupt(),
        GeneratorExit(INTERNAL),
        Custom(INTERNAL),
        ValueError(INTERNAL),
        StopIteration(INTERNAL),  # an asyncio future refuses to hold it: the call waited forever
    ],
)
def test_a_tool_on_a_thread_pool_executor_raises_as_one_run_inline(exc: BaseException) -> None:
    # what the pool's thread raised is the tool's own, not the executor's failure: an exit
    # propagates, anything else is the call's tool_error (first call and later ones alike)
    broken = raising(exc)
    with ThreadPoolExecutor(1) as pool:
        dispatcher = Dispatcher([add, broken], executor=pool)
        for call_id in ("first", "later"):
            call = ToolCall(call_id, broken.name)
            if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                with pytest.raises(type(exc)):
                    dispatcher.dispatch(call)
                with pytest.raises(type(exc)):
                    asyncio.run(dispatcher.adispatch(call))
            else:
                for result in (dispatcher.dispatch(call), asyncio.run(dispatcher.adispatch(call))):
                    assert (result.call_id, result.status, result.error and result.error.code) == (
                        call_id,
                        "failed",
                        "tool_error",
                    )


@pytest.mark.parametrize("options", [{"timeout": 30.0}, {}])
def test_an_exit_raised_as_the_runs_cancellation_reaches_the_tool_propagates(options: dict[str, Any]) -> None:
    # the tool handles the run's cancellation by exiting: the exit reaches the caller, whatever the run's state
    started = threading.Event()

    @tool(**options)
    async def exits_when_cancelled() -> None:
        """Wait; exit when the run is cancelled."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise SystemExit("cleanup decided to exit") from None

    for entry in ("dispatch", "adispatch"):
        started.clear()
        dispatcher = Dispatcher([exits_when_cancelled])
        canceller = threading.Thread(target=lambda d=dispatcher: started.wait(5) and d.cancel())
        canceller.start()
        call = ToolCall(entry, "exits_when_cancelled")
        with pytest.raises(SystemExit):
            dispatcher.dispatch(call) if entry == "dispatch" else asyncio.run(dispatcher.adispatch(call))
        canceller.join(5)


@pytest.mark.parametrize("entry", ["dispatch", "adispatch"])
def test_an_exit_a_stray_thread_raises_after_its_call_ended_is_logged(
    entry: str, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def overstays() -> None:
        """Outlive the call's timeout, then exit."""
        release.wait(5)
        raise SystemExit(4)

    dispatcher, call = Dispatcher([overstays]), ToolCall("c", "overstays")

    async def in_a_loop_that_stays_open() -> ToolResult:
        result = await dispatcher.adispatch(call)
        release.set()
        await asyncio.sleep(0.3)  # the thread's answer reaches this loop
        return result

    result = dispatcher.dispatch(call) if entry == "dispatch" else asyncio.run(in_a_loop_that_stays_open())
    assert result.error is not None and result.error.code == "timeout"
    release.set()
    wait_for_threads()
    logged = [r for r in caplog.records if "tool 'overstays' raised SystemExit after its call ended" in r.getMessage()]
    assert len(logged) == 1


@pytest.mark.parametrize("executor", ["inline", "thread_pool"])
def test_an_exit_raised_after_the_run_cancelled_the_call_is_logged(
    executor: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the call ends cancelled at once; the tool's thread exits a moment later, with nobody to hear it
    steps = {"started": threading.Event(), "cancelled": threading.Event()}

    @tool
    def exits_late() -> None:
        """Exit a moment after the run is cancelled."""
        steps["started"].set()
        steps["cancelled"].wait(5)
        time.sleep(0.1)
        raise SystemExit(5)

    with ThreadPoolExecutor(1) as pool:
        dispatcher = Dispatcher([exits_late], executor=pool if executor == "thread_pool" else None)

        def cancel() -> None:
            steps["started"].wait(5)
            dispatcher.cancel()
            steps["cancelled"].set()

        canceller = threading.Thread(target=cancel)
        canceller.start()
        result = asyncio.run(dispatcher.adispatch(ToolCall("c", "exits_late")))
        canceller.join(5)
    wait_for_threads()
    assert result.error is not None and result.error.code == "cancelled"
    assert "tool 'exits_late' raised SystemExit after its call ended" in caplog.text


class _BrokenPool(BrokenExecutor):
    """What a tool's own inner pool may raise; its text cannot be shown."""

    def __init__(self, raised: BaseException):
        super().__init__()
        self.raised = raised

    def __str__(self) -> str:
        raise self.raised


@pytest.mark.parametrize("raised", [RuntimeError("no text"), GeneratorExit()])
def test_a_thread_pool_tool_raising_an_exception_without_text_gets_its_result(raised: BaseException) -> None:
    @tool
    def inner_pool_broke() -> None:
        """Fail as a broken pool does."""
        raise _BrokenPool(raised)

    with ThreadPoolExecutor(1) as pool:
        dispatcher = Dispatcher([inner_pool_broke], executor=pool)
        watched = run_in_thread(lambda: dispatcher.dispatch(ToolCall("c", "inner_pool_broke")))
        assert watched.finished  # the call waited forever
        result = watched.value()
    assert result.call_id == "c" and result.error is not None


def test_a_cancelled_error_raised_by_a_tool_is_cancellation() -> None:
    broken = raising(asyncio.CancelledError(), is_async=True)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(adispatch(ToolCall("c", broken.name), [broken]))


class Release:
    """Lets hanging tools finish when a test is over, so no thread outlives it."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __enter__(self) -> threading.Event:
        return self.event

    def __exit__(self, *exc: object) -> None:
        self.event.set()
        wait_for_threads()


def wait_for_threads(timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not [t for t in threading.enumerate() if t.name.startswith("tinytools:")]:  # running a tool
            return
        time.sleep(0.01)
    raise AssertionError(f"threads left running: {threading.enumerate()}")


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_tool_that_hangs_past_its_timeout(idempotent: bool) -> None:
    with Release() as release:
        options = {"timeout": 0.05, "idempotent": idempotent, "retries": 1 if idempotent else 0}

        @tool(**options)
        def hang() -> str:
            release.wait(10)
            return INTERNAL

        @tool(**options)
        async def ahang() -> str:
            await asyncio.sleep(10)
            return INTERNAL

        for hanging in (hang, ahang):
            call = ToolCall("c", hanging.name)
            for path, result in only_code(call, [add, hanging]).items():
                assert result.error is not None and result.error.code == "timeout", path
                assert result.status == ("failed" if idempotent else "outcome_unknown"), path


class Opaque:
    def __repr__(self) -> str:
        raise RuntimeError(INTERNAL)


class Holder(enum.Enum):
    ITEM = object()


def deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    inner = root
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return root


@pytest.mark.parametrize(
    "make",
    [
        object,
        Opaque,
        lambda: {(1, 2): "tuple key"},
        lambda: {"k": {object()}},
        lambda: Holder.ITEM,
        lambda: (i for i in range(3)),
        lambda: 10**5000,
        lambda: "\ud800",
        lambda: deep_list(100_000),
    ],
)
def test_outputs_that_cannot_be_encoded_fail_cleanly(make: Callable[[], Any]) -> None:
    @tool
    def produce() -> Any:
        return make()

    result = failed_with("invalid_output", ToolCall("c", "produce"), [add, produce])
    assert result.error is not None and "cannot be encoded as JSON" in result.error.message


def test_deep_outputs_that_cannot_be_scrubbed_are_withheld() -> None:
    @tool
    def produce(*, key: Annotated[str, Injected("api_key", secret=True)]) -> Any:
        return [deep_list(sys.getrecursionlimit()), key]

    results = run_everywhere(ToolCall("c", "produce"), [add, produce])
    assert codes(results) <= {"redaction_failed", "invalid_output"}
    assert all(result.status != "succeeded" for result in results.values())


def test_huge_outputs_go_to_the_store_or_fail_never_truncated() -> None:
    huge = "é" * 3_000_000

    @tool
    def produce() -> str:
        return huge

    stored = Dispatcher([produce], max_inline_output_bytes=1000, artifacts=MemoryArtifactStore())
    result = stored.dispatch(ToolCall("c", "produce"))
    check(result, ToolCall("c", "produce"))
    (ref,) = result.artifacts
    assert ref.size == len(msgspec.json.encode(huge))
    assert stored.artifacts is not None and msgspec.json.decode(stored.artifacts.get(ref.key)) == huge
    assert len(result.text().encode()) < 1000 + 300
    refused = Dispatcher([produce], max_inline_output_bytes=1000).dispatch(ToolCall("c", "produce"))
    assert refused.error is not None and refused.error.code == "output_too_large"
    by_default = Dispatcher([produce]).dispatch(ToolCall("c", "produce"))  # the default budget, no store
    assert by_default.error is not None and by_default.error.code == "output_too_large"
    assert "max_inline_output_bytes" in by_default.text() and len(by_default.text()) < 1000
    unlimited = Dispatcher([produce], max_inline_output_bytes=None).dispatch(ToolCall("c", "produce"))
    assert unlimited.output == huge  # no budget, no cut


def test_a_tool_that_mutates_its_arguments_changes_nothing_outside() -> None:
    seen: list[list[str]] = []

    @tool
    def grab(items: list[str], extra: dict[str, list[str]]) -> int:
        seen.append(list(items))
        items.append("mutated")
        extra["k"].append("mutated")
        extra["new"] = []
        return len(items)

    shared = {"items": ["a"], "extra": {"k": ["b"]}}
    before = json.dumps(shared)
    calls = [ToolCall(f"c{i}", "grab", shared) for i in range(4)]
    results = Dispatcher([grab], max_concurrency=4).dispatch_many(calls)
    assert [r.output for r in results] == [2, 2, 2, 2]
    dispatch(calls[0], [grab])
    asyncio.run(adispatch(calls[0], [grab]))
    assert json.dumps(shared) == before
    assert seen == [["a"]] * 6


@pytest.mark.parametrize("as_text", [True, False])
def test_a_retry_sees_the_arguments_as_sent(as_text: bool) -> None:
    seen: list[list[str]] = []

    @tool(idempotent=True, retries=2)
    def flaky(items: list[str]) -> list[str]:
        seen.append(list(items))
        items.append("mutated")
        if len(seen) < 3:
            raise RetryableError("again")
        return items

    arguments = '{"items": ["a"]}' if as_text else {"items": ["a"]}
    result = Dispatcher([flaky]).dispatch(ToolCall("c", "flaky", arguments))
    assert result.output == ["a", "mutated"]
    assert seen == [["a"], ["a"], ["a"]]


class Raises:
    def __init__(self, where: str, is_async: bool) -> None:
        self.where = where
        self.is_async = is_async

    def fail(self) -> Any:
        if not self.is_async:
            raise RuntimeError(INTERNAL)

        async def later() -> None:
            raise RuntimeError(INTERNAL)

        return later()

    def before_tool(self, call: ToolCall, tool: Any) -> Any:
        return self.fail() if self.where == "before" and call.id != "companion" else None

    def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> Any:
        return self.fail() if self.where == "after" and call.id != "companion" else None


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("is_async", [False, True])
def test_middleware_that_raises_fails_that_call_alone(where: str, is_async: bool) -> None:
    call = ToolCall("c", "add", '{"a": 1}')
    results = run_everywhere(call, middleware=[Raises(where, is_async)])
    for path, result in results.items():
        if path in ("dispatch", "adispatch"):
            continue  # no middleware on these paths
        assert result.error is not None and result.error.code == "middleware_error"


@pytest.mark.parametrize("kind", ["sync", "async", "full queue"])
def test_event_sinks_that_raise_change_no_result(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    def sync_sink(event: ToolEvent) -> None:
        raise RuntimeError(INTERNAL)

    async def async_sink(event: ToolEvent) -> None:
        raise RuntimeError(INTERNAL)

    async def main() -> list[ToolResult]:
        sink: Any = {"sync": sync_sink, "async": async_sink, "full queue": asyncio.Queue(maxsize=1)}[kind]
        dispatcher = Dispatcher([add, raising(ValueError(INTERNAL))], on_event=sink)
        calls = [ToolCall(f"c{i}", "add", {"a": i}) for i in range(5)] + [ToolCall("x", "raise_valueerror")]
        return await dispatcher.adispatch_many(calls)

    results = asyncio.run(main())
    assert [r.output for r in results[:5]] == [0, 1, 2, 3, 4]
    assert results[5].error is not None and results[5].error.code == "tool_error"
    for result in results:
        check(result, ToolCall(result.call_id, result.name))
    assert "event sink failed" in caplog.text


def test_a_redaction_hook_that_raises_withholds_that_result_alone() -> None:
    def hook(text: str) -> str:
        if "42" in text:
            raise RuntimeError(INTERNAL)
        return text

    calls = [ToolCall("a", "tags", {"items": ["x42"]}), ToolCall("b", "tags", {"items": ["ok"]})]
    for results in (
        Dispatcher(TOOLS, redact=hook).dispatch_many(calls),
        [Dispatcher(TOOLS, redact=hook).dispatch(c) for c in calls],
    ):
        assert results[0].status == "outcome_unknown" and results[0].error is not None
        assert results[0].error.code == "redaction_failed" and "x42" not in results[0].to_json().decode()
        assert results[1].output == ["ok"]


def test_no_thread_or_task_is_left_after_faults() -> None:
    async def main() -> set[asyncio.Task[Any]]:
        @tool(timeout=0.05)
        async def slow() -> None:
            await asyncio.sleep(10)

        broken = raising(ValueError(INTERNAL), is_async=True)
        dispatcher = Dispatcher([add, slow, broken], max_concurrency=4)
        calls = [ToolCall("a", "slow"), ToolCall("b", broken.name), ToolCall("c", "add", {"a": 1})]
        results = await dispatcher.adispatch_many(calls)
        assert [r.error.code if r.error else None for r in results] == ["timeout", "tool_error", None]
        await asyncio.sleep(0)
        return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}

    assert asyncio.run(main()) == set()
    wait_for_threads()


def _until_idle(threads: Any, timeout: float = 10.0) -> None:
    """Wait (up to ``timeout`` seconds) until a pool of tool threads has no work running or waiting."""
    deadline = time.monotonic() + timeout
    while threads.busy and time.monotonic() < deadline:
        time.sleep(0.01)


def test_work_whose_caller_stopped_waiting_before_a_thread_took_it_leaves_no_stray() -> None:
    # a call's wait can end (its timeout, the run's cancellation) before any pool thread has picked
    # its work up: the work never runs, so it is no stray, and the count goes back to zero
    from tinytools._run.threads import ToolThreads

    threads = ToolThreads()
    ran = []
    for _ in range(200):
        future = threads.submit(ran.append, 1, name="never_started")
        future.cancel()  # as the caller's timeout does, before the new thread gets to it (usually)
        threads.abandon(future)
    _until_idle(threads)
    assert threads.busy == 0
    assert threads.strays == 0  # each abandoned work either ran (and ended) or never ran


def test_work_a_loop_stopped_waiting_for_before_a_thread_took_it_never_runs() -> None:
    # from async code a call hands its tool to a pool thread that answers the loop; when the call
    # ends first (its timeout, the run's cancellation) and no thread has taken the work yet, the
    # tool must not start after its call was reported ended
    from tinytools._run.threads import ToolThreads

    threads = ToolThreads()
    ran: list[int] = []
    loop = asyncio.new_event_loop()
    try:
        for n in range(200):
            key = threads.submit_to(loop.create_future(), ran.append, n, name="ended_first")
            threads.abandon(key)  # the call ended before the new thread got to its work (usually)
        _until_idle(threads)
    finally:
        loop.close()
    assert threads.busy == 0 and threads.strays == 0
    assert len(ran) < 200  # work a thread took first ran; the rest never started


FORKED = """
import asyncio, os, signal
import tinytools

@tinytools.tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

@tinytools.tool(timeout=5)
def timed_add(a: int, b: int) -> int:
    '''Add, under a timeout (a sync caller runs it on a pool thread).'''
    return a + b

box = tinytools.Toolbox([add, timed_add])
assert asyncio.run(tinytools.adispatch(tinytools.ToolCall("p", "add", '{"a": 1, "b": 2}'), box)).output == 3
for name in ("add", "timed_add"):
    child = os.fork()
    if child == 0:
        signal.alarm(10)  # a child whose call waits on a thread that is not there dies here
        call = tinytools.ToolCall("c", name, '{"a": 2, "b": 3}')
        result = asyncio.run(tinytools.adispatch(call, box)) if name == "add" else tinytools.dispatch(call, box)
        os._exit(0 if result.output == 5 else 1)
    _, status = os.waitpid(child, 0)
    print(name, os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_process_forked_after_the_pool_ran_calls_runs_its_own_threads() -> None:
    # the child has only the forking thread: the parent's idle pool threads are not there to take work
    import subprocess

    ran = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", FORKED],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.stdout.split() == ["add", "0", "timed_add", "0"], ran.stderr


FORKED_WITH_PROCESSES = """
import os, signal
import tinytools
from tests.executors.executor_tools import where_process

box = tinytools.Toolbox([where_process])
call = tinytools.ToolCall("p", "where_process", '{"n": 1}')
assert tinytools.dispatch(call, box).status == "succeeded"  # the shared process pool is running
child = os.fork()
if child == 0:
    signal.alarm(20)  # a child waiting on the parent's pool dies here
    result = tinytools.dispatch(tinytools.ToolCall("c", "where_process", '{"n": 1}'), box)
    os._exit(0 if result.status == "succeeded" or result.error.code == "executor_unavailable" else 1)
_, status = os.waitpid(child, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_process_forked_after_the_shared_process_pool_ran_ends_its_process_calls() -> None:
    # the parent's pool (its workers, its manager thread) is not the child's: the child's call
    # ends with a result, refused where the workers start by the parent's forkserver, never waits on
    import subprocess
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    ran = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", FORKED_WITH_PROCESSES],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert ran.stdout.split() == ["0"], ran.stdout + ran.stderr


def test_calls_that_end_before_a_thread_takes_their_work_leave_no_strays() -> None:
    # through the pipeline (an event sink and a `Progress` parameter), calls whose wait ends before
    # a pool thread can start their work: a timeout shorter than a thread's start, or the caller's
    # task cancelled; the process's count of strays comes back to where it was
    import tinytools

    @tool(timeout=0.001)
    def tick(x: int, progress: tinytools.Progress) -> int:
        """Answer at once."""
        return x

    @tool
    def tock(x: int, progress: tinytools.Progress) -> int:
        """Answer at once, with no timeout."""
        return x

    before = tinytools.strays().threads
    dispatcher = Dispatcher([tick, tock], on_event=lambda event: None)

    async def rounds() -> None:
        for _ in range(5):
            calls = [ToolCall(f"c{n}", "tick", '{"x": 1}') for n in range(200)]
            results = await asyncio.gather(*(dispatcher.adispatch(call) for call in calls))
            assert [result.call_id for result in results] == [call.id for call in calls]
            for n in range(100):
                task = asyncio.ensure_future(dispatcher.adispatch(ToolCall(f"t{n}", "tock", '{"x": 1}')))
                for _ in range(3):
                    await asyncio.sleep(0)  # the call hands its work over, then its task is cancelled
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    asyncio.run(rounds())
    deadline = time.monotonic() + 10
    while tinytools.strays().threads > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tinytools.strays().threads <= before  # (an earlier test's stray may have ended meanwhile)
