"""MCP over the process's stdin and stdout, with an answer for every request line.

The ``mcp`` SDK's own stdio transport hands a line it cannot read to the session as an
exception (nothing answers it) and reads a request whose id is neither a string nor an integer
as a notification (nothing answers that either). Here each line is read once: a message goes to
the session as the SDK would deliver it, and anything else is answered on the spot with a
JSON-RPC error, ``-32700`` for text that is not JSON and ``-32600`` for JSON that is not a
message, carrying the request's id when it is a string or an integer and ``null`` otherwise.

A ``tools/call`` request keeps its line (`SentLine`), so the server reads the call's arguments
from the text the client sent, and refuses a key sent twice as any call's text is refused.

While the streams are open, file descriptor 0 reads the null device and 1 writes to stderr, so
neither a tool nor a child process it starts can take the client's bytes or write into the
replies; both are put back on exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from tinytools.providers._common import require

__all__ = ["SentLine", "stdio_streams"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams that ``mcp.server.lowlevel.Server.run`` takes, over stdio.

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    anyio = require("anyio", "mcp")
    message = require("mcp.shared.message", "mcp")
    reader = _Reader(require("mcp.types", "mcp"), message.SessionMessage, message.ServerMessageMetadata)
    wire_in, restore_in = _claim(0, os.open(os.devnull, os.O_RDONLY))
    wire_out, restore_out = _claim(1, os.dup(2))
    source = anyio.wrap_file(os.fdopen(wire_in, "rb", closefd=False))
    sink = anyio.wrap_file(os.fdopen(wire_out, "wb", closefd=False))
    received_send, received = anyio.create_memory_object_stream(0)
    sent, sent_receive = anyio.create_memory_object_stream(0)
    lock = anyio.Lock()
    written = anyio.Event()

    async def put(message: Any) -> None:
        async with lock:  # the session's replies and the reader's answers never interleave
            await sink.write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
            await sink.flush()

    async def read() -> None:
        async with received_send:
            async for line in source:
                message, answer = reader.read(line)
                if message is not None:
                    await received_send.send(message)
                elif answer is not None:
                    await put(answer)

    async def write() -> None:
        async with sent_receive:
            async for message in sent_receive:
                await put(message)
        written.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            yield received, sent
            sent.close()
            await written.wait()  # every reply is on the wire before the reader is stopped
            group.cancel_scope.cancel()
    finally:
        with contextlib.suppress(Exception):  # what tools printed is still in Python's buffer
            sys.stdout.flush()
        restore_out()
        restore_in()


class _Reader:
    """Reads one line as the message for the session, or as the error that answers it.

    A ``tools/call`` request carries its line (`SentLine`) as its request context, as the SDK's
    HTTP transports carry the HTTP request: the server reads the arguments from the text the
    client sent, so a key sent twice is refused as in any call's text.
    """

    __slots__ = ("metadata", "session_message", "types")

    def __init__(self, types: Any, session_message: Any, metadata: Any) -> None:
        self.types = types
        self.session_message = session_message
        self.metadata = metadata

    def read(self, line: bytes) -> tuple[Any, Any]:
        """``(message for the session, None)``, ``(None, answer)``, or both None for a blank line."""
        if not line.strip():
            return None, None
        try:
            message = self.types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:  # pydantic's ValidationError, its JSON parser's depth limit included
            return self._reread(line)
        if isinstance(message, self.types.JSONRPCNotification):  # few and small: read again for an id
            try:
                sent = json.loads(line)
            except (ValueError, RecursionError):  # what the SDK read, ours cannot: no id of ours to see
                sent = None
            return self._notification(sent, message)
        return self._delivered(message, line), None

    def _delivered(self, message: Any, line: bytes) -> Any:
        """The message for the session; a call keeps the line it came in."""
        if isinstance(message, self.types.JSONRPCRequest) and message.method == "tools/call":
            return self.session_message(message, metadata=self.metadata(request_context=SentLine(line)))
        return self.session_message(message)

    def _reread(self, line: bytes) -> tuple[Any, Any]:
        """A line the SDK's parser refused, parsed by ours (which nests deeper) and checked again."""
        try:
            sent = json.loads(line)
        except ValueError:
            return None, self._error(None, PARSE_ERROR, "Parse error: the line is not JSON text.")
        except RecursionError:
            return None, self._error(None, INVALID_REQUEST, "Invalid request: nested too deeply to read.")
        try:
            message = self.types.jsonrpc_message_adapter.validate_python(sent, by_name=False)
        except ValueError:
            return None, self._error(_echoed(sent), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message.")
        if isinstance(message, self.types.JSONRPCNotification):
            return self._notification(sent, message)
        return self._delivered(message, line), None

    def _notification(self, sent: Any, message: Any) -> tuple[Any, Any]:
        """A notification, unless it carried an id, which a request may only have as a string or integer."""
        if isinstance(sent, dict) and "id" in sent:
            return None, self._error(None, INVALID_REQUEST, "Invalid request: an id must be a string or an integer.")
        return self.session_message(message), None

    def _error(self, request_id: str | int | None, code: int, text: str) -> Any:
        data = self.types.ErrorData(code=code, message=text)
        return self.session_message(self.types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data))


class SentLine:
    """The line a request came in, read as the SDK's HTTP transports let a handler read the request body."""

    __slots__ = ("line",)

    headers = None
    """A line has no headers."""

    def __init__(self, line: bytes) -> None:
        self.line = line

    async def body(self) -> bytes:
        """The request's JSON text."""
        return self.line


def _echoed(sent: Any) -> str | int | None:
    """The request's id if JSON-RPC allows one there (a string or an integer), else None."""
    request_id = sent.get("id") if isinstance(sent, dict) else None
    return request_id if isinstance(request_id, str) or type(request_id) is int else None


def _claim(fd: int, stand_in: int) -> tuple[int, Callable[[], None]]:
    """Move the wire behind ``fd`` to a private descriptor and point ``fd`` at ``stand_in``.

    The private descriptor is never closed: a reading thread may still block on it after the
    streams close, and a closed number could be reused under it.
    """
    wire = os.dup(fd)
    os.dup2(stand_in, fd)
    os.close(stand_in)

    def restore() -> None:
        os.dup2(wire, fd)

    return wire, restore
