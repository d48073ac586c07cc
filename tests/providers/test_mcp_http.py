"""``tinytools serve-mcp FILE --http HOST:PORT`` as a real subprocess, driven by the real mcp client.

The server is stateless streamable HTTP on 127.0.0.1: it lists the tools in the file's order,
answers calls with structured content, answers invalid arguments with a repairable ``isError``
result, gives tools the values of its ``--inject`` factory, and keeps two clients' concurrent
calls and progress apart, also with 32 clients x 100 calls at once mixing valid, slow, invalid,
failing, progress-reporting and abandoned calls and clients that drop or are killed mid-call.
The same command without ``--http`` serves stdio with the same injected values.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from .mcp_http_tools import PIXEL
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


@contextlib.contextmanager
def serving_cli(log: Path, *extra: str, tools: Path = TOOLS) -> Iterator[tuple[str, int]]:
    """``tinytools serve-mcp TOOLS --http`` on a free port, stderr to ``log``: its endpoint and pid."""
    port = _free_port()
    command = [sys.executable, "-m", "tinytools", "serve-mcp", str(tools), "--http", f"127.0.0.1:{port}", *extra]
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with serving_cli(log, "--inject", f"{TOOLS}:make_inject") as served:
        yield served


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
                "pixel": await client.call_tool("pixel", {}),
            }


@pytest.fixture(scope="module", params=["auto", "legacy"])
def session(server: tuple[str, int], request: pytest.FixtureRequest) -> dict[str, Any]:
    return anyio.run(_session, server[0], request.param)


def test_tools_are_listed_in_the_files_order(session: dict[str, Any]) -> None:
    assert session["names"] == [
        "get_weather",
        "greet",
        "count",
        "echo",
        "refuse",
        "linger",
        "lingering",
        "linger_end",
        "pixel",
    ]


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


def test_an_image_is_sent_from_the_servers_own_artifact_store(session: dict[str, Any]) -> None:
    pixel = session["pixel"]
    assert pixel.is_error is False
    assert [block.type for block in pixel.content] == ["text", "image"]
    assert base64.b64decode(pixel.content[1].data) == PIXEL


async def _greet_over_stdio() -> Any:
    command = ["-m", "tinytools", "serve-mcp", str(TOOLS), "--inject", f"{TOOLS}:make_inject"]
    parameters = StdioServerParameters(command=sys.executable, args=command, env=server_env())
    with anyio.fail_after(30):
        async with Client(parameters, read_timeout_seconds=20) as client:
            return await client.call_tool("greet", {"name": "Ada"})


def test_the_inject_factory_serves_over_stdio_too() -> None:
    result = anyio.run(_greet_over_stdio)
    assert result.is_error is False
    assert result.structured_content["result"].startswith("hello Ada from ")
    assert not result.structured_content["result"].endswith(f" {os.getpid()}")


CLIENTS = 32
CALLS = 100
DROP_AT = 60
"""Every eighth client drops its connection at this step, in the middle of a call."""
KINDS = 8


def _mode(number: int) -> str:
    """Half the clients speak the 2025 handshake protocol, half negotiate the newest one."""
    return "legacy" if number % 2 else "auto"


def _drops(number: int) -> bool:
    return number % 8 == 3


async def _end_of(client: Client, tag: str) -> str:
    """How ``tag``'s ``linger`` call ended, read on the same session once it runs no more (or 20 s passed)."""
    with anyio.move_on_after(20):
        while True:
            end = (await client.call_tool("linger_end", {"tag": tag})).structured_content["result"]
            if end != "running":
                break
            await anyio.sleep(0.05)
    return str(end)


async def _mixed_client(
    url: str, number: int, answers: dict[str, Any], heard: dict[str, list[str | None]], stopped: dict[str, str]
) -> None:
    """Valid, slow, invalid, raising, abandoned and progress-reporting calls, tagged with client and step."""

    async def call(tag: str, name: str, arguments: dict[str, Any]) -> Any:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            heard.setdefault(tag, []).append(message)

        return await client.call_tool(name, arguments, progress_callback=on_progress)

    with anyio.CancelScope() as dropped:
        async with Client(url, mode=_mode(number), read_timeout_seconds=20) as client:
            for step in range(CALLS):
                tag = f"{number}-{step}"
                if _drops(number) and step == DROP_AT:  # the whole client goes away mid-call
                    dropped.deadline = anyio.current_time() + 0.05
                    await call(tag, "linger", {"tag": tag, "seconds": 600})
                kind = (number + step) % KINDS
                if kind == 4:  # given up on mid-call: no answer expected, and its tool stops while connected
                    with anyio.move_on_after(0.05):
                        await call(tag, "linger", {"tag": tag, "seconds": 600})
                    stopped[tag] = await _end_of(client, tag)
                    continue
                calls: list[tuple[str, dict[str, Any]]] = [
                    ("echo", {"tag": tag}),
                    ("echo", {"tag": tag, "delay": 0.05}),
                    ("echo", {"tag": number}),
                    ("refuse", {"tag": tag}),
                    ("", {}),
                    ("count", {"label": tag, "steps": 2}),
                    ("get_weather", {"city": tag}),
                    ("linger", {"tag": tag, "seconds": 0.01}),
                ]
                result = await call(tag, *calls[kind])
                answers[tag] = (bool(result.is_error), result.content[0].text)


def _expected(number: int, step: int) -> tuple[bool, str] | None:
    tag = f"{number}-{step}"
    if _drops(number) and step >= DROP_AT:
        return None
    weather = f'{{"city":"{tag}","temperature":21.5,"unit":"c"}}'
    answers = [(False, tag), (False, tag), (True, "Error: Invalid arguments"), (True, f"Error: refused {tag}")]
    answers += [None, (False, tag), (False, weather), (False, tag)]
    return answers[(number + step) % KINDS]


def _progress(number: int, step: int) -> list[str | None] | None:
    """The progress messages the call's own client hears (None: whatever arrived before it gave up)."""
    tag = f"{number}-{step}"
    kind = (number + step) % KINDS
    if _expected(number, step) is None:
        return None
    return {5: [f"{tag} 1", f"{tag} 2"], 7: [tag]}.get(kind, [])


async def _many_clients(url: str) -> tuple[dict[str, Any], dict[str, list[str | None]], dict[str, str]]:
    answers: dict[str, Any] = {}
    heard: dict[str, list[str | None]] = {}
    stopped: dict[str, str] = {}
    with anyio.fail_after(240):
        async with anyio.create_task_group() as group:
            for number in range(CLIENTS):
                group.start_soon(_mixed_client, url, number, answers, heard, stopped)
    return answers, heard, stopped


async def _lingering(url: str, until: dict[str, int] | None = None, seconds: float = 10.0) -> dict[str, int]:
    """The server's count of running and cancelled ``linger`` calls, once it matches ``until``."""
    ends = time.monotonic() + seconds
    while True:
        counts = (await _call(url, "lingering", {})).structured_content
        if until is None or all(counts[key] == value for key, value in until.items()) or time.monotonic() > ends:
            return dict(counts)
        await anyio.sleep(0.1)


def test_concurrent_clients_mixing_call_kinds_each_get_their_own_answers(server: tuple[str, int]) -> None:
    """32 clients x 100 calls, half of each protocol; clients that give up or drop leave nothing running."""
    before = anyio.run(_lingering, server[0])
    answers, heard, stopped = anyio.run(_many_clients, server[0])
    cells = [(number, step) for number in range(CLIENTS) for step in range(CALLS)]
    expected = {f"{n}-{s}": _expected(n, s) for n, s in cells if _expected(n, s) is not None}
    assert set(answers) == set(expected)
    got = {
        tag: (is_error, text if not text.startswith("Error: Invalid") else "Error: Invalid arguments")
        for tag, (is_error, text) in answers.items()
    }
    assert got == expected
    for number, step in cells:  # progress reached the client that made the call, and only it
        tag, wanted = f"{number}-{step}", _progress(number, step)
        if wanted is None:
            assert set(heard.get(tag, [])) <= {tag}
        else:
            assert heard.get(tag, []) == wanted, tag
    given_up = {f"{n}-{s}" for n, s in cells if (n + s) % KINDS == 4 and not (_drops(n) and s >= DROP_AT)}
    assert set(stopped) == given_up
    assert set(stopped.values()) <= {"cancelled", "never ran"}, stopped  # stopped while its client was connected
    assert {_mode(int(tag.split("-")[0])) for tag, end in stopped.items() if end == "cancelled"} == {"legacy", "auto"}
    after = anyio.run(_lingering, server[0], {"now": 0})
    assert after["now"] == 0  # every abandoned call was cancelled, none runs on
    abandoned = len(given_up) + sum(map(_drops, range(CLIENTS)))  # each may end before its tool starts
    assert 0 < after["cancelled"] - before["cancelled"] <= abandoned
    alive = anyio.run(_call, server[0], "echo", {"tag": "alive"})  # the server is still serving
    assert (alive.is_error, alive.content[0].text) == (False, "alive")


KILLED_CLIENT = """
import sys, anyio
from mcp import Client

async def main():
    async with Client(sys.argv[1], mode=sys.argv[2]) as client:
        await client.call_tool("linger", {"tag": "killed", "seconds": 600})

anyio.run(main)
"""


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_killed_mid_call_leaves_nothing_running(server: tuple[str, int], mode: str) -> None:
    before = anyio.run(_lingering, server[0], {"now": 0})
    client = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, server[0], mode])
    try:
        running = anyio.run(_lingering, server[0], {"now": 1}, 20.0)
        assert running["now"] == 1, running
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    after = anyio.run(_lingering, server[0], {"now": 0})
    assert after == {"now": 0, "cancelled": before["cancelled"] + 1}


async def _call(url: str, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(url, read_timeout_seconds=20) as client:
        return await client.call_tool(name, arguments)
