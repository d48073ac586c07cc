"""MCP over streamable HTTP: an ASGI app for a toolbox, built on the ``mcp`` SDK's session manager.

`http_app` wraps `build_server` in the SDK's ``StreamableHTTPSessionManager``. By default it is
stateless: every POST is a session of its own (its own dispatcher, its own injected values from
an ``inject`` function), nothing is kept between requests, and any number of server processes
can stand behind one address. Progress a tool reports travels back on the stream of the request
that made the call. The stateless app answers plain ``tools/list`` and ``tools/call`` requests
of both protocol eras on a lean path of its own (`tinytools.providers.mcp._lean_path`), where a
2025 client's cancellation reaches its call (`tinytools.providers.mcp._cancellations`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tinytools._public import publish
from tinytools._tool import Tool
from tinytools.providers._common import require
from tinytools.providers.mcp._lean_path import LeanPath
from tinytools.providers.mcp._server import Service

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["http_app", "serve_http"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def http_app(
    toolbox: Iterable[Tool[..., Any]],
    *,
    path: str = "/mcp",
    stateless: bool = True,
    json_response: bool = False,
    host: str = "127.0.0.1",
    name: str = "tinytools",
    version: str | None = None,
    instructions: str | None = None,
    **options: Any,
) -> Starlette:
    """An ASGI (Starlette) app serving the tools over MCP's streamable HTTP at ``path``.

    Args:
        toolbox: The tools, listed in their order.
        path: Where the MCP endpoint is.
        stateless: No session kept between requests (each request is a session of its own);
            False keeps SDK sessions, each with its own dispatcher and injected values.
        json_response: Answer with one JSON body instead of a server-sent event stream (a call's
            progress notifications are then not sent).
        host: The host the app is served on; for a loopback host, DNS rebinding protection is
            on (only loopback ``Host`` and ``Origin`` headers are accepted).
        name: The server name reported to clients.
        version: The server version reported to clients (by default tinytools' own).
        instructions: Optional instructions for the client's model.
        **options: Those of `build_server` that say how calls run (``dispatcher_factory``,
            ``dispatcher``, ``inject``, ``context``, ``stores``) and ``elicit`` (whether a
            client that shows forms is asked what a pending call waits for).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
        ValueError: The app is stateless and the toolbox has deferred tools (a search's reveal
            would last one request).
    """
    security = require("mcp.server.transport_security", "mcp")
    service = Service(toolbox, **options)
    if stateless and service.tools.deferred:
        raise ValueError(
            "deferred tools are revealed per session, and a stateless app has none: serve them with "
            "http_app(..., stateless=False) or over stdio"
        )
    server = service.server(name, version, instructions)
    loopback = host in _LOOPBACK
    settings = security.TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=list(_HOSTS) if loopback else [],
        allowed_origins=list(_ORIGINS) if loopback else [],
    )
    app: Starlette = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=stateless,
        json_response=json_response,
        host=host,
        transport_security=settings,
    )
    if stateless:
        hosts = tuple(settings.allowed_hosts) if loopback else None
        origins = tuple(settings.allowed_origins) if loopback else None
        app.add_middleware(
            LeanPath,
            service=service,
            path=path,
            hosts=hosts,
            origins=origins,
            sse=not json_response,
            server_info=server.server_info_stamp,
        )
    return app


def serve_http(toolbox: Iterable[Tool[..., Any]], host: str, port: int, **options: Any) -> None:
    """Serve `http_app` with uvicorn on ``host:port`` until interrupted (options as `http_app`).

    Raises:
        ImportError: The ``mcp`` extra (which brings uvicorn) is not installed.
    """
    uvicorn = require("uvicorn", "mcp")
    uvicorn.run(http_app(toolbox, host=host, **options), host=host, port=port, log_level="warning")


publish("tinytools.providers.mcp", http_app, serve_http)
