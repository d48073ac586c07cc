"""`dispatch`, `adispatch`, `dispatch_many`, `adispatch_many`: one call (or batch) in one line.

Each is a dispatcher's call, not an implementation of its own: `dispatch` and `adispatch` use the
toolbox's default `Dispatcher` (no limits, no middleware, no events; made on first use and kept
as the toolbox's `_dispatcher` until it changes), and the batch functions a fresh one with the
concurrency asked for. A `Toolbox` and a single `Tool` keep their default dispatcher between
calls (a tool keeps its one-tool toolbox in its `memo`, so `Tool.invoke` costs what a toolbox's
call does); an iterable of tools makes a new toolbox each time. Importing this module registers
`dispatch` and `adispatch` as what `Tool.invoke` runs calls through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from sys import modules
from typing import Any

from tinytools._public import publish
from tinytools._results import ToolCall, ToolResult
from tinytools._run.dispatcher import Dispatcher
from tinytools._run.tracing import TRACE_API
from tinytools._tool import Tool, runs_calls
from tinytools._toolbox import Toolbox, as_toolbox

__all__ = ["adispatch", "adispatch_many", "default_dispatcher", "dispatch", "dispatch_many", "solo_toolbox"]


_Tools = Toolbox | Tool[..., Any] | Iterable[Tool[..., Any]]
"""What the one-line functions take: a `Toolbox`, a single `Tool`, or an iterable of tools."""


def solo_toolbox(tool: Tool[..., Any]) -> Toolbox:
    """The toolbox of ``tool`` alone, made once and kept in the tool's `memo`.

    It is taken only while it holds this very tool, alone (an application may change it).
    """
    box: Toolbox | None = tool.memo.get("toolbox")
    if box is None or len(box) != 1 or box.get(tool.name) is not tool:
        box = tool.memo["toolbox"] = Toolbox([tool])
    return box


def default_dispatcher(toolbox: _Tools) -> Dispatcher:
    """The toolbox's default `Dispatcher`, made on first use and kept until the toolbox changes."""
    if toolbox.__class__ is not Toolbox:
        toolbox = solo_toolbox(toolbox) if isinstance(toolbox, Tool) else as_toolbox(toolbox)
    made: Dispatcher | None = toolbox._dispatcher
    if made is None:
        made = Dispatcher(toolbox)
        made._revealed.grows = False  # no run: a search here reveals nothing for later calls
        made._remembers = False  # nor does a call remember another: each is a one-line call of its own
        toolbox._dispatcher = made  # shown once set up
    return made


def dispatch(
    call: ToolCall,
    toolbox: _Tools,
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from synchronous code and return its result (see `Dispatcher.dispatch`).

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    box = toolbox if toolbox.__class__ is Toolbox else solo_toolbox(toolbox) if isinstance(toolbox, Tool) else None
    made: Dispatcher | None = box._dispatcher if box is not None else None
    if made is not None and TRACE_API not in modules:  # nothing traces a call before the API loads
        express = made._express.get(call.name)  # its first step (as `Dispatcher.dispatch` takes it), in this frame
        if express is not None:
            return express(call, inject)
    return default_dispatcher(box if box is not None else toolbox).dispatch(call, inject=inject)


async def adispatch(
    call: ToolCall,
    toolbox: _Tools,
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from async code and return its result (see `Dispatcher.adispatch`).

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    made = default_dispatcher(toolbox)
    fast = made._aexpress.get(call.name)  # its first step (as `Dispatcher.adispatch` takes it), in this coroutine
    if fast is not None and (made.tracer is None or TRACE_API not in modules or not made.tracer.live()):
        return await fast(call, inject)
    return await made.adispatch(call, inject=inject)


def dispatch_many(
    calls: Iterable[ToolCall],
    toolbox: _Tools,
    *,
    inject: Mapping[str, Any] | None = None,
    max_concurrency: int = 8,
) -> list[ToolResult]:
    """Run a batch from synchronous code with a fresh `Dispatcher`; results in call order."""
    return Dispatcher(toolbox, max_concurrency=max_concurrency).dispatch_many(calls, inject=inject)


async def adispatch_many(
    calls: Iterable[ToolCall],
    toolbox: _Tools,
    *,
    inject: Mapping[str, Any] | None = None,
    max_concurrency: int = 8,
) -> list[ToolResult]:
    """Run a batch from async code with a fresh `Dispatcher`; results in call order."""
    return await Dispatcher(toolbox, max_concurrency=max_concurrency).adispatch_many(calls, inject=inject)


runs_calls(dispatch, adispatch)


publish("tinytools", dispatch, adispatch, dispatch_many, adispatch_many)
