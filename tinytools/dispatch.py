"""`dispatch` and `adispatch`: run one tool call and always return one `ToolResult`.

The fast path is: look the tool up, read the arguments, call, encode the output. A tool with
plain arguments has them read the typed way (`Tool.positional`: decoded and checked in one
msgspec pass, then passed by position); any other tool, and any call that way refuses, the
general way (`Tool.try_bind`: decode, validate against the compiled schema, convert, inject).
Every other branch ends in a failed result that carries the call's id and a message the model
can act on.

`dispatch` and `adispatch` are written out twice, and `Dispatcher.dispatch` repeats their middle,
on purpose: they differ only in how an async tool is awaited, and a shared helper would add a
call frame (about 5%) to every call on the fastest path there is.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from collections.abc import Coroutine, Iterable, Mapping
from time import perf_counter_ns
from typing import Any, ClassVar

from tinytools._outcomes import argument_failure, finish, propagates, redact, tool_failure, unknown_tool
from tinytools.errors import ArgumentsError
from tinytools.policy import denied_result
from tinytools.results import ToolCall, ToolResult
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

__all__ = ["adispatch", "dispatch", "run_coroutine", "secrets_of"]


def dispatch(
    call: ToolCall,
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from synchronous code and return its result.

    An async tool runs to completion on an event loop of its own (in a worker thread when
    this thread already runs a loop).

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    start = perf_counter_ns()
    if toolbox.__class__ is not Toolbox:
        toolbox = Toolbox(toolbox)
    tool = toolbox._tools.get(call.name) or toolbox.get(call.name)
    if tool is None:
        return unknown_tool(call, toolbox.names, start)
    if tool.needs_approval:  # no approver on this path: fail closed
        return denied_result(call, tool, "require_approval", "it needs approval and no approver is configured")
    if tool.timeout is not None:  # bounded the one way there is: the dispatcher's
        from tinytools.dispatcher import Dispatcher

        return Dispatcher(toolbox).dispatch(call, inject=inject)
    try:
        args = tool.positional(call)
        if args is None:
            bound = tool.try_bind(call, inject)
            if isinstance(bound, ArgumentsError):
                return argument_failure(call, tool, bound, start)
            kwargs = bound
    except ArgumentsError as exc:
        return argument_failure(call, tool, exc, start)
    try:
        output = tool.call(**kwargs) if args is None else tool.fn(*args)
        if tool.is_async:
            output = run_coroutine(output)
    except BaseException as exc:
        if propagates(exc):
            raise
        result = tool_failure(call, tool.name, exc, start)
    else:
        result = finish(call, tool, output, start)
    return _scrubbed(result, tool, inject) if tool.secret_keys else result


async def adispatch(
    call: ToolCall,
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Run one call from async code and return its result; sync tools run inline.

    Raises:
        InjectionError: The application did not supply an injected value.
    """
    start = perf_counter_ns()
    if toolbox.__class__ is not Toolbox:
        toolbox = Toolbox(toolbox)
    tool = toolbox._tools.get(call.name) or toolbox.get(call.name)
    if tool is None:
        return unknown_tool(call, toolbox.names, start)
    if tool.needs_approval:  # no approver on this path: fail closed
        return denied_result(call, tool, "require_approval", "it needs approval and no approver is configured")
    if tool.timeout is not None:  # bounded the one way there is: the dispatcher's
        from tinytools.dispatcher import Dispatcher

        return await Dispatcher(toolbox).adispatch(call, inject=inject)
    try:
        args = tool.positional(call)
        if args is None:
            bound = tool.try_bind(call, inject)
            if isinstance(bound, ArgumentsError):
                return argument_failure(call, tool, bound, start)
            kwargs = bound
    except ArgumentsError as exc:
        return argument_failure(call, tool, exc, start)
    try:
        output = tool.call(**kwargs) if args is None else tool.fn(*args)
        if tool.is_async:
            output = await output
    except BaseException as exc:
        if propagates(exc):
            raise
        result = tool_failure(call, tool.name, exc, start)
    else:
        result = finish(call, tool, output, start)
    return _scrubbed(result, tool, inject) if tool.secret_keys else result


def secrets_of(tool: Tool[..., Any], inject: Mapping[str, Any] | None) -> list[str]:
    """The secret injected values of this call, as text to scrub from the result."""
    if not tool.secret_keys or inject is None:
        return []
    values = (inject.get(key) for key in tool.secret_keys)
    return [str(value) for value in values if value is not None and str(value)]


def _scrubbed(result: ToolResult, tool: Tool[..., Any], inject: Mapping[str, Any] | None) -> ToolResult:
    if not tool.secret_keys:
        return result
    secrets = secrets_of(tool, inject)
    return redact(result, secrets, None) if secrets else result


def run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, whether or not a loop is running here.

    Each thread keeps one event loop for this (`_ThreadLoop`): starting and closing a loop per
    call costs about 0.1 ms, more than a call through a dispatcher's middleware and events.
    Inside a running loop the coroutine gets a loop of its own in a worker thread, so a sync
    caller never deadlocks the loop it is on.
    """
    import asyncio  # imported on first use: it alone costs more than importing tinytools

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _ThreadLoop.here().run(coroutine)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tinytools") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class _ThreadLoop:
    """This thread's event loop for sync callers, closed when the thread ends or Python exits.

    Like `asyncio.run`, each run ends by cancelling whatever tasks it left behind, so no task
    outlives the call that started it. A process made by fork makes a loop of its own.
    """

    _local = threading.local()
    _open: ClassVar[weakref.WeakSet[_ThreadLoop]] = weakref.WeakSet()

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._open.add(self)

    @classmethod
    def here(cls) -> _ThreadLoop:
        """The calling thread's loop, made on first use."""
        made: _ThreadLoop | None = getattr(cls._local, "loop", None)
        if made is None or made.loop.is_closed() or made.pid != os.getpid():
            made = cls._local.loop = cls()
        return made

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        import asyncio

        task = self.loop.create_task(coroutine)
        try:
            return self.loop.run_until_complete(task)
        except BaseException:
            task.cancel()  # interrupted (Ctrl-C): the call stops here, as under asyncio.run
            raise
        finally:
            left = asyncio.all_tasks(self.loop)
            if left:
                for leftover in left:
                    leftover.cancel()
                self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))

    def close(self) -> None:
        if self.loop.is_closed() or self.loop.is_running() or self.pid != os.getpid():
            return  # not this process's, or a daemon thread still runs it at exit
        with contextlib.suppress(RuntimeError):  # collected on a thread that is running another loop
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def __del__(self) -> None:  # the thread that owned it has ended
        self.close()


@atexit.register
def _close_thread_loops() -> None:
    for loop in list(_ThreadLoop._open):
        loop.close()
