"""An MCP server for a toolbox: ``tools/list`` and ``tools/call`` through the dispatcher.

Every ``tools/call`` goes through the dispatcher, so validation, policies and budgets apply as
they do anywhere else. A tool's `Progress` reaches the client that asked for progress, and only
that client: the call id is ``<session>/<request id>``, unique across the server's sessions
(two clients of one server use the same JSON-RPC ids).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Awaitable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tinytools.events import ToolEvent, ToolProgress
from tinytools.providers._common import require
from tinytools.providers.mcp.stdio import stdio_streams
from tinytools.providers.mcp.wire import check_output, export_tools, write_results
from tinytools.results import ToolCall, ToolResult
from tinytools.run.dispatcher import Dispatcher
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["AsyncDispatcher", "aserve", "build_server", "serve"]


class AsyncDispatcher(Protocol):
    """Anything that runs one call from async code, such as a `Dispatcher`."""

    def adispatch(self, call: ToolCall, /) -> Awaitable[ToolResult]:
        """Run one call and return its result."""
        ...


def build_server(
    toolbox: Iterable[Tool[..., Any]],
    *,
    dispatcher: AsyncDispatcher | None = None,
    name: str = "tinytools",
    version: str | None = None,
    instructions: str | None = None,
) -> Server[Any]:
    """An MCP server (``mcp.server.lowlevel.Server``) that lists and calls the tools.

    Args:
        toolbox: The tools to list (a `Toolbox` or any iterable of tools).
        dispatcher: Runs each call (``adispatch(call)``), such as a configured
            `Dispatcher`; by default ``Dispatcher(toolbox)``, whose progress events reach the
            client that made the call.
        name: The server name reported to clients.
        version: The server version reported to clients (by default tinytools' own).
        instructions: Optional instructions for the client's model.

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    lowlevel = require("mcp.server.lowlevel", "mcp")
    types = require("mcp.types", "mcp")
    tools = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)
    listed = types.ListToolsResult(tools=[types.Tool.model_validate(entry) for entry in export_tools(tools)])
    routes = _Routes()
    run = (dispatcher if dispatcher is not None else Dispatcher(tools, on_event=routes.report)).adispatch

    async def list_tools(context: Any, params: Any) -> Any:
        return listed

    async def call_tool(context: Any, params: Any) -> Any:
        call = ToolCall(routes.call_id(context), params.name, params.arguments or {})
        routes.open(call.id, context, params)
        try:
            result = check_output(await run(call), tools.get(call.name))
        finally:
            routes.close(call.id)
        return types.CallToolResult.model_validate(write_results([result])[0])

    server: Server[Any] = lowlevel.Server(
        name,
        version=_version() if version is None else version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


class _Routes:
    """Which session, progress token and request each running call reports its progress to."""

    __slots__ = ("_count", "_open", "_sessions")

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._count = itertools.count(1)
        self._open: dict[str, tuple[Any, Any, Any]] = {}

    def call_id(self, context: Any) -> str:
        """``<session>/<request id>``: JSON-RPC ids are unique within one session only."""
        session = context.session
        number = self._sessions.get(session)
        if number is None:
            number = self._sessions[session] = next(self._count)
        request_id = getattr(context, "request_id", None)
        return f"{number}/{'-' if request_id is None else request_id}"

    def open(self, call_id: str, context: Any, params: Any) -> None:
        token = _progress_token(context, params)
        if token is not None:
            self._open[call_id] = (context.session, token, getattr(context, "request_id", None))

    def close(self, call_id: str) -> None:
        self._open.pop(call_id, None)

    async def report(self, event: ToolEvent) -> None:
        route = self._open.get(event.call_id)
        if route is not None and isinstance(event, ToolProgress):
            session, token, request_id = route
            await session.send_progress_notification(
                token, event.done, event.total, event.message, related_request_id=request_id
            )


def _progress_token(context: Any, params: Any) -> Any:
    """The client's progress token for this request, if it asked for progress."""
    raw = getattr(context, "params", None)
    meta = raw.get("_meta") if isinstance(raw, Mapping) else None
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    if token is None:
        meta_object = getattr(context, "meta", None) or getattr(params, "meta", None)
        token = getattr(meta_object, "progress_token", None) or getattr(meta_object, "progressToken", None)
    return None if isinstance(token, bool) else token


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tinytools")
    except PackageNotFoundError:
        return ""


async def aserve(toolbox: Iterable[Tool[..., Any]], **options: Any) -> None:
    """Serve the tools over stdio until the client disconnects (options as `build_server`).

    Every request line gets an answer: one the SDK cannot read is answered with a JSON-RPC
    error (see `tinytools.providers.mcp.stdio`).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    server = build_server(toolbox, **options)
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(toolbox: Iterable[Tool[..., Any]], **options: Any) -> None:
    """Run the tools as an MCP server over stdio, blocking until the client disconnects.

    Options are those of `build_server` (``dispatcher``, ``name``, ``version``,
    ``instructions``).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    anyio = require("anyio", "mcp")
    anyio.run(partial(aserve, toolbox, **options))
