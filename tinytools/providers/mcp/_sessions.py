"""Each MCP session's injected values: made when a tool first needs them, torn down when the session ends.

A server's ``inject`` is a mapping every session shares, or a factory. A factory is called once
per session, and only when a call of that session is for a tool that takes an injected value;
it is called with a `SessionContext` (or with nothing, if it takes no parameter), and it may:

- return the mapping (or, an async function, an awaitable of it): nothing to tear down;
- return a context manager, sync or async, whose entered value is the mapping: leaving it is the
  teardown;
- be a generator function, sync or async, that yields the mapping once: what follows the
  ``yield`` is the teardown (as `contextlib.contextmanager`).

A sync factory, and a sync context manager's enter and exit, run on a worker thread, never on
the event loop. The teardown runs when the session ends: for the SDK's sessions, when the SDK
unwinds the connection's exit stack (the end of a stdio connection or of a stateful HTTP
session, and of each request of stateless HTTP or of the sessionless 2026-07-28 protocol); on
the lean HTTP path, when the request's answer is written. A factory or teardown that raises is
logged; the factory's failure fails the call that needed it, with no exception text sent.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tinytools._public import publish
from tinytools.providers._common import require

__all__ = ["Inject", "SessionContext", "SessionValues", "request_context"]

Inject = Mapping[str, Any] | Callable[..., Any]
"""Injected values: one mapping for every session, or a factory called per session (see the module)."""


@dataclass(frozen=True)
class SessionContext:
    """What the server knows of the session (and the request) a factory of injected values is called for."""

    number: int
    """This server's number for the session, unique in the process (the first part of its call ids)."""
    transport: str
    """``"stdio"`` or ``"http"``."""
    session_id: str | None = None
    """The transport's session id (a stateful HTTP session's ``Mcp-Session-Id``); None over stdio, over
    stateless HTTP and under the sessionless 2026-07-28 protocol, which have none."""
    protocol_version: str | None = None
    """The MCP protocol version of the request."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """The HTTP headers of the request whose call needed the values (names in lower case); empty over stdio."""
    principal: Any = None
    """Who that request authenticated as: the ASGI scope's ``user`` when authentication middleware
    set one (the SDK's bearer auth sets an ``AuthenticatedUser`` holding the access token); None
    for an anonymous request, and over stdio."""


def request_context(
    number: int, scope: Mapping[str, Any] | None, *, session_id: str | None = None, protocol_version: str | None = None
) -> SessionContext:
    """What a request says of session ``number``: its ASGI ``scope`` over HTTP, None over stdio.

    Headers are read as the SDK reads them (the first of a repeated name); the principal is the
    scope's ``user`` unless it is anonymous.
    """
    if scope is None:
        return SessionContext(number, "stdio", session_id, protocol_version)
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in reversed(scope["headers"])}
    user = scope.get("user")
    principal = user if user is not None and getattr(user, "is_authenticated", True) else None
    version = protocol_version or headers.get("mcp-protocol-version")
    return SessionContext(number, "http", session_id, version, headers, principal)


class SessionValues:
    """One session's injected values: opened once, on first need, and closed once.

    Opening is shielded from cancellation: a call cancelled while the factory runs still leaves
    what it made registered, for `close` to tear down.
    """

    __slots__ = ("_anyio", "_close", "_inject", "_lock", "_values")

    def __init__(self, inject: Inject | None) -> None:
        self._inject = inject
        self._values: Mapping[str, Any] | None = None if callable(inject) else inject
        self._close: Callable[[], Awaitable[None]] | None = None
        self._lock: Any = None
        self._anyio: Any = None

    async def get(self, context: SessionContext) -> Mapping[str, Any] | None:
        """The session's values, made by the factory the first time (with ``context``).

        Raises:
            Exception: The factory failed, or made something that is not a mapping (logged); the
                next call of the session tries again.
        """
        if self._values is not None or not callable(self._inject):
            return self._values
        async with self._locked():
            if self._values is None:
                try:
                    with self._anyio.CancelScope(shield=True):
                        self._values, self._close = await _open(self._inject, context)
                except Exception:
                    _logger().exception("MCP session %s: the inject factory failed", context.number)
                    raise
        return self._values

    async def close(self) -> None:
        """Tear the values down, if the factory made them with a teardown; later calls open them again."""
        if self._lock is None:  # never opened
            return
        async with self._locked():
            close, self._close = self._close, None
            self._values = None
        if close is None:
            return
        try:
            await close()
        except Exception:  # the session has ended: nobody to tell but the log
            _logger().exception("an MCP session's injected values failed to close")

    def _locked(self) -> Any:
        """The lock of opening and closing, made on first use (on the event loop)."""
        if self._lock is None:
            self._anyio = require("anyio", "mcp")
            self._lock = self._anyio.Lock()
        return self._lock


async def _open(
    factory: Callable[..., Any], context: SessionContext
) -> tuple[Mapping[str, Any], Callable[[], Awaitable[None]] | None]:
    """Call the factory; return its mapping and, when it has one, its teardown."""
    to_thread = require("anyio.to_thread", "mcp").run_sync
    args = (context,) if _takes_context(factory) else ()
    if inspect.isasyncgenfunction(factory):
        made: Any = contextlib.asynccontextmanager(factory)(*args)
    elif inspect.isgeneratorfunction(factory):
        made = contextlib.contextmanager(factory)(*args)
    elif inspect.iscoroutinefunction(factory):
        made = await factory(*args)
    else:
        made = await to_thread(partial(factory, *args))
    if inspect.isawaitable(made):
        made = await made
    close: Callable[[], Awaitable[None]] | None = None
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        manager, made = made, await made.__aenter__()
        close = partial(manager.__aexit__, None, None, None)
    elif not isinstance(made, Mapping) and hasattr(made, "__enter__") and hasattr(made, "__exit__"):
        manager, made = made, await to_thread(made.__enter__)
        close = partial(to_thread, partial(manager.__exit__, None, None, None))
    if not isinstance(made, Mapping):
        if close is not None:
            await close()
        raise TypeError(f"the inject factory made {type(made).__name__}, not a mapping of names to values")
    return made, close


def _takes_context(factory: Callable[..., Any]) -> bool:
    """Whether the factory takes an argument (the `SessionContext`); a factory of no parameters is called bare."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): give it the context
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def _logger() -> logging.Logger:
    return logging.getLogger("tinytools.mcp")


publish("tinytools.providers.mcp", SessionContext)
