"""The stateless HTTP app's lean path: plain ``tools/list`` and ``tools/call`` answered without the SDK.

A plain ``tools/list`` or ``tools/call``, after the 2025 handshake or under the sessionless
2026-07-28 protocol (each request carrying its version and the client's capabilities in
``_meta``, and its method and tool name in headers), is answered here (`LeanPath`): the body is
decoded with msgspec (the call's arguments kept as the JSON text sent, which the pipeline decodes
strictly: a key sent twice is refused), the call runs through the same `Service` as the SDK's
handlers, and one JSON response is written (an event stream when the call reports progress),
skipping the SDK's per-request transport, streams and task group, which cost milliseconds of CPU
a call. Anything else (``initialize``, ``server/discover``, notifications, a request the lean path
would have to refuse) goes to the SDK unchanged, so every error the SDK answers is its own. A
2025 client's cancellation reaches its call through its session key (`tinytools.providers.mcp._cancellations`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec

from tinytools._events import ToolProgress
from tinytools._results import ToolCall
from tinytools._run.tracing import within_trace
from tinytools.providers._common import require
from tinytools.providers.mcp._cancellations import keyed, session_key
from tinytools.providers.mcp._handed import abilities
from tinytools.providers.mcp._server import Service
from tinytools.providers.mcp._sessions import request_context
from tinytools.providers.mcp._wire import object_text

__all__ = ["LeanPath"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_HANDSHAKE_VERSIONS = frozenset({b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"})
"""The protocol versions reached by the initialize handshake: the SDK's stateless path."""
_MAX_NESTING = 150
"""Bodies with more brackets than this go to the SDK, whose JSON reader refuses deep nesting."""
_MAX_BODY = 4 * 1024 * 1024
"""The SDK's default request size limit: a larger body goes to the SDK, which refuses it."""
_CANCELLED = {"code": -32800, "message": "Request cancelled"}
"""The error a cancelled request is answered with, as the SDK answers it on the 2025-era wire."""
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_ROUTING = frozenset({b"mcp-protocol-version", b"mcp-method", b"mcp-name"})
"""The 2026-07-28 headers that route a request: each may come once."""


class _Request(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC request as the lean path takes it; anything else decodes as an error.

    A ``result`` or ``error`` key beside the method, or any key of another kind of message,
    is refused, so such a body goes to the SDK.
    """

    jsonrpc: str
    method: str
    id: int | str
    params: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)
    """Each param as its own JSON text: a call's arguments reach the pipeline as sent."""


class _Notification(msgspec.Struct, forbid_unknown_fields=True):
    """A JSON-RPC notification as the lean path reads it: only ``notifications/cancelled`` is acted on."""

    jsonrpc: str
    method: str
    params: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


class _Method(msgspec.Struct):
    """Just the method of a JSON-RPC message (other keys ignored)."""

    method: str = ""


_DECODE = msgspec.json.Decoder(_Request).decode
_DECODE_NOTIFICATION = msgspec.json.Decoder(_Notification).decode
_DECODE_METHOD = msgspec.json.Decoder(_Method).decode
_ENCODE = msgspec.json.Encoder().encode
_SESSION_ENDED = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found: its client ended it"}}'
)
"""The answer to a request whose session key its client ended with ``DELETE`` (HTTP 404, as MCP asks)."""
_JSON_HEADERS = [(b"content-type", b"application/json")]
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]


_Call = tuple[str, "bytes | dict[str, Any]", "str | int | None", "str | None", "frozenset[str]"]
"""A lean ``tools/call``: tool name, arguments, progress token, the client's ``traceparent``, and what
the client takes (`abilities`: a call that waits is answered as a question or a task)."""


class LeanPath:
    """ASGI middleware answering plain stateless ``tools/list`` and ``tools/call`` requests itself.

    A request qualifies when it is a POST to the endpoint that the SDK's stateless path would
    accept as it is: a handshake protocol version header, a JSON content type, an ``Accept``
    header the SDK requires, a ``Host`` and ``Origin`` the DNS rebinding protection allows, a
    body within the size limit that is one JSON-RPC request for one of the two methods. Every other
    request reaches the SDK app with its body as it was sent. A call that asks for progress is
    answered as an event stream once it reports some (`_Stream`).

    A client that disconnects mid-call cancels the call, as closing the SDK's stream does, and
    so does its ``notifications/cancelled`` (see the module: the session key it is read by).
    """

    def __init__(
        self,
        app: App,
        *,
        service: Service,
        path: str,
        hosts: tuple[str, ...] | None,
        origins: tuple[str, ...] | None,
        sse: bool,
        server_info: dict[str, Any],
    ) -> None:
        self.app = app
        self.service = service
        self.path = path
        self.hosts = hosts
        self.origins = origins
        self.sse = sse
        self.listed = _ENCODE({"tools": service.listed})
        self.stamp = {_SERVER_INFO: server_info}
        """What every 2026-07-28 result says of the server in its ``_meta``."""
        modern = {"cacheScope": "private", "resultType": "complete", "tools": service.listed, "ttlMs": 0}
        self.listed_modern = _ENCODE({**modern, "_meta": self.stamp})
        self.modern = frozenset(
            version.encode() for version in require("mcp_types.version", "mcp").MODERN_PROTOCOL_VERSIONS
        )
        """The sessionless protocol versions: each request says its version and the client's capabilities."""
        self.anyio = require("anyio", "mcp")
        self.validate = require("mcp_types.methods", "mcp").validate_client_request
        """The SDK's own check of a request's params for its protocol version (``_meta`` included)."""
        self.headed = frozenset(tool.name for tool in service.tools if b'"x-mcp-header"' in _ENCODE(tool.input_schema))
        """Tools whose arguments a 2026-07-28 client also sends as ``Mcp-Param-*`` headers, for the SDK to check."""
        self.cancellations = service.cancellations
        """The calls now running that a 2025 client's session key can cancel (the SDK's handling's too)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope) != self.path:
            await self.app(scope, receive, send)
            return
        headers = dict(reversed(scope["headers"]))  # the first of repeated headers, as the SDK reads
        key = session_key(headers)
        if key is not None and key in self.cancellations.ended:  # the client ended this session
            await _respond(send, _SESSION_ENDED, status=404)
            return
        if scope["method"] != "POST":
            sessionless = headers.get(b"mcp-protocol-version") in self.modern
            if key is None or sessionless or scope["method"] not in ("GET", "DELETE") or not self._trusted(headers):
                await self.app(scope, receive, send)
            elif scope["method"] == "GET":  # a stateless server has no stream of its own to offer
                await _respond(send, b"", status=405)
            else:  # the client ends its session: its calls still running end with it
                self.cancellations.close(key)
                await _respond(send, b"", status=200)
            return
        version = self._qualifies(headers)
        if version is None and not _may_open(headers):
            await self.app(scope, receive, send)
            return
        chunks, complete = await _read_body(receive)
        if version is None:  # perhaps a handshake: the SDK answers it, and the answer carries a new session key
            opens = complete and _method(chunks) == "initialize" and self._trusted(headers)
            await self.app(scope, _replay(chunks, receive), keyed(send) if opens else send)
            return
        modern = version in self.modern
        if modern:
            key = None  # sessionless: a request is cancelled by closing its stream
        request = _decoded(chunks) if complete else None
        if request is None and key is not None and complete and self._cancelled(key, chunks):
            await _respond(send, b"", status=202)  # a notification's answer, as the SDK gives it
            return
        if request is None or request.jsonrpc != "2.0" or isinstance(request.id, bool):
            await self.app(scope, _replay(chunks, receive), send)
            return
        if modern and not _enveloped(request, version, headers, scope["headers"], self.headed):
            await self.app(scope, _replay(chunks, receive), send)
            return
        if not self._valid(request, version):
            await self.app(scope, _replay(chunks, receive), send)
            return
        if request.method == "tools/list":
            if not _plain_listing(request.params):
                await self.app(scope, _replay(chunks, receive), send)
                return
            listed = self.listed_modern if modern else self.listed
            await _respond(send, b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (_ENCODE(request.id), listed))
            return
        call = self._call(request)
        if call is None:
            await self.app(scope, _replay(chunks, receive), send)
            return
        await self._answer(call, request.id, key, scope, receive, send, self.stamp if modern else None)

    def _valid(self, request: _Request, version: bytes) -> bool:
        """Whether the SDK would take the request's params as they are (else it answers them itself)."""
        try:
            params = {key: msgspec.json.decode(value) for key, value in request.params.items()}
            self.validate(request.method, version.decode(), params)
        except Exception:  # a pydantic ValidationError, or a method or version the SDK does not know
            return False
        return True

    def _trusted(self, headers: dict[bytes, bytes]) -> bool:
        """Whether the ``Host`` and ``Origin`` pass the DNS rebinding protection (always, without it)."""
        if self.hosts is None:
            return True
        origin = headers.get(b"origin")
        return _allowed(headers.get(b"host"), self.hosts) and (origin is None or _allowed(origin, self.origins or ()))

    def _cancelled(self, key: bytes, chunks: list[Message]) -> bool:
        """Whether the body is a ``notifications/cancelled`` of this key's, now applied."""
        try:
            notification = _DECODE_NOTIFICATION(b"".join(message.get("body", b"") for message in chunks))
            request_id = _param(notification.params, "requestId")
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        if notification.method != "notifications/cancelled" or notification.jsonrpc != "2.0":
            return False
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return False
        self.cancellations.cancel((key, request_id))
        return True

    def _qualifies(self, headers: dict[bytes, bytes]) -> bytes | None:
        """The protocol version of a POST the lean path may take, from its headers alone; else None."""
        version = headers.get(b"mcp-protocol-version")
        if version not in _HANDSHAKE_VERSIONS and version not in self.modern:
            return None
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > _MAX_BODY:  # the SDK refuses it from the header alone
            return None
        content_type = headers.get(b"content-type", b"")
        if not content_type.lower().startswith(b"application/json"):
            return None
        if b"application/json" not in (part.strip() for part in content_type.split(b";")[0].split(b",")):
            return None
        accepted = {part.split(b";")[0].strip().lower() for part in headers.get(b"accept", b"").split(b",")}
        json_ok = bool(accepted & {b"application/json", b"application/*", b"*/*"})
        sse_ok = bool(accepted & {b"text/event-stream", b"text/*", b"*/*"})
        if not json_ok or (self.sse and not sse_ok):
            return None
        return version if self._trusted(headers) else None

    def _call(self, request: _Request) -> _Call | None:
        """A ``tools/call``'s tool name, arguments, progress token, trace parent and what its client takes.

        None leaves it to the SDK (a retry answering a question too).

        The arguments are the JSON text the client sent, which the pipeline decodes as strictly
        as any call's text (a key sent twice is refused). Progress is sent only on an event
        stream; with JSON responses a token is ignored, as the SDK does.
        """
        if request.method != "tools/call":
            return None
        params = request.params
        if not params.keys() <= {"name", "arguments", "_meta"}:
            return None
        name, meta = _param(params, "name"), _param(params, "_meta", {})
        sent = params.get("arguments")
        arguments = object_text(sent)
        if not isinstance(name, str) or (arguments is None and sent is not None and bytes(sent) != b"null"):
            return None
        if not _plain_meta(meta):
            return None
        token = meta.get("progressToken")
        parent = meta.get("traceparent")  # the client's span: the call's span continues its trace
        trace = parent if isinstance(parent, str) else None
        takes = abilities(meta)  # a 2025 request's _meta names no capabilities
        return name, {} if arguments is None else arguments, token if self.sse else None, trace, takes

    async def _answer(
        self,
        call: _Call,
        request_id: int | str,
        key: bytes | None,
        scope: Scope,
        receive: Receive,
        send: Send,
        stamp: dict[str, Any] | None,
    ) -> None:
        """Run the call as a session of its own, whose injected values end with it, and answer.

        With the client's session key, the call is kept in `cancellations` while it runs, for the
        client's cancellation to find. ``stamp`` is the ``_meta`` of a 2026-07-28 result.
        """
        name, arguments, token, trace, takes = call
        stream = None if token is None else _Stream(send, token)
        slot = None if key is None else (key, request_id)
        if slot is not None and self.cancellations.came_first(slot):
            await _respond(send, _refused(request_id))
            return
        try:
            session = self.service.routes.new_session(reports=token is not None)
        except Exception:  # the application's dispatcher factory failed
            fault = self.service.fault(name, str(request_id), "opening a session")
            await _respond(send, _result(request_id, fault, stamp))
            return
        answer: dict[str, Any] | None = None
        gone = False
        running = None
        try:
            async with self.anyio.create_task_group() as group:

                async def watch() -> None:
                    nonlocal gone
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    gone = True
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                if slot is not None:
                    running = self.cancellations.start(slot, group.cancel_scope)
                tool_call = ToolCall(f"{session.number}/{request_id}", name, arguments)
                context = request_context(session.number, scope)
                with within_trace(trace):
                    answer = await self.service.call(
                        session, tool_call, context, None if stream is None else stream.progress, takes=takes
                    )
                group.cancel_scope.cancel()
        finally:
            if slot is not None and running is not None:
                self.cancellations.end(slot, running)
            with self.anyio.CancelScope(shield=True):
                await session.values.close()  # the request was the session
        if gone:
            return
        if running is not None and running.asked:
            body = _refused(request_id)
        elif answer is None:
            return
        else:
            body = _result(request_id, answer, stamp)
        await (_respond(send, body) if stream is None else stream.end(body))


def _result(request_id: int | str, answer: dict[str, Any], stamp: dict[str, Any] | None) -> bytes:
    """A call's answer; under the 2026-07-28 protocol it says whether it is complete, and names the server."""
    if stamp is not None:
        answer = {"resultType": "complete", **answer, "_meta": {**answer.get("_meta", {}), **stamp}}
    return b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (_ENCODE(request_id), _ENCODE(answer))


def _refused(request_id: int | str) -> bytes:
    """The answer to a request its client cancelled."""
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (_ENCODE(request_id), _ENCODE(_CANCELLED))


class _Stream:
    """One call's answer as a server-sent event stream: its progress, then its response.

    The stream starts with the first progress notification; a call that reports none is
    answered with one JSON body, as the SDK answers a request whose handler sends nothing first.
    """

    __slots__ = ("send", "started", "token")

    def __init__(self, send: Send, token: str | int) -> None:
        self.send = send
        self.token = token
        self.started = False

    async def progress(self, event: ToolProgress) -> None:
        params: dict[str, Any] = {"progressToken": self.token, "progress": event.done}
        if event.total is not None:
            params["total"] = event.total
        if event.message is not None:
            params["message"] = event.message
        notification = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
        if not self.started:
            self.started = True
            await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        await self.send({"type": "http.response.body", "body": _event(_ENCODE(notification)), "more_body": True})

    async def end(self, body: bytes) -> None:
        if not self.started:
            await _respond(self.send, body)
            return
        await self.send({"type": "http.response.body", "body": _event(body)})


def _event(data: bytes) -> bytes:
    return b"event: message\r\ndata: %b\r\n\r\n" % data


def _plain_meta(meta: object) -> bool:
    """A request's ``_meta`` the SDK takes: an object whose progress token, if any, is a string or an integer."""
    if not isinstance(meta, dict):
        return False
    if "progressToken" not in meta:
        return True
    token = meta["progressToken"]
    return isinstance(token, str | int) and not isinstance(token, bool)


def _plain_listing(params: dict[str, msgspec.Raw]) -> bool:
    """``tools/list`` params the SDK takes: at most a string cursor and a plain ``_meta``."""
    if not params.keys() <= {"cursor", "_meta"}:
        return False
    cursor = _param(params, "cursor")
    return (cursor is None or isinstance(cursor, str)) and _plain_meta(_param(params, "_meta", {}))


def _param(params: dict[str, msgspec.Raw], name: str, default: Any = None) -> Any:
    """One param, decoded (``default`` when it is absent)."""
    raw = params.get(name)
    return default if raw is None else msgspec.json.decode(raw)


def _route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _allowed(value: bytes | None, allowed: tuple[str, ...]) -> bool:
    """The SDK's rule: an exact match, or ``base:*`` matching ``base:`` and any port."""
    if not value:
        return False
    text = value.decode("latin-1")
    return any(text == entry or (entry.endswith(":*") and text.startswith(entry[:-1])) for entry in allowed)


async def _read_body(receive: Receive) -> tuple[list[Message], bool]:
    """The request's body messages, read up to the size limit; and whether the body is complete."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        size += len(message.get("body", b""))
        if size > _MAX_BODY:
            return messages, False
        if not message.get("more_body", False):
            return messages, True


def _decoded(messages: list[Message]) -> _Request | None:
    body = b"".join(message.get("body", b"") for message in messages)
    if body.count(b"[") + body.count(b"{") > _MAX_NESTING:  # may nest deeper than the SDK reads
        return None
    try:
        request = _DECODE(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if body.count(b'"arguments"') > 1 or body.count(b'"params"') > 1:  # perhaps sent twice: the SDK's path
        return None  # reads the whole text, and refuses a call whose request names a key twice
    return request


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` for the SDK: the messages already read, then the rest of the request."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _respond(send: Send, body: bytes, *, status: int = 200) -> None:
    headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())] if body else [(b"content-length", b"0")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _enveloped(
    request: _Request,
    version: bytes,
    headers: dict[bytes, bytes],
    raw: list[tuple[bytes, bytes]],
    headed: frozenset[str],
) -> bool:
    """Whether a 2026-07-28 request is one the SDK would serve as it is: its envelope and headers agree.

    ``_meta`` carries the header's protocol version and the client's capabilities, ``Mcp-Method``
    names the body's method and, for a call, ``Mcp-Name`` its tool (an ASCII name, sent as it is);
    no routing header comes twice, no ``Mcp-Param-*`` header asks for a check of its own, and the
    tool has no argument a client sends as such a header (``x-mcp-header``, in ``headed``).
    Anything else is the SDK's to check.
    """
    try:
        meta = _param(request.params, "_meta")
        name = _param(request.params, "name") if request.method == "tools/call" else None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    if not isinstance(meta, dict) or meta.get(_VERSION_META) != version.decode() or _CAPABILITIES_META not in meta:
        return False
    if headers.get(b"mcp-method") != request.method.encode():
        return False
    if request.method == "tools/call" and (
        not isinstance(name, str) or not name.isascii() or headers.get(b"mcp-name") != name.encode() or name in headed
    ):
        return False
    seen = [key for key, _ in raw if key in _ROUTING or key.startswith(b"mcp-param-")]
    return len(seen) == len(set(seen)) and not any(key.startswith(b"mcp-param-") for key in seen)


def _may_open(headers: dict[bytes, bytes]) -> bool:
    """Whether a POST may be a 2025 handshake's ``initialize``: JSON, of no protocol version or a handshake's."""
    version = headers.get(b"mcp-protocol-version")
    if version is not None and version not in _HANDSHAKE_VERSIONS:
        return False
    length = headers.get(b"content-length", b"0")
    return headers.get(b"content-type", b"").lower().startswith(b"application/json") and (
        not length.isdigit() or int(length) <= _MAX_BODY
    )


def _method(messages: list[Message]) -> str:
    """The method of the JSON-RPC message in the body, or ``""``."""
    try:
        return _DECODE_METHOD(b"".join(message.get("body", b"") for message in messages)).method
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""
