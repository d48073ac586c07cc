"""The MCP server over stdio, spoken to in raw JSON-RPC lines.

Every request line gets exactly one response line, whatever its id (an integer, a string, or a
type JSON-RPC does not allow, answered with id ``null``), however deeply its arguments nest,
and whether or not it is JSON or a valid request; a blank line gets no answer and the server
keeps answering. A conversion that raises is a tool result whose text never reaches the client,
and what a tool prints goes to the server's stderr, never into the replies on stdout. Every
read runs under a timeout and fails instead of waiting on.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults import FAULTS, SECRET

from .servers import MODEL_INPUT_SERVER, WATCHDOG, server_env


class _RawServer:
    """The stdio server as a subprocess, spoken to in raw JSON-RPC lines."""

    def __init__(self, stderr: Path) -> None:
        self.stderr = stderr
        self.errors = stderr.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, str(MODEL_INPUT_SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env={**os.environ, **server_env()},
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True, name="raw-mcp-stdout").start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def receive_line(self, timeout: float) -> bytes | None:
        """The next line on stdout, or None when none came in time (or the server closed stdout)."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def receive(self, timeout: float) -> Any:
        """The next message, or None when none came in time (or the server closed stdout)."""
        line = self.receive_line(timeout)
        return None if line is None else json.loads(line)

    def handshake(self) -> None:
        self.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": "init",
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "raw-lines", "version": "0"},
                    },
                }
            )
        )
        answer = self.receive(30)
        assert answer is not None and answer.get("id") == "init" and "result" in answer, answer
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.errors.close()


@pytest.fixture
def raw_server(tmp_path: Path) -> Iterator[_RawServer]:
    server = _RawServer(tmp_path / "server-stderr.txt")
    try:
        server.handshake()
        yield server
    finally:
        server.close()


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _call_line(request_id: Any, value: Any = "ok") -> str:
    params = {"name": "nested", "arguments": {"value": value}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _probe(request_id: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})


def _until_probe(raw_server: _RawServer, request_id: str) -> list[Any]:
    """The messages before the answer to probe ``request_id``; fail if the server stops answering."""
    before: list[Any] = []
    while True:
        message = raw_server.receive(WATCHDOG)
        assert message is not None, "the server stopped answering"
        if message.get("id") == request_id:
            return before
        before.append(message)


DEEP = object()
"""The id a line nested too deeply is answered with: depends on how deep this Python reads."""


@pytest.mark.parametrize(
    ("line", "expected_id", "code"),
    [
        pytest.param(_call_line(2, _nested(300)), 2, None, id="300-deep-integer-id"),
        pytest.param(_call_line("deep", _nested(300)), "deep", None, id="300-deep-string-id"),
        pytest.param(_call_line(1.5), None, None, id="float-id"),
        pytest.param(_call_line(True), None, None, id="boolean-id"),
        pytest.param(_call_line({"a": 1}), None, None, id="object-id"),
        pytest.param(_call_line([1]), None, None, id="array-id"),
        pytest.param("this is not json", None, -32700, id="not-json"),
        pytest.param('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', 7, -32600, id="string-params"),
        pytest.param('{"jsonrpc":"2.0","\\u0069d":1.5,"method":"tools/list"}', None, -32600, id="escaped-id-key"),
        pytest.param('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600, id="null-id"),
        pytest.param(_call_line(3, "DEEP").replace('"DEEP"', "[" * 5000 + "]" * 5000), DEEP, -32600, id="5000-deep"),
    ],
)
def test_every_request_line_gets_exactly_one_response(
    raw_server: _RawServer, line: str, expected_id: Any, code: int | None
) -> None:
    raw_server.send(line)
    raw_server.send(_probe("probe-1"))
    answers: list[Any] = []
    probes: set[str] = set()
    while "probe-1" not in probes or not answers:  # wait for both, each within the watchdog
        message = raw_server.receive(WATCHDOG)
        if message is None:
            break
        if message.get("id") == "probe-1":
            probes.add(message["id"])
        else:
            answers.append(message)
    assert "probe-1" in probes, "the server stopped answering"
    # a second probe: anything still owed to the request comes before its answer or not at all
    raw_server.send(_probe("probe-2"))
    answers += _until_probe(raw_server, "probe-2")
    assert len(answers) == 1, f"{len(answers)} responses to one request line: {answers}"
    (answer,) = answers
    assert answer.get("jsonrpc") == "2.0" and "id" in answer, answer
    if expected_id is DEEP and answer["id"] == 3:  # Python 3.12+ reads it: our reader refuses it, to this id
        assert answer["result"]["isError"] and "nested too deeply" in str(answer["result"]), answer
        return
    expected_id = None if expected_id is DEEP else expected_id  # else the SDK refuses the line as unreadable
    assert answer["id"] == expected_id and type(answer["id"]) is type(expected_id), answer
    assert ("result" in answer) != ("error" in answer), answer
    if code is not None:
        assert "error" in answer and answer["error"].get("code") == code, answer


def test_a_blank_line_gets_no_answer_and_the_server_keeps_answering(raw_server: _RawServer) -> None:
    raw_server.send("")
    raw_server.send(_probe("probe"))
    assert _until_probe(raw_server, "probe") == []


def test_what_a_tool_prints_goes_to_stderr_not_into_the_replies(raw_server: _RawServer) -> None:
    params = {"name": "chatty", "arguments": {}}
    raw_server.send(json.dumps({"jsonrpc": "2.0", "id": "chat", "method": "tools/call", "params": params}))
    line = raw_server.receive_line(WATCHDOG)
    assert line is not None, "the server did not answer"
    try:
        answer = json.loads(line)
    except ValueError:
        pytest.fail(f"stdout carries a line that is not JSON: {line!r}")
    assert answer.get("id") == "chat" and "result" in answer, answer
    raw_server.close()
    assert "stray" in raw_server.stderr.read_text(errors="replace")


def test_a_raw_tools_call_whose_conversion_raises_leaks_nothing(raw_server: _RawServer) -> None:
    for index, (name, parameter) in enumerate(FAULTS):
        params = {"name": name, "arguments": {parameter: {"x": 0}}}
        raw_server.send(json.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}))
        answer = raw_server.receive(WATCHDOG)
        assert answer is not None and answer.get("id") == index, answer
        assert SECRET not in json.dumps(answer), answer
        assert answer.get("result", {}).get("isError") is True, answer


def test_a_key_sent_twice_in_the_arguments_is_refused(raw_server: _RawServer) -> None:
    raw_server.send('{"jsonrpc":"2.0","id":"twice","method":"tools/call","params":'
                    '{"name":"nested","arguments":{"value":1,"value":2}}}')  # fmt: skip
    answer = raw_server.receive(WATCHDOG)
    assert answer is not None and answer.get("id") == "twice", answer
    assert answer["result"]["isError"] is True
    assert "the key 'value' appears more than once in one object" in answer["result"]["content"][0]["text"]


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":"up","method":"tools/call","params":'
        '{"name":"nested","arguments":{"value":1},"arguments":{"value":2}}}',
        '{"jsonrpc":"2.0","id":"up","method":"tools/call","params":{"name":"nested","arguments":{"value":1}},'
        '"params":{"name":"nested","arguments":{"value":2}}}',
    ],
    ids=["arguments twice", "params twice"],
)
def test_a_key_sent_twice_above_the_arguments_is_refused(raw_server: _RawServer, line: str) -> None:
    raw_server.send(line)
    answer = raw_server.receive(WATCHDOG)
    assert answer is not None and answer.get("id") == "up", answer
    assert answer["result"]["isError"] is True
    assert "appears more than once in one object" in answer["result"]["content"][0]["text"]
