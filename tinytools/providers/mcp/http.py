"""MCP over streamable HTTP: an ASGI app for a toolbox, built on the ``mcp`` SDK's session manager.

`http_app` wraps `build_server` in the SDK's ``StreamableHTTPSessionManager``. By default it is
stateless: every POST is a session of its own (its own dispatcher, its own injected values from
an ``inject`` function), nothing is kept between requests, and any number of server processes
can stand behind one address. Progress a tool reports travels back on the stream of the request
that made the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tinytools.providers._common import require
from tinytools.providers.mcp.server import build_server
from tinytools.tool import Tool

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["http_app", "serve_http"]


def http_app(
    toolbox: Iterable[Tool[..., Any]],
    *,
    path: str = "/mcp",
    stateless: bool = True,
    json_response: bool = False,
    host: str = "127.0.0.1",
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
        host: The host the app is served on; for a loopback host the SDK turns on its DNS
            rebinding protection (only loopback ``Host`` and ``Origin`` headers are accepted).
        **options: Those of `build_server` (``dispatcher_factory``, ``inject``, ``context``,
            ``stores``, ``name``, ...).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    server = build_server(toolbox, **options)
    app: Starlette = server.streamable_http_app(
        streamable_http_path=path, stateless_http=stateless, json_response=json_response, host=host
    )
    return app


def serve_http(toolbox: Iterable[Tool[..., Any]], host: str, port: int, **options: Any) -> None:
    """Serve `http_app` with uvicorn on ``host:port`` until interrupted (options as `http_app`).

    Raises:
        ImportError: The ``mcp`` extra (which brings uvicorn) is not installed.
    """
    uvicorn = require("uvicorn", "mcp")
    uvicorn.run(http_app(toolbox, host=host, **options), host=host, port=port, log_level="warning")
