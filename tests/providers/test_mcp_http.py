"""``tinytools serve-mcp FILE --http HOST:PORT`` as a real subprocess, driven by the real mcp client.

The server is stateless streamable HTTP on 127.0.0.1: it lists the tools in the file's order,
answers calls with structured content, answers invalid arguments with a repairable ``isError``
result, gives tools the values of its ``--inject`` factory, and keeps two clients' concurrent
calls and progress apart.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from .servers import HERE, server_env

TOOLS = HERE / "mcp_http_tools.py"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path, seconds: float = 20.0) -> None:
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start listening")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    port = _free_port()
    command = [sys.executable, "-m", "tinytools", "serve-mcp", str(TOOLS), "--http", f"127.0.0.1:{port}"]
    command += ["--inject", f"{TOOLS}:make_inject"]
    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with log.open("wb") as stderr:  # a file, not a pipe nobody drains
        process = subprocess.Popen(command, env={**os.environ, **server_env()}, stderr=stderr)
    try:
        _wait_listening(port, process, log)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _session(url: str, mode: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(url, mode=mode, read_timeout_seconds=20) as client:
            listed = await client.list_tools()
            return {
                "names": [tool.name for tool in listed.tools],
                "weather": await client.call_tool("get_weather", {"city": "Oslo"}),
                "invalid": await client.call_tool("get_weather", {"city": "Oslo", "unit": "kelvin"}),
                "greet": await client.call_tool("greet", {"name": "Ada"}),
                "sent_injected": await client.call_tool("greet", {"name": "Ada", "greeter": 1}),
            }


@pytest.fixture(scope="module", params=["auto", "legacy"])
def session(server: tuple[str, int], request: pytest.FixtureRequest) -> dict[str, Any]:
    return anyio.run(_session, server[0], request.param)  # type: ignore[no-any-return]


def test_tools_are_listed_in_the_files_order(session: dict[str, Any]) -> None:
    assert session["names"] == ["get_weather", "greet", "count"]


def test_a_call_returns_structured_content_and_text(session: dict[str, Any]) -> None:
    weather = session["weather"]
    assert weather.is_error is False
    assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "unit": "c"}
    assert weather.content[0].text == '{"city":"Oslo","temperature":21.5,"unit":"c"}'


def test_invalid_arguments_are_a_repairable_is_error_result(session: dict[str, Any]) -> None:
    invalid = session["invalid"]
    assert invalid.is_error is True and invalid.structured_content is None
    assert invalid.content[0].text.startswith(
        "Error: Invalid arguments: tool 'get_weather', argument 'unit' at /unit: expected one of"
    )


def test_tools_get_the_values_of_the_inject_factory(session: dict[str, Any], server: tuple[str, int]) -> None:
    assert session["greet"].structured_content == {"result": f"hello Ada from {server[1]}"}
    refused = session["sent_injected"]
    assert refused.is_error is True and "Invalid arguments: tool 'greet'" in refused.content[0].text


async def _two_clients(url: str) -> tuple[dict[str, list[str | None]], dict[str, Any]]:
    seen: dict[str, list[str | None]] = {"A": [], "B": []}
    outputs: dict[str, Any] = {}

    async def one(label: str) -> None:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            seen[label].append(message)

        async with Client(url, read_timeout_seconds=20) as client:
            result = await client.call_tool("count", {"label": label, "steps": 4}, progress_callback=on_progress)
            outputs[label] = result.structured_content

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(one, "A")
            group.start_soon(one, "B")
    return seen, outputs


def test_two_concurrent_clients_get_only_their_own_progress_and_results(server: tuple[str, int]) -> None:
    seen, outputs = anyio.run(_two_clients, server[0])
    assert outputs == {"A": {"result": "A"}, "B": {"result": "B"}}
    assert seen == {label: [f"{label} {step}" for step in range(1, 5)] for label in "AB"}


def test_a_bad_http_option_is_a_usage_error() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "tinytools", "serve-mcp", str(TOOLS), "--http", "nowhere"],
        env={**os.environ, **server_env()},
        capture_output=True,
        timeout=30,
    )
    assert finished.returncode == 2
    assert b"--http takes HOST:PORT, not 'nowhere'" in finished.stderr


def test_an_inject_factory_that_is_missing_is_a_usage_error() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "tinytools", "serve-mcp", str(TOOLS), "--inject", f"{Path(TOOLS)}:nothing"],
        env={**os.environ, **server_env()},
        capture_output=True,
        timeout=30,
    )
    assert finished.returncode == 2
    assert b"is not a function" in finished.stderr
