"""The HTTP app's lean path answers exactly as the SDK's own stateless app would, under both protocols.

Two real uvicorn servers on 127.0.0.1 serve the same tools: `http_app` (with its lean path for
plain ``tools/list`` and ``tools/call``) and the bare SDK app of the same `Service`. The same
raw requests go to both, good and hostile: the status codes agree, and so do the JSON-RPC
messages once the SDK's event stream is read. A hostile header or body is refused by the SDK's
own checks on both, because the lean path hands every request it would have to refuse to the SDK.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
import uvicorn
from mcp.types import CallToolResult, InputRequiredResult, JSONRPCResponse, ListToolsResult

from tinytools import Ask, Injected, Progress, Tool, tool
from tinytools.providers.mcp import http_app
from tinytools.providers.mcp._server import Service

VERSION = "2025-06-18"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def steps(n: int, progress: Progress) -> str:
    """Report n steps of progress."""
    for step in range(n):
        progress.progress(step + 1, total=n, message=f"step {step + 1}")
    return "done"


PAID: list[int] = []


@tool
def pay(amount: int) -> str:
    """Pay an amount (written down in PAID)."""
    PAID.append(amount)
    return f"paid {amount}"


@tool
def balance(*, ledger: Annotated[dict[str, int], Injected]) -> int:
    """The balance in the server's injected ledger."""
    return ledger["balance"]


def _region(**arguments: Any) -> str:
    return str(arguments.get("region"))


region = Tool.from_schema(
    "region",
    "Say the region asked for (a 2026-07-28 client also sends it as the Mcp-Param-Region header).",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
        "additionalProperties": False,
    },
    _region,
)


@tool
def confirm(what: str, ask: Ask) -> str:
    """Ask the user to confirm something."""
    return f"{what}: {ask(f'Confirm {what}?', {'type': 'boolean'})}"


TOOLS = [add, steps, pay, balance, region, confirm]


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, int]]:
    apps = {
        "lean": http_app(TOOLS),
        "sdk": Service(TOOLS).server().streamable_http_app(stateless_http=True, host="127.0.0.1"),
    }
    running, threads, ports = [], [], {}
    for label, app in apps.items():
        ports[label] = _port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=ports[label], log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        running.append(server)
        threads.append(thread)
    ends = time.monotonic() + 20
    while not all(server.started for server in running):
        assert time.monotonic() < ends, "the servers did not start"
        time.sleep(0.02)
    yield ports
    for server in running:
        server.should_exit = True
    for thread in threads:
        thread.join(10)


def _headers(port: int, **changes: str | None) -> list[tuple[str, str]]:
    headers = {
        "host": f"127.0.0.1:{port}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
    }
    headers.update(changes)  # type: ignore[arg-type]
    return [(key, value) for key, value in headers.items() if value is not None]


def _request(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


class _Response:
    """A response as the tests read it."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status_code = status
        self.headers = headers
        self.text = body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.text)


def _messages(response: _Response) -> list[Any]:
    """The JSON-RPC messages of a response: its JSON body, or the data of each event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:") and line[5:]]
    try:
        return [response.json()]
    except ValueError:
        return [response.text]


def _post(port: int, body: bytes, headers: list[tuple[str, str]]) -> _Response:
    """POST exactly these headers (the standard library's client adds none of its own here)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        for key, value in headers:
            connection.putheader(key, value)
        connection.putheader("content-length", str(len(body)))
        connection.endheaders(body)
        reply = connection.getresponse()
        return _Response(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
    finally:
        connection.close()


def _both(servers: dict[str, int], body: bytes, **changes: str | None) -> dict[str, _Response]:
    return {label: _post(port, body, _headers(port, **changes)) for label, port in servers.items()}


GOOD = {
    "list": _request("tools/list"),
    "list with a cursor": _request("tools/list", {"cursor": "x"}),
    "call": _request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
    "call with a string id": _request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, "seven"),
    "invalid arguments": _request("tools/call", {"name": "add", "arguments": {"a": "2"}}),
    "no arguments": _request("tools/call", {"name": "add"}),
    "unknown tool": _request("tools/call", {"name": "nope", "arguments": {}}),
    "progress": _request("tools/call", {"name": "steps", "arguments": {"n": 3}, "_meta": {"progressToken": "p"}}),
    "progress asked, none sent": _request(
        "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"progressToken": 9}}
    ),
}


def _same_message(lean: Any, sdk: Any, modern: bool = False) -> None:
    if isinstance(sdk, dict) and "result" in sdk and not modern:  # a 2025 result's resultType is the SDK's own
        sdk = {**sdk, "result": {k: v for k, v in sdk["result"].items() if k != "resultType"}}
    assert lean == sdk


MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def _modern(body: bytes) -> tuple[bytes, dict[str, str | None]]:
    """A request as a 2026-07-28 client sends it: the envelope in ``_meta``, the method and name in headers."""
    message = json.loads(body)
    params = message.setdefault("params", {})
    params["_meta"] = {**ENVELOPE, **params.get("_meta", {})}
    changes: dict[str, str | None] = {"mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    if isinstance(params.get("name"), str):
        changes["mcp-name"] = params["name"]
    return json.dumps(message).encode(), changes


def _answered_by_the_lean_path(response: _Response) -> bool:
    """The lean path writes its content type before its length; the SDK's JSON responses the other way round."""
    names = list(response.headers)
    return names.index("content-type") < names.index("content-length")


@pytest.mark.parametrize("protocol", [VERSION, MODERN])
@pytest.mark.parametrize("case", list(GOOD))
def test_plain_requests_get_the_sdks_answer_from_the_lean_path(
    servers: dict[str, int], case: str, protocol: str
) -> None:
    body, changes = _modern(GOOD[case]) if protocol == MODERN else (GOOD[case], {})
    responses = _both(servers, body, **changes)
    lean, sdk = responses["lean"], responses["sdk"]
    assert lean.status_code == sdk.status_code == 200
    if protocol == MODERN and case != "progress":  # (both stream a call's progress)
        assert _answered_by_the_lean_path(lean) and not _answered_by_the_lean_path(sdk)
    else:
        assert not sdk.headers["content-type"].startswith("application/json")  # the SDK streams
    if case != "progress":
        assert lean.headers["content-type"] == "application/json"  # the lean path answered
    lean_messages, sdk_messages = _messages(lean), _messages(sdk)
    assert len(lean_messages) == len(sdk_messages)
    for mine, theirs in zip(lean_messages, sdk_messages, strict=True):
        _same_message(mine, theirs, protocol == MODERN)
    final = JSONRPCResponse.model_validate(lean_messages[-1])
    shape = ListToolsResult if case.startswith("list") else CallToolResult
    shape.model_validate(final.result)


@pytest.mark.parametrize("shows_forms", [True, False])
def test_a_question_is_asked_alike_by_the_lean_path_and_the_sdk(servers: dict[str, int], shows_forms: bool) -> None:
    capabilities = {"elicitation": {"form": {}}} if shows_forms else {}
    meta = {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": capabilities}
    body, changes = _modern(_request("tools/call", {"name": "confirm", "arguments": {"what": "it"}, "_meta": meta}))
    responses = _both(servers, body, **changes)
    assert _answered_by_the_lean_path(responses["lean"]) and not _answered_by_the_lean_path(responses["sdk"])
    answers = []
    for response in responses.values():
        (message,) = _messages(response)
        result = message["result"]
        assert (result.pop("requestState", None) is not None) is shows_forms  # each server's own handle
        if not shows_forms:
            result["_meta"]["tinytools/pending"].pop("handle")
            result["_meta"]["tinytools/pending"].pop("expires_at")
        answers.append(message)
    assert answers[0] == answers[1]
    shape = InputRequiredResult if shows_forms else CallToolResult
    shape.model_validate({**answers[0]["result"], "requestState": "s"} if shows_forms else answers[0]["result"])


def test_progress_notifications_come_before_the_answer(servers: dict[str, int]) -> None:
    messages = _messages(_both(servers, GOOD["progress"])["lean"])
    assert [m["params"]["message"] for m in messages[:-1]] == ["step 1", "step 2", "step 3"]
    assert messages[-1]["result"]["structuredContent"] == {"result": "done"}


HOSTILE: dict[str, tuple[bytes, dict[str, str | None]]] = {
    "foreign host": (GOOD["call"], {"host": "evil.example"}),
    "foreign host with a loopback prefix": (GOOD["call"], {"host": "127.0.0.1.evil.example:80"}),
    "foreign origin": (GOOD["call"], {"origin": "http://evil.example"}),
    "no host": (GOOD["call"], {"host": ""}),
    "json only accepted": (GOOD["call"], {"accept": "application/json"}),
    "nothing accepted": (GOOD["call"], {"accept": None}),
    "text content type": (GOOD["call"], {"content-type": "text/plain"}),
    "no content type": (GOOD["call"], {"content-type": None}),
    "unknown protocol version": (GOOD["call"], {"mcp-protocol-version": "1999-01-01"}),
    "no protocol version": (GOOD["call"], {"mcp-protocol-version": None}),
    "not json": (b"{not json", {}),
    "a batch": (b"[" + GOOD["call"] + b"]", {}),
    "jsonrpc 1.0": (GOOD["call"].replace(b'"2.0"', b'"1.0"'), {}),
    "a boolean id": (_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, True), {}),
    "no id": (json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add"}}).encode(), {}),
    "params not an object": (_request("tools/call", None).replace(b"}", b',"params":[1]}'), {}),
    "arguments not an object": (_request("tools/call", {"name": "add", "arguments": [1, 2]}), {}),
    "name not a string": (_request("tools/call", {"name": 3, "arguments": {}}), {}),
    "meta not an object": (_request("tools/call", {"name": "add", "arguments": {}, "_meta": 1}), {}),
    "a boolean progress token": (
        _request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": True}}),
        {},
    ),
    "a notification": (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), {}),
    "another method": (_request("prompts/list"), {}),
    "a result beside the method": (GOOD["call"][:-1] + b',"result":{}}', {}),
    "an error beside the method": (GOOD["call"][:-1] + b',"error":{"code":1,"message":"x"}}', {}),
    "a listing with an error beside": (GOOD["list"][:-1] + b',"error":{"code":1,"message":"x"}}', {}),
    "a null progress token": (
        _request("tools/call", {"name": "add", "arguments": {}, "_meta": {"progressToken": None}}),
        {},
    ),
    "a task that is a number": (_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "task": 5}), {}),
    "a request state that is a number": (
        _request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "requestState": 5}),
        {},
    ),
    "a numeric cursor": (_request("tools/list", {"cursor": 5}), {}),
    "a listing meta that is a number": (_request("tools/list", {"_meta": 5}), {}),
    "a listing progress token that is a float": (_request("tools/list", {"_meta": {"progressToken": 1.5}}), {}),
    "client info without a version": (
        _request("tools/list", {"_meta": {"io.modelcontextprotocol/clientInfo": {"name": "x"}}}),
        {},
    ),
    "arguments nested 250 deep": (
        _request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}).replace(
            b'"b": 2}', b'"b": 2, "x": ' + b"[" * 250 + b"]" * 250 + b"}"
        ),
        {},
    ),
    "a content type that starts with another": (GOOD["call"], {"content-type": "text/plain,application/json"}),
    "a content type listing another first": (GOOD["call"], {"content-type": "x, application/json"}),
    "too large": (_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2, "x": "y" * 5_000_000}}), {}),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_requests_the_lean_path_would_refuse_get_the_sdks_own_answer(servers: dict[str, int], case: str) -> None:
    body, changes = HOSTILE[case]
    responses = _both(servers, body, **changes)
    lean, sdk = responses["lean"], responses["sdk"]
    assert lean.status_code == sdk.status_code, (lean.text, sdk.text)
    for mine, theirs in zip(_messages(lean), _messages(sdk), strict=True):
        _same_message(mine, theirs)


MODERN_CALL, MODERN_HEADERS = _modern(GOOD["call"])


def _enveloped(meta: dict[str, Any]) -> bytes:
    message = json.loads(MODERN_CALL)
    message["params"]["_meta"] = meta
    return json.dumps(message).encode()


HOSTILE_MODERN: dict[str, tuple[bytes, dict[str, str | None]]] = {
    "a method header naming another method": (MODERN_CALL, {"mcp-method": "tools/list"}),
    "no method header": (MODERN_CALL, {"mcp-method": None}),
    "a name header naming another tool": (MODERN_CALL, {"mcp-name": "pay"}),
    "no name header": (MODERN_CALL, {"mcp-name": None}),
    "a version header unlike the envelope's": (MODERN_CALL, {"mcp-protocol-version": "2026-01-01"}),
    "an envelope of another version": (
        _enveloped({**ENVELOPE, "io.modelcontextprotocol/protocolVersion": VERSION}),
        {},
    ),
    "no client capabilities": (_enveloped({"io.modelcontextprotocol/protocolVersion": MODERN}), {}),
    "no envelope": (_enveloped({}), {}),
    "an envelope that is not an object": (_enveloped(5), {}),  # type: ignore[arg-type]
    "an Mcp-Param header": (MODERN_CALL, {"mcp-param-a": "2"}),
    "a listing with a name header of a call": (_modern(GOOD["list"])[0], {"mcp-method": "tools/call"}),
    "a discovery": (_modern(_request("server/discover"))[0], {"mcp-method": "server/discover"}),
    "capabilities that are not capabilities": (
        _enveloped({**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": {"roots": "x"}}),
        {},
    ),
    "capabilities that are null": (_enveloped({**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": None}), {}),
    "client info without a version": (
        _enveloped({**ENVELOPE, "io.modelcontextprotocol/clientInfo": {"name": "x"}}),
        {},
    ),
    "a log level that is a number": (_enveloped({**ENVELOPE, "io.modelcontextprotocol/logLevel": 7}), {}),
    "a tool whose argument travels in a header, without it": _modern(
        _request("tools/call", {"name": "region", "arguments": {"region": "eu"}})
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_MODERN))
def test_sessionless_requests_the_lean_path_would_refuse_get_the_sdks_own_answer(
    servers: dict[str, int], case: str
) -> None:
    body, changes = HOSTILE_MODERN[case]
    responses = _both(servers, body, **{**MODERN_HEADERS, **changes})
    lean, sdk = responses["lean"], responses["sdk"]
    assert lean.status_code == sdk.status_code, (lean.text, sdk.text)
    for mine, theirs in zip(_messages(lean), _messages(sdk), strict=True):
        _same_message(mine, theirs, modern=True)


@pytest.mark.parametrize("repeated", ["mcp-method", "mcp-name", "mcp-protocol-version"])
def test_a_routing_header_sent_twice_is_refused_as_the_sdk_refuses_it(servers: dict[str, int], repeated: str) -> None:
    statuses = {}
    for label, port in servers.items():
        headers = _headers(port, **MODERN_HEADERS)
        twice = next(value for key, value in headers if key == repeated)
        statuses[label] = _raw_status(port, [*headers, (repeated, twice)], MODERN_CALL)
    assert statuses["lean"] == statuses["sdk"] == 400


def _raw_status(port: int, headers: list[tuple[str, str]], body: bytes) -> int:
    """Send a request byte for byte (an HTTP client would refuse repeated headers) and read its status."""
    head = "".join(f"{key}: {value}\r\n" for key, value in headers)
    request = f"POST /mcp HTTP/1.1\r\n{head}content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(request.encode() + body)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return int(reply.split(b" ", 2)[1])


@pytest.mark.parametrize("repeated", ["host", "origin"])
def test_a_repeated_header_is_read_as_the_sdk_reads_it(servers: dict[str, int], repeated: str) -> None:
    statuses = {}
    for label, port in servers.items():
        headers = _headers(port)
        foreign = "evil.example" if repeated == "host" else "http://evil.example"
        good = f"127.0.0.1:{port}" if repeated == "host" else f"http://127.0.0.1:{port}"
        headers = [(key, value) for key, value in headers if key != repeated]
        statuses[label] = _raw_status(port, [(repeated, foreign), (repeated, good), *headers], GOOD["call"])
    assert statuses["lean"] == statuses["sdk"] != 200


def test_a_declared_body_over_the_limit_is_refused_at_once(servers: dict[str, int]) -> None:
    statuses = {}
    for label, port in servers.items():
        headers = "".join(f"{key}: {value}\r\n" for key, value in _headers(port))
        head = f"POST /mcp HTTP/1.1\r\n{headers}content-length: 5000000\r\nconnection: close\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(head.encode() + b"{")
            statuses[label] = int(connection.recv(65536).split(b" ", 2)[1])
    assert statuses == {"lean": 413, "sdk": 413}


REPEATED = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"amount":1,"amount":1000}}}'
)


@pytest.mark.parametrize("protocol", [VERSION, MODERN])
@pytest.mark.parametrize("twice", ["arguments", "params"])
def test_a_key_sent_twice_above_the_arguments_is_refused_too(
    servers: dict[str, int], protocol: str, twice: str
) -> None:
    once = b'"arguments":{"amount":1}'
    if twice == "arguments":
        body = REPEATED.replace(b'"arguments":{"amount":1,"amount":1000}', once + b',"arguments":{"amount":1000}')
    else:
        params = b'{"name":"pay",' + once + b"}"
        body = (
            REPEATED.split(b',"params":')[0]
            + b',"params":'
            + params
            + b',"params":'
            + params.replace(b"1}", b"1000}")
            + b"}"
        )
    changes = {}
    if protocol == MODERN:
        changes = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "pay"}
        body = body[:-1] + b',"_meta":' + json.dumps(ENVELOPE).encode() + b"}" if twice == "arguments" else body
    PAID.clear()
    for label, response in _both(servers, body, **changes).items():
        assert response.status_code in (200, 400), (label, response.text)
    assert PAID == []  # paid neither 1 nor 1000


@pytest.mark.parametrize("protocol", [VERSION, MODERN])
def test_a_key_sent_twice_in_the_arguments_is_refused_on_the_lean_and_the_sdk_path(
    servers: dict[str, int], protocol: str
) -> None:
    body, changes = REPEATED, {}
    if protocol == MODERN:  # the sessionless protocol
        body = REPEATED.replace(b'"amount":1000}', b'"amount":1000},"_meta":' + json.dumps(ENVELOPE).encode())
        changes = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "pay"}
    PAID.clear()
    responses = _both(servers, body, **changes)
    for label, response in responses.items():
        assert response.status_code == 200, (label, response.text)
        (message,) = _messages(response)
        result = CallToolResult.model_validate(JSONRPCResponse.model_validate(message).result)
        assert result.is_error is True, label
        assert "could not be read as JSON" in result.content[0].text, (label, result.content[0].text)
        assert "the key 'amount' appears more than once in one object" in result.content[0].text
    assert PAID == []  # paid neither 1 nor 1000
    if protocol == VERSION:
        assert responses["lean"].headers["content-type"] == "application/json"  # the lean path answered
    else:
        assert _answered_by_the_lean_path(responses["lean"]) and not _answered_by_the_lean_path(responses["sdk"])


class _Refuses:
    def __call__(self) -> dict[str, Any]:
        raise RuntimeError("SECRET-inject-password")


@pytest.mark.parametrize("version", [VERSION, None])
def test_a_failing_inject_factory_is_an_is_error_result_without_its_text(version: str | None) -> None:
    """On the lean path (a 2025 version header) and on the SDK's (none) alike; a tool without injected values runs."""
    port = _port()
    app = http_app(TOOLS, inject=_Refuses())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        ends = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < ends
            time.sleep(0.02)
        headers = _headers(port, **{"mcp-protocol-version": version})
        response = _post(port, _request("tools/call", {"name": "balance", "arguments": {}}), headers)
        untouched = _post(port, GOOD["call"], headers)
    finally:
        server.should_exit = True
        thread.join(10)
    assert response.status_code == 200
    assert "SECRET" not in response.text
    (message,) = _messages(response)
    result = CallToolResult.model_validate(JSONRPCResponse.model_validate(message).result)
    assert result.is_error is True
    assert "The server failed while opening a session for tool 'balance'" in result.content[0].text
    (message,) = _messages(untouched)  # add takes no injected value: the factory is not called
    assert CallToolResult.model_validate(JSONRPCResponse.model_validate(message).result).structured_content == {
        "result": 5
    }
