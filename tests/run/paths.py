"""The entry points and the options that change a call's path, for tests that run one promise on all.

Every promise of the pipeline is checked on each entry point: module `dispatch` and `adispatch`,
and `Dispatcher.dispatch`, ``.adispatch``, ``.dispatch_many`` and ``.adispatch_many``, with the
options that change the path a call takes (``strict=True``, a middleware object, an event sink).
Nothing here measures time: serialisation and deadlocks are found with barriers, events and
counters, and a wait that would last forever on a broken pipeline runs under a watchdog.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from tinytools import Dispatcher, Toolbox, ToolCall, ToolEvent, ToolResult, adispatch, dispatch, tool
from tinytools._run.shortcuts import default_dispatcher

GENEROUS = 5.0
"""Seconds to wait for something a working pipeline does at once (a watchdog, not a measure)."""
RELEASE = 10.0
"""Seconds a blocked tool waits at most, so that even a hung pipeline's threads end."""

MODULE_ENTRIES = ["dispatch", "adispatch"]
DISPATCHER_ENTRIES = [
    "Dispatcher.dispatch",
    "Dispatcher.adispatch",
    "Dispatcher.dispatch_many",
    "Dispatcher.adispatch_many",
]
ENTRIES = MODULE_ENTRIES + DISPATCHER_ENTRIES
BATCH_ENTRIES = ["Dispatcher.dispatch_many", "Dispatcher.adispatch_many"]
VARIANTS = ["plain", "strict", "middleware", "on_event"]
"""Dispatcher options that change the path: none, strict mode, middleware, an event sink."""
PATHS = [(entry, variant) for entry in MODULE_ENTRIES for variant in ("plain", "later")] + [
    (entry, variant) for entry in DISPATCHER_ENTRIES for variant in VARIANTS
]
"""Every entry point, and for a `Dispatcher` every option that changes the path.

A module entry's ``plain`` call is a first call (a fresh toolbox: the pipeline), its ``later``
call one after the first (the toolbox's default dispatcher has planned every tool: a plain
tool's call takes the express path, in the module function's own frame).
"""


# --- helpers ------------------------------------------------------------------------------


class PassThrough:
    """Middleware with both hooks that changes nothing (it puts calls on the lifecycle path)."""

    def before_tool(self, call: ToolCall, tool: Any) -> None:
        return None

    def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> None:
        return None


def options(variant: str) -> dict[str, Any]:
    """The `Dispatcher` keyword arguments of one path variant."""
    if variant == "plain":
        return {}
    if variant == "later":
        return {"later": True}
    if variant == "strict":
        return {"strict": True}
    if variant == "middleware":
        return {"middleware": [PassThrough()]}
    if variant == "on_event":
        events: list[ToolEvent] = []
        return {"on_event": events.append}
    raise AssertionError(variant)


def run_call(
    entry: str,
    tools: list[Any],
    call: ToolCall,
    *,
    inject: dict[str, Any] | None = None,
    dispatcher: Dispatcher | None = None,
    later: bool = False,
    **dispatcher_options: Any,
) -> ToolResult:
    """Run one call through one entry point (a batch entry gets a batch of that one call).

    ``later``: a module entry's call as one after the first (see `PATHS`).
    """
    if entry in MODULE_ENTRIES:
        box: Any = tools
        if later:
            box = tools if isinstance(tools, Toolbox) else Toolbox(tools)
            warmed = default_dispatcher(box)
            for each in box:
                warmed.plan(each)
        if entry == "dispatch":
            return dispatch(call, box, inject=inject)
        return asyncio.run(adispatch(call, box, inject=inject))
    runner = dispatcher if dispatcher is not None else Dispatcher(tools, **dispatcher_options)
    if dispatcher is None and not dispatcher_options:
        # planned before the call, as after a first call: a plain tool's call takes the express path
        # (module entries, with a fresh toolbox per call, keep to the path a first call takes)
        for each in runner.toolbox:
            runner.plan(each)
    if entry == "Dispatcher.dispatch":
        return runner.dispatch(call, inject=inject)
    if entry == "Dispatcher.adispatch":
        return asyncio.run(runner.adispatch(call, inject=inject))
    if entry == "Dispatcher.dispatch_many":
        (result,) = runner.dispatch_many([call], inject=inject)
        return result
    if entry == "Dispatcher.adispatch_many":
        (result,) = asyncio.run(runner.adispatch_many([call], inject=inject))
        return result
    raise AssertionError(entry)


def run_batch(entry: str, dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    """Run a batch through `Dispatcher.dispatch_many` or `Dispatcher.adispatch_many`."""
    if entry == "Dispatcher.dispatch_many":
        return dispatcher.dispatch_many(calls)
    if entry == "Dispatcher.adispatch_many":
        return asyncio.run(dispatcher.adispatch_many(calls))
    raise AssertionError(entry)


class Watched:
    """What a function run under a watchdog did: its value, or what it raised, if it ended."""

    def __init__(self, thread: threading.Thread, box: dict[str, Any]):
        self.thread = thread
        self.box = box

    @property
    def finished(self) -> bool:
        return not self.thread.is_alive()

    def value(self) -> Any:
        if "error" in self.box:
            raise self.box["error"]
        return self.box["value"]

    def join(self, timeout: float = RELEASE) -> None:
        self.thread.join(timeout)


def run_in_thread(fn: Callable[[], Any], timeout: float = GENEROUS) -> Watched:
    """Run ``fn`` in a daemon thread and wait at most ``timeout`` seconds for it."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=work, name="regression-watchdog", daemon=True)
    thread.start()
    thread.join(timeout)
    return Watched(thread, box)


def summary(results: list[ToolResult]) -> list[tuple[str, str, str | None]]:
    """(call id, status, error code) of each result, in order."""
    return [(r.call_id, r.status, r.error.code if r.error else None) for r in results]


@tool
def steady(n: int) -> int:
    """Answers at once: the companion whose result must survive a neighbour's fault."""
    return n
