from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
from typing_extensions import TypedDict

import tinytools
from tests.run.paths import PATHS, options, run_call
from tinytools import Dispatcher, Param, Toolbox, ToolCall, ToolError, ToolResult, adispatch, dispatch, tool


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c", days: Annotated[int, Param(ge=1, le=14)] = 1) -> dict:
    """Look up the weather."""
    return {"city": city, "unit": unit, "days": days}


@tool
async def slow_echo(text: str) -> str:
    await asyncio.sleep(0)
    return text


@tool
def leaky() -> None:
    raise RuntimeError("database password is hunter2")


@tool
def polite() -> None:
    raise ToolError("the city is closed today", code="city_closed")


class Opaque:
    pass


@tool
def unencodable() -> Any:
    return Opaque()


TOOLS = Toolbox([get_weather, slow_echo, leaky, polite, unencodable])


def test_succeeds_with_string_bytes_and_dict_arguments() -> None:
    for arguments in ('{"city": "Paris"}', b'{"city": "Paris"}', {"city": "Paris"}):
        result = dispatch(ToolCall("c1", "get_weather", arguments), TOOLS)
        assert result.status == "succeeded"
        assert result.call_id == "c1"
        assert result.output == {"city": "Paris", "unit": "c", "days": 1}
        assert result.error is None and not result.is_error
        assert result.elapsed > 0


def test_dict_arguments_are_not_mutated() -> None:
    arguments = {"city": "Paris", "days": 2.0}
    dispatch(ToolCall("c1", "get_weather", arguments), TOOLS)
    assert arguments == {"city": "Paris", "days": 2.0}
    assert type(arguments["days"]) is float


def test_unknown_tool_lists_available_tools() -> None:
    result = dispatch(ToolCall("c2", "get_wether", '{"city": "Paris"}'), TOOLS)
    assert result.status == "failed"
    assert result.call_id == "c2"
    assert result.error is not None and result.error.code == "unknown_tool"
    assert "'get_wether'" in result.error.message
    for name in TOOLS.names:
        assert name in result.error.message


def test_unknown_tool_echo_is_bounded() -> None:
    result = dispatch(ToolCall("c2", "x" * 10_000, "{}"), TOOLS)
    assert result.error is not None
    assert len(result.error.message) < 400


@pytest.mark.parametrize("arguments", ['{"city": "Paris"', "not json", "", b"\xff\xfe", '{"city": "Paris"} trailing'])
def test_malformed_arguments_are_never_replaced(arguments: Any) -> None:
    calls: list[Any] = []

    @tool
    def record(city: str = "default") -> None:
        calls.append(city)

    result = dispatch(ToolCall("c3", "record", arguments), [record])
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "malformed_arguments"
    assert "record" in result.error.message and "JSON" in result.error.message
    assert calls == []


def test_invalid_arguments_say_where_and_what() -> None:
    result = dispatch(ToolCall("c4", "get_weather", '{"city": "Paris", "unit": "kelvin"}'), TOOLS)
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.details == {"pointer": "/unit", "keyword": "enum", "parameter": "unit"}
    message = result.error.message
    assert "get_weather" in message and "'unit'" in message and "/unit" in message
    assert '"kelvin"' in message
    assert '"enum":["c","f"]' in message  # the argument's schema fragment
    assert "http" not in message and "data." not in message


@pytest.mark.parametrize(
    ("arguments", "pointer", "keyword"),
    [
        ("{}", "", "required"),
        ('{"city": 1}', "/city", "type"),
        ('{"city": "P", "days": 15}', "/days", "maximum"),
        ('{"city": "P", "days": 1.5}', "/days", "type"),
        ('{"city": "P", "extra": 1}', "/extra", "additionalProperties"),
        ("[1, 2]", "", "type"),
        ('"just a string"', "", "type"),
    ],
)
def test_invalid_argument_pointers(arguments: str, pointer: str, keyword: str) -> None:
    result = dispatch(ToolCall("c5", "get_weather", arguments), TOOLS)
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.details is not None
    assert (result.error.details["pointer"], result.error.details["keyword"]) == (pointer, keyword)


def test_null_for_optional_argument_gets_default(define) -> None:
    module = define("@tool\ndef f(x: Optional[int] = None) -> Any:\n    return {'x': x}\n")
    assert dispatch(ToolCall("1", "f", '{"x": null}'), [module.f]).output == {"x": None}
    assert dispatch(ToolCall("1", "f", "{}"), [module.f]).output == {"x": None}


def test_tool_error_text_reaches_the_model() -> None:
    result = dispatch(ToolCall("c6", "polite", "{}"), TOOLS)
    assert result.status == "failed"
    assert result.error is not None
    assert (result.error.code, result.error.message) == ("city_closed", "the city is closed today")


def test_unexpected_exception_text_stays_out(caplog: pytest.LogCaptureFixture) -> None:
    result = dispatch(ToolCall("c7", "leaky", "{}"), TOOLS)
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "tool_error"
    assert "hunter2" not in msgspec.json.encode(result).decode()
    assert "RuntimeError" not in result.error.message
    assert result.error.details is not None
    error_id = result.error.details["error_id"]
    assert error_id in result.error.message
    assert any(error_id in record.getMessage() and record.exc_info for record in caplog.records)


def test_unencodable_output_fails_cleanly() -> None:
    result = dispatch(ToolCall("c8", "unencodable", "{}"), TOOLS)
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "invalid_output"
    assert "Opaque" in result.error.message


def test_an_output_that_only_looks_like_a_dataclass_fails_cleanly() -> None:
    """A mock made from a dataclass names it as its ``__class__``: it is not one, and not encodable."""
    import dataclasses
    from unittest import mock

    @dataclasses.dataclass
    class Point:
        x: int

    @tool
    def get(n: int) -> dict[str, Any]:
        """Return a point."""
        return {"p": mock.Mock(spec=Point)}

    for attempt in range(2):  # the first call takes the pipeline, the next the express path
        result = dispatch(ToolCall(f"c{attempt}", "get", '{"n": 1}'), get)
        assert result.status == "failed", result
        assert result.error is not None and result.error.code == "invalid_output"
        assert "'Mock' at /p" in result.error.message


def test_a_class_whose_module_is_not_a_name_is_read_like_any_other() -> None:
    """``__module__`` is whatever the class body set: a list there must not break a lookup by module."""

    class Odd:
        __module__ = ["elsewhere"]  # type: ignore[assignment]  # noqa: RUF012

    def made(n: int) -> Any:
        """Make one."""
        return Odd()

    box = Toolbox([tool(made)], encoders={object: lambda value: "odd"})
    assert dispatch(ToolCall("c1", "made", '{"n": 1}'), box).output == "odd"

    def takes(value: Odd) -> int:
        """Take one."""
        return 1

    with pytest.raises(tinytools.ToolDefinitionError, match="no JSON Schema for type 'Odd'"):
        tool(takes)


def test_async_tool_from_sync_dispatch() -> None:
    assert dispatch(ToolCall("c9", "slow_echo", '{"text": "hi"}'), TOOLS).output == "hi"


def test_sync_dispatch_of_async_tool_inside_running_loop() -> None:
    async def main() -> ToolResult:
        return dispatch(ToolCall("c9", "slow_echo", '{"text": "hi"}'), TOOLS)

    assert asyncio.run(main()).output == "hi"


def test_adispatch_runs_sync_and_async_tools() -> None:
    async def main() -> list[ToolResult]:
        return [
            await adispatch(ToolCall("a", "slow_echo", '{"text": "x"}'), TOOLS),
            await adispatch(ToolCall("b", "get_weather", '{"city": "Oslo"}'), TOOLS),
            await adispatch(ToolCall("c", "nope", "{}"), TOOLS),
        ]

    results = asyncio.run(main())
    assert [r.call_id for r in results] == ["a", "b", "c"]
    assert [r.status for r in results] == ["succeeded", "succeeded", "failed"]


def test_dataclass_output_becomes_json_data(define) -> None:
    module = define(
        "@dataclasses.dataclass\nclass Out:\n    a: int\n    when: datetime.date\n"
        "@tool\ndef f() -> Out:\n    return Out(1, datetime.date(2024, 1, 2))\n"
    )
    result = dispatch(ToolCall("1", "f", "{}"), [module.f])
    assert result.output == {"a": 1, "when": "2024-01-02"}
    assert module.f.output_schema == {
        "$ref": "#/$defs/Out",
        "$defs": {
            "Out": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "when": {"type": "string", "format": "date"},
                },
                "required": ["a", "when"],
                "additionalProperties": False,
            }
        },
    }


def test_result_encodes_and_round_trips() -> None:
    for call in (
        ToolCall("1", "get_weather", '{"city": "Paris"}'),
        ToolCall("2", "get_weather", "{"),
        ToolCall("3", "leaky", "{}"),
    ):
        result = dispatch(call, TOOLS)
        encoded = result.to_json()
        assert json.loads(encoded)["call_id"] == call.id
        assert msgspec.json.decode(encoded, type=ToolResult) == result


def test_result_text() -> None:
    ok = dispatch(ToolCall("1", "get_weather", '{"city": "Paris"}'), TOOLS)
    assert json.loads(ok.text()) == {"city": "Paris", "unit": "c", "days": 1}
    bad = dispatch(ToolCall("2", "nope", "{}"), TOOLS)
    assert bad.error is not None and bad.text() == "Error: " + bad.error.message


def test_a_plain_list_of_tools_works() -> None:
    assert dispatch(ToolCall("1", "get_weather", '{"city": "Rome"}'), [get_weather]).status == "succeeded"


@pytest.mark.parametrize(
    "arguments",
    ['{"city": "Oslo", "days": 99}', '{"city": 1}', '{"city": "Oslo", "city": "Rome"}', "{", {"city": 2}],
    ids=["invalid", "wrong type", "repeated key", "malformed", "decoded invalid"],
)
@pytest.mark.parametrize("way", ["dispatch", "Dispatcher with a sink"])
def test_a_bad_call_leaves_no_garbage_cycles(arguments: Any, way: str) -> None:
    """Errors are built and passed along without reference cycles, so bad calls never wait for the GC.

    Measured in a process of its own: the collector is the process's, and other tests' threads
    (servers, timed-out tools) make garbage of their own while it runs.
    """
    import subprocess
    import sys

    from tests.providers.servers import server_env

    code = "import json, sys; from tests.run.test_dispatch import _leftovers; "
    code += "print(json.dumps(_leftovers(json.loads(sys.argv[1]), sys.argv[2])))"
    env = {**os.environ, **server_env()}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(arguments), way], env=env, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert json.loads(done.stdout) == []


def _leftovers(arguments: Any, way: str) -> list[str]:
    """What 50 bad calls leave for the collector: each object a call made, described."""
    import gc

    from tinytools import Dispatcher

    toolbox = Toolbox([get_weather])
    run = (
        (lambda call: dispatch(call, toolbox))
        if way == "dispatch"
        else Dispatcher(toolbox, on_event=lambda event: None).dispatch  # the general path: bind raises
    )
    run(ToolCall("c0", "get_weather", arguments))  # builds the reader, compiles, starts the loop machinery
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # keep what a collection finds, to look at it
    try:
        for i in range(50):
            assert run(ToolCall(f"c{i}", "get_weather", arguments)).status == "failed"
        gc.collect()
        return [f"{type(item).__qualname__}: {_where(item)}" for item in gc.garbage if _of_a_call(item)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


_PACKAGE = str(Path(tinytools.__file__).resolve().parent)
"""Where tinytools' own code is (a checkout's folder may be named tinytools too, with other code in it)."""


def _where(item: Any) -> str:
    """Where a leftover object comes from, for the failure message."""
    import types

    if isinstance(item, BaseException):
        return f"{item!r:.80} raised at {_where(item.__traceback__)}"
    if isinstance(item, types.TracebackType):
        while item.tb_next is not None:
            item = item.tb_next
        return _where(item.tb_frame)
    if isinstance(item, types.FrameType):
        return f"{item.f_code.co_filename}:{item.f_lineno} in {item.f_code.co_name}"
    return f"{item!r:.120}"


def _of_a_call(item: Any) -> bool:
    """Whether a collected object is one a call makes: a result, an error, its traceback or frame."""
    import types

    if isinstance(item, BaseException):  # one a call raised: its type or its frames are tinytools'
        return type(item).__module__.startswith("tinytools") or _of_a_call(item.__traceback__)
    if isinstance(item, types.TracebackType):
        return _of_a_call(item.tb_frame) or _of_a_call(item.tb_next)
    if isinstance(item, types.FrameType):  # a server thread's asyncio or uvicorn frames are not a call's
        return item.f_code.co_filename.startswith(_PACKAGE)
    return type(item).__module__.startswith("tinytools")


# -- the typed way and the general way, sync and async, on every entry point ---------------------


class _Point(TypedDict):
    x: int
    y: int


def _shapes(prefix: str) -> list[Any]:
    """Tools of the two ways a call is read: flat arguments (typed) and a nested object with a
    keyword-only parameter (general, bound by keyword), each written sync and async."""

    def flat(a: int, b: str = "b", /, c: float = 0.5) -> str:
        return f"{a}|{b}|{c}"

    async def aflat(a: int, b: str = "b", /, c: float = 0.5) -> str:
        return f"{a}|{b}|{c}"

    def nested(point: _Point, *, scale: int = 1, label: str = "p") -> str:
        return f"{label}:{point['x'] * scale},{point['y'] * scale}"

    async def anested(point: _Point, *, scale: int = 1, label: str = "p") -> str:
        return f"{label}:{point['x'] * scale},{point['y'] * scale}"

    return [tool(fn, name=f"{prefix}{fn.__name__}", description="A shape.") for fn in (flat, aflat, nested, anested)]


_SHAPE_CALLS = [
    ("flat", {"a": 1}, "1|b|0.5"),
    ("flat", {"a": 2, "b": "x", "c": 1.5}, "2|x|1.5"),
    ("nested", {"point": {"x": 1, "y": 2}}, "p:1,2"),
    ("nested", {"point": {"x": 1, "y": 2}, "scale": 3, "label": "q"}, "q:3,6"),
]


@pytest.mark.parametrize(("entry", "variant"), PATHS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_both_ways_of_reading_reach_the_function_alike(entry: str, variant: str, is_async: bool) -> None:
    tools = Toolbox(_shapes("t_"))  # kept across calls: a call after the first takes the express path
    dispatcher = None if entry in ("dispatch", "adispatch") else Dispatcher(tools, **options(variant))
    for shape, arguments, expected in _SHAPE_CALLS:
        if variant == "strict" and len(arguments) < 3:
            continue  # strict mode asks for every argument (tested on its own)
        name = f"t_{'a' if is_async else ''}{shape}"
        for form in (arguments, json.dumps(arguments), json.dumps(arguments).encode()):
            later = options(variant) if dispatcher is None else {}  # a module entry's first call, or a later one
            result = run_call(entry, tools, ToolCall("c1", name, form), dispatcher=dispatcher, **later)
            assert (result.call_id, result.status, result.output) == ("c1", "succeeded", expected), (form, result)
