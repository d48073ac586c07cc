"""Per-session injected values over MCP: opened when a tool first needs them, closed when the session ends.

The server is ``tinytools serve-mcp`` with ``--inject`` (stdio and stateless HTTP) or a stateful
HTTP app, a real subprocess; the clients are tinytools' `connect` (the 2025 handshake) and the
SDK's ``mcp.Client`` in its default mode (the sessionless 2026-07-28 protocol). The factory,
a generator in `mcp_session_tools.py`, writes down every database it opens and closes and what
it was told of the session, so each test counts opens and closes. Headers and the authenticated
principal are read in process, behind Starlette's own authentication middleware.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware

from tinytools import Injected, Toolbox, ToolCall, adispatch, tool
from tinytools.providers.mcp import SessionContext, build_server, connect, http_app

from .mcp_session_tools import ping
from .servers import HERE

TOOLS = HERE / "mcp_session_tools.py"


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A copy of the tools module in a folder of its own: its log is written beside it."""
    copy = tmp_path / "session_tools.py"
    shutil.copy(TOOLS, copy)
    return copy


def _events(tools: Path, count: int = 0) -> list[dict[str, Any]]:
    """The log of opens and closes, once it holds ``count`` entries (within ten seconds)."""
    log = tools.with_name("sessions.jsonl")
    ends = time.monotonic() + 10
    while True:
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        if len(lines) >= count or time.monotonic() > ends:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def _opened_closed(events: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(event["event"], event["database"]) for event in events]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _serving(argv: list[str], port: int) -> Iterator[str]:
    process = subprocess.Popen([sys.executable, *argv])
    try:
        ends = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > ends:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def _serve_mcp(tools: Path) -> list[str]:
    return ["-m", "tinytools", "serve-mcp", str(tools), "--inject", f"{tools}:open_database"]


async def _tinytools_session(target: list[str] | str, calls: list[str], mode: str = "legacy") -> list[Any]:
    """One connection of tinytools' client (a 2025 handshake's session unless ``mode`` says): ``ping``, or a query."""
    async with connect(target, mode=mode) as box:  # type: ignore[arg-type]
        assert (box.protocol_version == "2026-07-28") == (mode == "auto")
        results = []
        for index, sql in enumerate(calls):
            call = ToolCall(f"c{index}", "ping", {}) if sql == "ping" else ToolCall(f"c{index}", "query", {"sql": sql})
            results.append((await adispatch(call, box)).output)
        return [output["result"] for output in results]


async def _sdk_calls(server: Any, calls: list[str]) -> list[Any]:
    """The SDK client in its default mode (the 2026-07-28 protocol with an SDK server)."""
    async with Client(server, read_timeout_seconds=20) as client:
        assert client.protocol_version == "2026-07-28"
        return [
            (await client.call_tool("query", {"sql": sql})).structured_content["result"]  # type: ignore[index]
            for sql in calls
        ]


def _run(body: Any, *args: Any) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(30):
            return await body(*args)

    return anyio.run(bounded)


def test_over_stdio_each_connection_opens_one_database_when_needed_and_closes_it(tools: Path) -> None:
    target = [sys.executable, *_serve_mcp(tools)]
    first = _run(_tinytools_session, target, ["a", "ping", "b"])
    second = _run(_tinytools_session, target, ["c"])
    only_pings = _run(_tinytools_session, target, ["ping", "ping"])
    events = _events(tools, 4)
    assert (first, second, only_pings) == (["1: a", "pong", "1: b"], ["1: c"], ["pong", "pong"])
    assert _opened_closed(events) == [("open", 1), ("close", 1), ("open", 1), ("close", 1)]  # a process each
    assert {(event["transport"], event["session_id"]) for event in events if event["event"] == "open"} == {
        ("stdio", None)
    }


def test_under_the_sessionless_protocol_over_stdio_each_request_is_a_session(tools: Path) -> None:
    parameters = StdioServerParameters(command=sys.executable, args=_serve_mcp(tools))
    outputs = _run(_sdk_calls, parameters, ["a", "b"])
    assert outputs == ["1: a", "2: b"]
    assert _opened_closed(_events(tools, 4)) == [("open", 1), ("close", 1), ("open", 2), ("close", 2)]


def test_connect_negotiates_the_sessionless_protocol_by_default(tools: Path) -> None:
    outputs = _run(_tinytools_session, [sys.executable, *_serve_mcp(tools)], ["a", "b"], "auto")
    assert outputs == ["1: a", "2: b"]  # a session each, as for any 2026-07-28 client
    assert _opened_closed(_events(tools, 4)) == [("open", 1), ("close", 1), ("open", 2), ("close", 2)]


def test_over_stateless_http_each_request_that_needs_the_database_opens_and_closes_one(tools: Path) -> None:
    port = _free_port()
    with _serving([*_serve_mcp(tools), "--http", f"127.0.0.1:{port}"], port) as url:
        handshake = _run(_tinytools_session, url, ["a", "ping", "b"])
        sessionless = _run(_sdk_calls, url, ["c"])
        events = _events(tools, 6)
    assert (handshake, sessionless) == (["1: a", "pong", "2: b"], ["3: c"])
    assert _opened_closed(events) == [("open", n) if i % 2 == 0 else ("close", n) for n in (1, 2, 3) for i in (0, 1)]
    assert {event["transport"] for event in events if event["event"] == "open"} == {"http"}


def test_over_stateful_http_each_session_opens_one_database_and_its_end_closes_it(tools: Path) -> None:
    port = _free_port()
    with _serving([str(tools), "--stateful", str(port)], port) as url:
        first = _run(_tinytools_session, url, ["a", "b"])
        second = _run(_tinytools_session, url, ["ping", "c", "d"])
        events = _events(tools, 4)
    assert (first, second) == (["1: a", "1: b"], ["pong", "2: c", "2: d"])
    assert _opened_closed(events) == [("open", 1), ("close", 1), ("open", 2), ("close", 2)]
    session_ids = [event["session_id"] for event in events if event["event"] == "open"]
    assert all(session_ids) and len(set(session_ids)) == 2  # the Mcp-Session-Id of each


@tool
def whose(*, ledger: Annotated[SessionContext, Injected]) -> str | None:
    """Whose ledger this session has: the tenant its request named."""
    return ledger.headers.get("x-tenant")


class _Bearer(AuthenticationBackend):
    """Starlette authentication: ``Authorization: Bearer <name>`` is the user <name>."""

    async def authenticate(self, conn: Any) -> tuple[AuthCredentials, SimpleUser] | None:
        scheme, _, name = conn.headers.get("authorization", "").partition(" ")
        return (AuthCredentials(["tools"]), SimpleUser(name)) if scheme == "Bearer" and name else None


@pytest.mark.parametrize("stateless", [True, False])
def test_the_factory_is_given_the_requests_headers_and_principal(stateless: bool) -> None:
    seen: list[SessionContext] = []
    closed: list[int] = []

    async def open_ledger(context: SessionContext) -> Any:  # an async generator: the teardown follows the yield
        seen.append(context)
        yield {"ledger": context}
        closed.append(context.number)

    app = http_app([ping, whose], stateless=stateless, inject=open_ledger)
    app.add_middleware(AuthenticationMiddleware, backend=_Bearer())
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    async def session(headers: dict[str, str]) -> None:
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.call_tool("ping", {})
            answer = await client.call_tool("whose", {})
            assert answer.structured_content == {"result": headers.get("x-tenant")}

    try:
        ends = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < ends
            time.sleep(0.02)
        _run(session, {"authorization": "Bearer ada", "x-tenant": "acme"})
        _run(session, {"x-tenant": "globex"})
        ends = time.monotonic() + 10
        while len(closed) < 2 and time.monotonic() < ends:
            time.sleep(0.02)
    finally:
        server.should_exit = True
        thread.join(10)
    assert [(c.transport, c.headers["x-tenant"]) for c in seen] == [("http", "acme"), ("http", "globex")]
    assert isinstance(seen[0].principal, SimpleUser) and seen[0].principal.display_name == "ada"
    assert seen[1].principal is None  # anonymous
    assert [c.session_id is not None for c in seen] == [not stateless] * 2
    assert sorted(closed) == sorted(c.number for c in seen)


# --- the forms a factory takes, in process ----------------------------------------------------


class _Ledger:
    """Writes down its opens and closes, in the order they happen."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.threads: list[bool] = []

    def open(self, context: SessionContext | None = None) -> dict[str, Any]:
        self.threads.append(threading.current_thread() is threading.main_thread())
        self.log.append("open")
        return {"ledger": len(self.log)}

    def close(self) -> None:
        self.log.append("close")


def _forms(ledger: _Ledger) -> dict[str, Any]:
    """The same factory written each way `sessions` takes one."""

    def bare() -> dict[str, Any]:  # no parameter: called with nothing, nothing to tear down
        return ledger.open()

    def plain(context: SessionContext) -> dict[str, Any]:
        return ledger.open(context)

    async def coroutine(context: SessionContext) -> dict[str, Any]:
        return ledger.open(context)

    def generator(context: SessionContext) -> Iterator[dict[str, Any]]:
        yield ledger.open(context)
        ledger.close()

    async def async_generator(context: SessionContext) -> Any:
        yield ledger.open(context)
        ledger.close()

    @contextlib.contextmanager
    def managed(context: SessionContext) -> Iterator[dict[str, Any]]:
        yield ledger.open(context)
        ledger.close()

    @contextlib.asynccontextmanager
    async def async_managed(context: SessionContext) -> Any:
        yield ledger.open(context)
        ledger.close()

    return {
        "bare": bare,
        "plain": plain,
        "coroutine": coroutine,
        "generator": generator,
        "async generator": async_generator,
        "context manager": managed,
        "async context manager": async_managed,
    }


@tool
def read(*, ledger: Annotated[int, Injected]) -> int:
    """The number the session's ledger was opened as."""
    return ledger


async def _one_session(server: Any, names: list[str]) -> list[Any]:
    async with Client(server, mode="legacy") as client, anyio.create_task_group() as group:
        results: list[Any] = []

        async def one(name: str) -> None:
            results.append((await client.call_tool(name, {})).structured_content)

        for name in names:  # at once: the first calls race to open the values
            group.start_soon(one, name)
    return results


TEARDOWN = {"generator", "async generator", "context manager", "async context manager"}


@pytest.mark.parametrize("form", list(_forms(_Ledger())))
def test_each_form_of_factory_opens_once_per_session_when_needed_and_tears_down_at_its_end(form: str) -> None:
    ledger = _Ledger()
    server_ = build_server(Toolbox([read, ping]), inject=_forms(ledger)[form])
    first = _run(_one_session, server_, ["read", "read", "ping", "read"])
    second = _run(_one_session, server_, ["read"])
    untouched = _run(_one_session, server_, ["ping"])
    closes = ["close"] if form in TEARDOWN else []
    assert ledger.log == ["open", *closes, "open", *closes]  # none for the session that needed none
    assert sorted(map(str, first)) == sorted(map(str, [{"result": 1}] * 3 + [{"result": "pong"}]))
    assert second == [{"result": 1 + 1 + len(closes)}] and untouched == [{"result": "pong"}]
    if form not in ("coroutine", "async generator", "async context manager"):
        assert ledger.threads == [False, False]  # a sync factory runs on a worker thread


def test_a_factory_that_fails_fails_the_call_that_needed_it_and_the_next_call_tries_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts: list[int] = []

    def flaky(context: SessionContext) -> dict[str, Any]:
        attempts.append(context.number)
        if len(attempts) == 1:
            raise RuntimeError("SECRET database password rejected")
        return {"ledger": 7}

    async def calls(server: Any) -> list[Any]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool(name, {}) for name in ("read", "ping", "read")]

    failed, pong, read_ = _run(calls, build_server(Toolbox([read, ping]), inject=flaky))
    (wrong,) = _run(_one_session, build_server(Toolbox([read]), inject=lambda: ["not", "a", "mapping"]), ["read"])
    assert failed.is_error is True and "SECRET" not in failed.content[0].text
    assert "The server failed while opening a session for tool 'read'" in failed.content[0].text
    assert (pong.structured_content, read_.structured_content) == ({"result": "pong"}, {"result": 7})
    assert len(attempts) == 2 and len(set(attempts)) == 1  # one session, tried again
    assert wrong is None  # an isError result
    assert "the inject factory failed" in caplog.text and "made list, not a mapping" in caplog.text
