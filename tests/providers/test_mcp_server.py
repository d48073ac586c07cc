"""The MCP server, driven by the official mcp client: over stdio as a subprocess, and in process.

Both protocol eras list the tools with their schemas and annotations, return structured content
and text, mark failures with ``isError`` and forward progress. A conversion that raises is a
tool result marked as an error whose text never reaches the client, and progress goes only to
the session whose call reported it, even when two sessions use the same request ids.
"""

from __future__ import annotations

import sys
import threading
import time
from functools import partial
from typing import Annotated, Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.faults import FAULTS, SECRET
from tinytools import Dispatcher, Injected, Invocation, Limits, Progress, RunContext, Stores, Toolbox, tool
from tinytools.providers import mcp

from .servers import MODEL_INPUT_SERVER, TOOLS_SERVER, WATCHDOG, server_env


async def _session(mode: str) -> dict[str, Any]:
    """Start the server, list its tools, make a few calls; return what came back."""
    parameters = StdioServerParameters(command=sys.executable, args=[str(TOOLS_SERVER)])
    async with Client(parameters, mode=mode, read_timeout_seconds=20) as client:
        listed = await client.list_tools()
        return {
            "version": client.protocol_version,
            "tools": {tool.name: tool for tool in listed.tools},
            "add": await client.call_tool("add", {"a": 2, "b": 3}),
            "weather": await client.call_tool("get_weather", {"city": "Oslo"}),
            "tool_error": await client.call_tool("get_weather", {"city": "Atlantis"}),
            "invalid": await client.call_tool("get_weather", {"city": 3}),
            "unknown": await client.call_tool("nope", {}),
            "liar": await client.call_tool("liar", {"x": 1}),
            "progress": await _crawl_with_progress(client),
        }


async def _crawl_with_progress(client: Any) -> dict[str, Any]:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("crawl", {"pages": 3}, progress_callback=on_progress)
    return {"result": result, "seen": seen}


@pytest.fixture(scope="module", params=["auto", "legacy"])
def session(request: pytest.FixtureRequest) -> dict[str, Any]:
    return anyio.run(_session, request.param)  # type: ignore[no-any-return]


def test_both_protocol_eras_are_served(session: dict[str, Any], request: pytest.FixtureRequest) -> None:
    modern = session["version"] in MODERN_PROTOCOL_VERSIONS
    assert modern is (request.node.callspec.params["session"] == "auto")


def test_tools_list_gives_name_description_schemas_and_annotations(session: dict[str, Any]) -> None:
    tools = session["tools"]
    assert list(tools) == ["get_weather", "add", "liar", "wipe", "crawl"]
    weather = tools["get_weather"]
    assert weather.description == "Look up the current weather."
    assert weather.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit.", "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert weather.output_schema == {"type": "object"}
    assert weather.annotations.idempotent_hint is True
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["add"].annotations.idempotent_hint is False


def test_a_call_returns_structured_content_and_text(session: dict[str, Any]) -> None:
    add, weather = session["add"], session["weather"]
    assert (add.is_error, add.structured_content, add.content[0].text) == (False, {"result": 5}, "5")
    assert weather.is_error is False
    assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "unit": "c"}
    assert weather.content[0].text == '{"city":"Oslo","temperature":21.5,"unit":"c"}'


def test_failures_set_is_error_with_a_message_the_model_can_act_on(session: dict[str, Any]) -> None:
    for key in ("tool_error", "invalid", "unknown", "liar"):
        assert session[key].is_error is True and session[key].structured_content is None, key
    assert session["tool_error"].content[0].text == "Error: no weather station in Atlantis"
    assert (
        session["invalid"]
        .content[0]
        .text.startswith("Error: Invalid arguments: tool 'get_weather', argument 'city' at /city: expected string")
    )
    listed = "get_weather, add, liar, wipe, crawl"
    assert session["unknown"].content[0].text == f"Error: Unknown tool 'nope'. Available tools: {listed}."
    assert "does not match its declared output schema" in session["liar"].content[0].text


def test_policies_become_annotations(session: dict[str, Any]) -> None:
    tools = session["tools"]
    wipe, crawl, add = tools["wipe"].annotations, tools["crawl"].annotations, tools["add"].annotations
    assert (wipe.read_only_hint, wipe.destructive_hint, wipe.open_world_hint) == (False, True, False)
    assert (crawl.read_only_hint, crawl.open_world_hint) == (False, True)
    assert add.read_only_hint is None and add.destructive_hint is None  # unclassified: claims nothing


def test_progress_reaches_the_client_as_notifications(session: dict[str, Any]) -> None:
    progress = session["progress"]
    assert progress["result"].structured_content == {"result": 3}
    assert progress["seen"] == [(1, 3, "page 1"), (2, 3, "page 2"), (3, 3, "page 3")]


# --- conversion faults ------------------------------------------------------------------------


async def _conversion_faults_over_mcp(mode: str) -> dict[str, tuple[str, str, bool | None]]:
    parameters = StdioServerParameters(command=sys.executable, args=[str(MODEL_INPUT_SERVER)], env=server_env())
    outcomes: dict[str, tuple[str, str, bool | None]] = {}
    with anyio.fail_after(60):
        async with Client(parameters, mode=mode, read_timeout_seconds=20) as client:
            for name, parameter in FAULTS:
                try:
                    result = await client.call_tool(name, {parameter: {"x": 0}})
                except MCPError as exc:
                    outcomes[name] = ("error", f"{exc!r} {exc}", None)
                else:
                    outcomes[name] = ("result", result.model_dump_json(), result.is_error)
    return outcomes


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_conversion_faults_over_mcp_are_tool_results_that_leak_nothing(mode: str) -> None:
    outcomes = anyio.run(_conversion_faults_over_mcp, mode)
    leaked = {name: text for name, (_, text, _) in outcomes.items() if SECRET in text}
    assert leaked == {}, "the exception's text reached the client"
    assert {name: (kind, is_error) for name, (kind, _, is_error) in outcomes.items()} == {
        name: ("result", True) for name in ("asserted", "looked_up", "validated")
    }, outcomes


# --- progress per session ---------------------------------------------------------------------


class _Gate:
    """Holds both calls inside the tool until each has reported its first progress."""

    def __init__(self) -> None:
        self.started: dict[str, anyio.Event] = {"A": anyio.Event(), "B": anyio.Event()}
        self.both = anyio.Event()


GATE: list[_Gate] = []


@tool
async def stepper(label: str, progress: Progress) -> str:
    """Report a start and an end, waiting for the other session's call in between."""
    gate = GATE[0]
    progress.progress(1, total=2, message=f"{label} start")
    gate.started[label].set()
    if all(event.is_set() for event in gate.started.values()):
        gate.both.set()
    with anyio.fail_after(WATCHDOG):
        await gate.both.wait()
    progress.progress(2, total=2, message=f"{label} end")
    return label


async def _two_sessions() -> tuple[dict[str, list[str | None]], dict[str, Any]]:
    GATE[:] = [_Gate()]
    server = mcp.build_server(Toolbox([stepper]))
    seen: dict[str, list[str | None]] = {"A": [], "B": []}
    outputs: dict[str, Any] = {}

    async def call(client: Client, label: str) -> None:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            seen[label].append(message)

        result = await client.call_tool("stepper", {"label": label}, progress_callback=on_progress)
        outputs[label] = result.structured_content

    with anyio.fail_after(30):
        # the same requests in the same order: both sessions use the same JSON-RPC ids
        async with (
            Client(server, mode="legacy") as first,
            Client(server, mode="legacy") as second,
            anyio.create_task_group() as group,
        ):
            group.start_soon(call, first, "A")
            await GATE[0].started["A"].wait()
            group.start_soon(call, second, "B")
    return seen, outputs


def test_progress_reaches_only_the_session_whose_call_reported_it() -> None:
    seen, outputs = anyio.run(_two_sessions)
    assert outputs == {"A": {"result": "A"}, "B": {"result": "B"}}
    assert seen == {"A": ["A start", "A end"], "B": ["B start", "B end"]}


# --- injection, sessions, threads, cancellation -------------------------------------------------


class _Clock:
    """An injected value: the test reads which session each call saw."""

    def __init__(self, label: str) -> None:
        self.label = label


@tool
def whoami(greeting: str, *, clock: Annotated[_Clock, Injected]) -> str:
    """Say which injected clock this session has."""
    return f"{greeting} from {clock.label}"


@tool
def trusted(invocation: Invocation, stores: Stores) -> dict[str, Any]:
    """Report the run's trusted identity and stores."""
    return {"actor": invocation.actor, "stores": sorted(stores)}


async def _calls(server: Any, *calls: tuple[str, dict[str, Any]], mode: str = "legacy") -> list[Any]:
    """One client's results of the calls, made one after another."""
    with anyio.fail_after(30):
        async with Client(server, mode=mode) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_served_tools_get_the_injected_values_of_their_session() -> None:
    made: list[_Clock] = []

    def inject() -> dict[str, Any]:
        made.append(_Clock(f"clock {len(made) + 1}"))
        return {"clock": made[-1]}

    server = mcp.build_server(Toolbox([whoami]), inject=inject)
    first = anyio.run(_calls, server, ("whoami", {"greeting": "hi"}), ("whoami", {"greeting": "yo"}))
    second = anyio.run(_calls, server, ("whoami", {"greeting": "hi"}))
    assert [result.structured_content for result in first + second] == [
        {"result": "hi from clock 1"},
        {"result": "yo from clock 1"},
        {"result": "hi from clock 2"},
    ]
    assert len(made) == 2  # once per session, not per call


def test_under_the_sessionless_protocol_each_request_is_a_session() -> None:
    labels = iter(["first", "second"])
    server = mcp.build_server(Toolbox([whoami]), inject=lambda: {"clock": _Clock(next(labels))})
    call = ("whoami", {"greeting": "hi"})
    results = anyio.run(partial(_calls, server, call, call, mode="auto"))
    assert [result.structured_content for result in results] == [
        {"result": "hi from first"},
        {"result": "hi from second"},
    ]


def test_a_missing_injected_value_is_a_tool_result_naming_the_parameter() -> None:
    (result,) = anyio.run(_calls, mcp.build_server(Toolbox([whoami])), ("whoami", {"greeting": "hi"}))
    assert result.is_error is True and result.structured_content is None
    assert result.content[0].text == (
        "Error: Tool 'whoami' cannot run: the server has no value for its injected parameter 'clock'."
    )


def test_an_injected_parameter_sent_by_the_client_is_a_repairable_tool_result() -> None:
    server = mcp.build_server(Toolbox([whoami]), inject={"clock": _Clock("server")})
    (result,) = anyio.run(_calls, server, ("whoami", {"greeting": "hi", "clock": "mine"}))
    assert result.is_error is True
    assert result.content[0].text.startswith("Error: Invalid arguments: tool 'whoami'")


def test_context_and_stores_reach_the_tools() -> None:
    server = mcp.build_server(Toolbox([trusted]), context=RunContext(actor="ops"), stores={"db": object()})
    (result,) = anyio.run(_calls, server, ("trusted", {}))
    assert result.structured_content == {"actor": "ops", "stores": ["db"]}


def test_each_session_gets_its_own_dispatcher_and_budget() -> None:
    tools = Toolbox([whoami])
    factory = partial(Dispatcher, tools, limits=Limits(max_tool_calls=1))
    server = mcp.build_server(tools, dispatcher_factory=factory, inject={"clock": _Clock("c")})
    call = ("whoami", {"greeting": "hi"})
    first = anyio.run(_calls, server, call, call)
    second = anyio.run(_calls, server, call)
    assert [result.is_error for result in first + second] == [False, True, False]
    assert "budget" in first[1].content[0].text.lower()


def test_dispatcher_options_are_one_choice() -> None:
    tools = Toolbox([whoami])
    with pytest.raises(ValueError, match="one of"):
        mcp.build_server(tools, dispatcher=Dispatcher(tools), context=RunContext(actor="x"))
    with pytest.raises(ValueError, match="one of"):
        mcp.build_server(tools, dispatcher_factory=partial(Dispatcher, tools), stores={})


BARRIER: list[threading.Barrier] = []


@tool
def nap(seconds: float) -> dict[str, Any]:
    """Sleep on a worker thread until three other calls sleep too."""
    time.sleep(seconds)
    BARRIER[0].wait(timeout=WATCHDOG)  # four calls run at once, or this breaks
    return {"on_main_thread": threading.current_thread() is threading.main_thread()}


async def _four_naps() -> tuple[list[Any], float]:
    server = mcp.build_server(Toolbox([nap]))
    results: list[Any] = []
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client, anyio.create_task_group() as group:
            started = time.perf_counter()

            async def one() -> None:
                results.append(await client.call_tool("nap", {"seconds": 0.5}))

            for _ in range(4):
                group.start_soon(one)
    return results, time.perf_counter() - started


def test_sync_tools_run_concurrently_on_worker_threads_not_the_event_loop() -> None:
    BARRIER[:] = [threading.Barrier(4)]
    results, elapsed = anyio.run(_four_naps)
    assert [result.structured_content for result in results] == [{"on_main_thread": False}] * 4
    assert elapsed < 2.0  # four half-second naps side by side, not one after another


CANCELLED: list[str] = []


@tool
async def wait_forever() -> str:
    """Wait until cancelled."""
    try:
        await anyio.sleep(WATCHDOG)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append("cancelled")
        raise
    return "woke"


async def _cancel_then_call() -> Any:
    server = mcp.build_server(Toolbox([wait_forever, whoami]), inject={"clock": _Clock("after")})
    with anyio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            with anyio.move_on_after(0.3):
                await client.call_tool("wait_forever", {})
            with anyio.fail_after(5):
                while not CANCELLED:
                    await anyio.sleep(0.01)
            return await client.call_tool("whoami", {"greeting": "still here"})


def test_a_client_cancellation_stops_the_running_tool_and_the_session_goes_on() -> None:
    CANCELLED.clear()
    after = anyio.run(_cancel_then_call)
    assert CANCELLED == ["cancelled"]
    assert after.structured_content == {"result": "still here from after"}


@tool
def convert_currency(amount: float, to: str) -> str:
    """Convert an amount of euros into another currency."""
    return f"{amount} EUR in {to}"


@tool
def weather_now(city: str) -> str:
    """Current weather of a city."""
    return f"sunny in {city}"


async def _search_then_list() -> dict[str, Any]:
    catalog = Toolbox([weather_now, convert_currency], deferred=["convert_currency"])
    catalog.search_tool(k=1)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(getattr(message, "root", message), "method", type(message).__name__))

    with anyio.fail_after(WATCHDOG):
        async with Client(mcp.build_server(catalog), mode="legacy", message_handler=on_message) as client:
            seen = {"capability": client.server_capabilities.tools.list_changed}
            seen["before"] = [item.name for item in (await client.list_tools()).tools]
            refused = await client.call_tool("convert_currency", {"amount": 3, "to": "NOK"})
            seen["refused"] = refused.is_error
            await client.call_tool("search_tools", {"query": "convert euros currency"})
            await anyio.sleep(0.1)  # the notification travels beside the answer
            seen["heard"] = list(heard)
            seen["after"] = [item.name for item in (await client.list_tools()).tools]
            seen["converted"] = (await client.call_tool("convert_currency", {"amount": 3, "to": "NOK"})).is_error
            await client.call_tool("search_tools", {"query": "convert euros currency"})  # nothing new revealed
            await anyio.sleep(0.1)
            seen["heard_again"] = list(heard)
    return seen


def test_a_search_that_reveals_tools_changes_the_sessions_list_and_says_so() -> None:
    seen = anyio.run(_search_then_list)
    assert seen["capability"] is True
    assert seen["before"] == ["weather_now", "search_tools"] and seen["refused"] is True
    assert seen["heard"].count("notifications/tools/list_changed") == 1
    assert seen["after"] == ["weather_now", "search_tools", "convert_currency"]
    assert seen["converted"] is False
    assert seen["heard_again"].count("notifications/tools/list_changed") == 1  # only a new reveal is news


async def _sessionless_search_then_call(shared: bool) -> dict[str, Any]:
    catalog = Toolbox([weather_now, convert_currency], deferred=["convert_currency"])
    catalog.search_tool(k=1)
    options: dict[str, Any] = {"dispatcher": Dispatcher(catalog)} if shared else {}
    with anyio.fail_after(WATCHDOG):
        async with Client(mcp.build_server(catalog, **options)) as client:  # the default: 2026-07-28
            seen: dict[str, Any] = {"version": client.protocol_version}
            seen["listed"] = [item.name for item in (await client.list_tools()).tools]
            found = await client.call_tool("search_tools", {"query": "convert euros currency"})
            seen["found"] = "convert_currency" in found.content[0].text
            converted = await client.call_tool("convert_currency", {"amount": 3, "to": "NOK"})
            seen["converted"] = (converted.is_error, converted.content[0].text)
            invalid = await client.call_tool("convert_currency", {"amount": "3", "to": "NOK"})
            seen["invalid"] = (invalid.is_error, "Invalid arguments" in invalid.content[0].text)
    return seen


@pytest.mark.parametrize("shared", [False, True])
def test_under_the_sessionless_protocol_a_deferred_tool_the_search_found_can_be_called(shared: bool) -> None:
    seen = anyio.run(_sessionless_search_then_call, shared)
    assert seen["version"] in MODERN_PROTOCOL_VERSIONS
    assert seen["listed"] == ["weather_now", "search_tools"]  # still left out of the listing
    assert seen["found"] is True
    assert seen["converted"] == (False, "3.0 EUR in NOK")
    assert seen["invalid"] == (True, True)  # checked against its schema like any call
