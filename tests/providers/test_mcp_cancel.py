"""A client's cancellation reaches the tool over ``tinytools serve-mcp --http``, while the client is connected.

The server is the CLI's stateless streamable HTTP app in a real subprocess. A 2025-protocol
client (the ``mcp`` SDK's ``Client`` in legacy mode, and tinytools' own `connect`) cancels with a
``notifications/cancelled`` request of its own, found by the session key the server gave at the
handshake; a 2026-07-28 client (``Client`` in its default mode) closes the request's stream. Each
test reads the server's count of running and cancelled ``linger`` calls on the same, still open
session. Raw HTTP requests check what the key allows: only its own client's calls, and its
``DELETE``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from tinytools import ToolCall, adispatch
from tinytools.providers.mcp import connect
from tinytools.providers.mcp._cancellations import EARLY, ENDED, Cancellations

from .servers import run_within
from .test_mcp_http import serving_cli

Counts = dict[str, int]
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_cli(tmp_path_factory.mktemp("server") / "stderr.txt") as (endpoint, _):
        yield endpoint


async def _counts(call: Call, until: Counts | None = None, seconds: float = 10.0) -> Counts:
    """The server's ``lingering`` counts, read through ``call`` until they match ``until`` (or time is up)."""
    with anyio.move_on_after(seconds):
        while True:
            counts: Counts = await call("lingering", {})
            if until is None or all(counts[key] == value for key, value in until.items()):
                break
            await anyio.sleep(0.05)
    return counts


async def _cancel_mid_call(call: Call) -> tuple[Counts, Counts, Counts, Any]:
    """Start a ten-minute ``linger`` call, cancel it once it runs, and read the counts on the same session."""
    before = await _counts(call, {"now": 0})
    async with anyio.create_task_group() as group:
        group.start_soon(call, "linger", {"tag": "cancel me", "seconds": 600})
        running = await _counts(call, {"now": 1})
        group.cancel_scope.cancel()
    after = await _counts(call, {"now": 0})
    return before, running, after, await call("echo", {"tag": "still here"})


async def _with_sdk_client(url: str, mode: str) -> tuple[Counts, Counts, Counts, Any]:
    async with Client(url, mode=mode, read_timeout_seconds=20) as client:

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await client.call_tool(name, arguments)
            return result.structured_content.get("result", result.structured_content)

        return await _cancel_mid_call(call)


async def _with_connect(url: str) -> tuple[Counts, Counts, Counts, Any]:
    async with connect(url) as box:
        numbers = iter(range(1_000_000))

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await adispatch(ToolCall(f"c{next(numbers)}", name, arguments), box)
            assert result.status == "succeeded", result.text()
            return result.output.get("result", result.output)  # a string is sent wrapped

        return await _cancel_mid_call(call)


@pytest.mark.parametrize("client", ["legacy", "auto", "connect"])
def test_a_cancelled_call_stops_its_tool_while_the_client_is_still_connected(url: str, client: str) -> None:
    if client == "connect":
        before, running, after, again = run_within(_with_connect, url)
    else:
        before, running, after, again = run_within(_with_sdk_client, url, client)
    assert running["now"] == 1, running
    assert after == {"now": 0, "cancelled": before["cancelled"] + 1}  # the tool saw its token set
    assert again == "still here"  # and the session goes on


HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
AFTER_HANDSHAKE = {**HEADERS, "mcp-protocol-version": "2025-11-25"}


async def _handshake(http: httpx2.AsyncClient, url: str) -> str:
    """A 2025 ``initialize`` by hand: the session key the server answers with."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    answer = await http.post(
        url, headers=HEADERS, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    )
    assert answer.status_code == 200
    return answer.headers["mcp-session-id"]


async def _raw_counts(http: httpx2.AsyncClient, url: str, key: str, until: Counts | None = None) -> Counts:
    numbers = iter(range(100, 1_000_000))

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": next(numbers),
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        answer = await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": key}, json=body)
        return answer.json()["result"]["structuredContent"]

    return await _counts(call, until)


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


LINGER = {"tag": "t", "seconds": 600}


def _cancel(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


async def _two_clients_one_request_id(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=30) as http:
        mine, theirs = await _handshake(http, url), await _handshake(http, url)
        seen["keys"] = (mine, theirs)
        seen["before"] = await _raw_counts(http, url, mine, {"now": 0})

        async def linger() -> None:
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "linger", "arguments": {"tag": "t", "seconds": 600}},
            }
            answer = await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": mine}, json=body)
            seen["answer"] = answer.json()

        async with anyio.create_task_group() as group:
            group.start_soon(linger)
            seen["running"] = await _raw_counts(http, url, mine, {"now": 1})
            other = await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": theirs}, json=_cancel(7))
            seen["other_status"] = other.status_code
            await anyio.sleep(0.5)  # time enough for a wrong cancellation to land
            seen["after_other"] = await _raw_counts(http, url, mine)
            own = await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": mine}, json=_cancel(7))
            seen["own_status"] = own.status_code
        seen["after_own"] = await _raw_counts(http, url, mine, {"now": 0})
    return seen


def test_a_cancellation_reaches_only_a_call_of_its_own_clients_session(url: str) -> None:
    seen = run_within(_two_clients_one_request_id, url)
    mine, theirs = seen["keys"]
    assert mine != theirs and all(key.startswith("tt-") and len(key) == 35 for key in seen["keys"])
    assert seen["running"]["now"] == 1
    assert seen["other_status"] == 202 and seen["after_other"]["now"] == 1  # another key's request id 7: not this call
    assert seen["own_status"] == 202
    assert seen["answer"] == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "Request cancelled"}}
    assert seen["after_own"] == {"now": 0, "cancelled": seen["before"]["cancelled"] + 1}


async def _delete_and_get(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=30) as http:
        key = await _handshake(http, url)
        seen["before"] = await _raw_counts(http, url, key, {"now": 0})
        seen["get"] = (await http.get(url, headers={"accept": "text/event-stream", "mcp-session-id": key})).status_code

        async def linger() -> None:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "linger", "arguments": {"tag": "t", "seconds": 600}},
            }
            seen["answer"] = (
                await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": key}, json=body)
            ).json()

        async with anyio.create_task_group() as group:
            group.start_soon(linger)
            await _raw_counts(http, url, key, {"now": 1})
            seen["delete"] = (await http.delete(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": key})).status_code
        ended = await http.post(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": key}, json=_call(2, "echo", {}))
        seen["ended"] = ended.status_code, ended.json()["error"]["message"]
        seen["delete_again"] = (await http.delete(url, headers={**AFTER_HANDSHAKE, "mcp-session-id": key})).status_code
        seen["after"] = await _raw_counts(http, url, await _handshake(http, url), {"now": 0})
    return seen


def test_a_clients_delete_ends_its_session_and_running_calls_and_its_get_finds_no_stream(url: str) -> None:
    seen = run_within(_delete_and_get, url)
    assert seen["get"] == 405
    assert seen["delete"] == 200
    assert seen["ended"] == (404, "Session not found: its client ended it")  # the key is refused from now on
    assert seen["delete_again"] == 404
    assert seen["after"] == {"now": 0, "cancelled": seen["before"]["cancelled"] + 1}
    assert seen["answer"] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "Request cancelled"}}


async def _cancel_before_call(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with httpx2.AsyncClient(timeout=30) as http:
        key = await _handshake(http, url)
        headers = {**AFTER_HANDSHAKE, "mcp-session-id": key}
        seen["before"] = await _raw_counts(http, url, key, {"now": 0})
        seen["cancel"] = (await http.post(url, headers=headers, json=_cancel(3))).status_code
        seen["answer"] = (await http.post(url, headers=headers, json=_call(3, "linger", LINGER))).json()
        seen["again"] = (await http.post(url, headers=headers, json=_call(4, "echo", {"tag": "next"}))).json()
        seen["after"] = await _raw_counts(http, url, key)
    return seen


def test_a_cancellation_that_overtakes_its_request_keeps_the_request_from_running(url: str) -> None:
    seen = run_within(_cancel_before_call, url)
    assert seen["cancel"] == 202
    assert seen["answer"] == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "Request cancelled"}}
    assert seen["after"] == seen["before"]  # the tool never ran
    assert seen["again"]["result"]["content"][0]["text"] == "next"


def test_ended_sessions_are_remembered_up_to_a_bound() -> None:
    table = Cancellations()
    keys = [b"tt-%032d" % number for number in range(ENDED + 10)]
    for key in keys:
        table.close(key)
    assert len(table.ended) == ENDED and keys[0] not in table.ended and keys[-1] in table.ended


def test_cancellations_kept_for_requests_to_come_stay_few_and_small() -> None:
    table = Cancellations()
    key = b"tt-" + b"0" * 32
    table.cancel((key, "x" * 1_000_000))  # a long id is never kept for later
    for number in range(5 * EARLY):
        table.cancel((key, number))
    assert len(table.early) == EARLY and (key, 0) not in table.early and (key, 5 * EARLY - 1) in table.early
    assert table.came_first((key, 5 * EARLY - 1)) and not table.came_first((key, 5 * EARLY - 1))  # used up


def test_a_sessionless_get_or_delete_is_the_sdks_to_answer_even_with_a_session_key(url: str) -> None:
    async def ask() -> list[tuple[int, str | None]]:
        headers = {
            "mcp-session-id": "tt-" + "0" * 32,
            "mcp-protocol-version": "2026-07-28",
            "accept": "text/event-stream",
        }
        async with httpx2.AsyncClient(timeout=30) as http:
            answers = [await http.get(url, headers=headers), await http.delete(url, headers=headers)]
        return [(answer.status_code, answer.headers.get("allow")) for answer in answers]

    assert run_within(ask) == [(405, "POST"), (405, "POST")]


async def _cancel_a_call_the_sdk_runs(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    tag = "[" * 200  # more brackets than the lean path reads: the SDK's own handling runs this call
    async with httpx2.AsyncClient(timeout=30) as http:
        key = await _handshake(http, url)
        headers = {**AFTER_HANDSHAKE, "mcp-session-id": key}
        seen["before"] = await _raw_counts(http, url, key, {"now": 0})

        async def linger() -> None:
            answer = await http.post(url, headers=headers, json=_call(21, "linger", {"tag": tag, "seconds": 600}))
            seen["answer"] = _messages(answer.text)[-1]

        async with anyio.create_task_group() as group:
            group.start_soon(linger)
            seen["running"] = await _raw_counts(http, url, key, {"now": 1})
            seen["cancel"] = (await http.post(url, headers=headers, json=_cancel(21))).status_code
        seen["after"] = await _raw_counts(http, url, key, {"now": 0})
        ended = await http.post(url, headers=headers, json=_call(22, "linger_end", {"tag": tag}))
        seen["end"] = _messages(ended.text)[-1]["result"]["structuredContent"]
    return seen


def _messages(text: str) -> list[Any]:
    """The JSON-RPC messages of a body: JSON, or an event stream's data lines."""
    lines = [line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return [json.loads(line) for line in lines] if lines else [json.loads(text)]


def test_a_cancellation_reaches_a_call_the_sdks_own_handling_runs(url: str) -> None:
    seen = run_within(_cancel_a_call_the_sdk_runs, url)
    assert seen["running"]["now"] == 1 and seen["cancel"] == 202
    assert seen["answer"]["error"] == {"code": -32800, "message": "Request cancelled"}
    assert seen["after"] == {"now": 0, "cancelled": seen["before"]["cancelled"] + 1}
    assert seen["end"] == {"result": "cancelled"}
