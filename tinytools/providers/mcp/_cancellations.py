"""Cancelling a call over stateless HTTP from another request: session keys, and the calls they reach.

A 2025-protocol client cancels a call with a ``notifications/cancelled`` request of its own, which
a stateless server would read in a fresh session with nothing to cancel. So the stateless app
gives each client a session key at the handshake (an ``Mcp-Session-Id`` of 128 random bits, which
clients send back with every request; nothing is stored for it) and keeps the lean path's running
calls by key and request id (`Cancellations`), in the process running them: a cancellation with
the same key finds its call and cancels it (the tool's token is set), and the call is answered
``Request cancelled``, as the SDK answers one. A cancellation that overtakes its request (the two
travel on two connections) is kept a while, and the request is answered so without running. The
key is unguessable, so no client can cancel another's call; a client's ``DELETE`` ends its
session: the calls it still has running are cancelled, and a later request with the key is
answered 404, as a session that ended is (the process remembers the last `ENDED` keys). Behind
several processes, a cancellation reaches the call when it lands on the process running it (one
process, or routing by ``Mcp-Session-Id``). The 2026-07-28 protocol has no session: it cancels by
closing the request's stream, which ends the call on any path.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["Cancellations", "Running", "Slot", "keyed", "session_key"]

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Slot = tuple[bytes, "int | str"]
"""A call as its client names it: the session key, and the request's id."""

SESSION_HEADER = b"mcp-session-id"
KEY_PREFIX = b"tt-"
"""How the session keys given here begin (then 32 hex digits): another id is the SDK's business."""
EARLY = 1024
"""Most cancellations kept for requests not (or no longer) running."""
ENDED = 16384
"""Most session keys remembered as ended (by ``DELETE``): a request with one is answered 404."""
LONGEST_ID = 128
"""Longest string request id a cancellation is kept for before its request: the table stays small."""


class Running:
    """A call now running, as its client's cancellation finds it."""

    __slots__ = ("asked", "scope")

    def __init__(self, scope: Any) -> None:
        self.scope = scope
        """The anyio cancel scope the call runs in."""
        self.asked = False
        """Whether its client cancelled it (a ``notifications/cancelled`` or a ``DELETE``): it is
        answered ``Request cancelled``, where a call whose client went away is not answered."""

    def cancel(self) -> None:
        self.asked = True
        self.scope.cancel()


class Cancellations:
    """The calls of one app now running, by session key and request id, and the cancellations that came first."""

    __slots__ = ("early", "ended", "running")

    def __init__(self) -> None:
        self.running: dict[Slot, Running] = {}
        self.early: dict[Slot, None] = {}
        """Cancellations that found no call running, oldest first (at most `EARLY`)."""
        self.ended: dict[bytes, None] = {}
        """Session keys whose client ended its session, oldest first (at most `ENDED`)."""

    def came_first(self, slot: Slot) -> bool:
        """Whether the call's cancellation came before it (then it must not run); the cancellation is used up."""
        if slot not in self.early:
            return False
        del self.early[slot]
        return True

    def start(self, slot: Slot, scope: Any) -> Running:
        """Keep a call that starts running in ``scope``, for its client's cancellation to find."""
        running = self.running[slot] = Running(scope)
        return running

    def end(self, slot: Slot, running: Running) -> None:
        """Forget a call that ended (never a newer call of the same id)."""
        if self.running.get(slot) is running:
            del self.running[slot]

    def cancel(self, slot: Slot) -> None:
        """Cancel the call, or keep the cancellation for a request still on its way."""
        running = self.running.get(slot)
        if running is not None:
            running.cancel()
            return
        if isinstance(slot[1], str) and len(slot[1]) > LONGEST_ID:
            return
        self.early[slot] = None  # overtook its request, or came after its answer: kept a while
        if len(self.early) > EARLY:
            del self.early[next(iter(self.early))]

    def close(self, key: bytes) -> None:
        """End the session of ``key``: every call its client still has running is cancelled, and the key refused."""
        for slot in [slot for slot in self.running if slot[0] == key]:
            self.running[slot].cancel()
        self.ended[key] = None
        if len(self.ended) > ENDED:
            del self.ended[next(iter(self.ended))]


def session_key(headers: dict[bytes, bytes]) -> bytes | None:
    """The session key this app gave the client, from its ``Mcp-Session-Id``; None for any other id."""
    key = headers.get(SESSION_HEADER)
    return key if key is not None and key.startswith(KEY_PREFIX) and len(key) == 35 else None


def keyed(send: Send) -> Send:
    """``send`` giving a successful answer a new session key, unless the SDK gave one itself."""

    async def keyed(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 200:
            headers = list(message.get("headers", []))
            if all(name.lower() != SESSION_HEADER for name, _ in headers):
                headers.append((SESSION_HEADER, KEY_PREFIX + secrets.token_hex(16).encode()))
                message = {**message, "headers": headers}
        await send(message)

    return keyed
