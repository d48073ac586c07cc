"""The full lifecycle of a call for `Dispatcher`: middleware, events, timeouts, retries, batches.

This is the general path, written once as async code; the sync API drives it on an event loop
of its own when a call needs it. A sync tool runs inline unless it has a timeout or runs
beside others in a batch; then it runs in a daemon thread, so a tool that never returns can
neither block the loop nor keep the interpreter from exiting. A tool the dispatcher routes to
an executor (`tinytools.executors`) always runs there.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from tinytools._outcomes import failed, finish, logger, propagates, tool_failure
from tinytools.context import INVOCATION_KEY, PROGRESS_KEY, STORES_KEY, Progress
from tinytools.errors import ArgumentsError, RetryableError, TransferError
from tinytools.events import EventSink, ToolCompleted, ToolDenied, ToolEvent, ToolFailed, ToolStarted, deliver
from tinytools.executors import ExecutorError
from tinytools.limits import TOKEN_KEY, CancellationToken, in_daemon_thread
from tinytools.policy import denied_result
from tinytools.results import ToolCall, ToolResult
from tinytools.tool import Tool

if TYPE_CHECKING:
    from tinytools.dispatcher import Dispatcher

__all__ = ["Runner"]

BACKOFF_SECONDS = 0.05
"""First retry delay; doubled on each further attempt."""


class Runner:
    """Drives calls through middleware, events and the tool for one `Dispatcher`."""

    def __init__(self, dispatcher: Dispatcher, middleware: Sequence[Any], sink: EventSink | None):
        self.dispatcher = dispatcher
        self.sink = sink
        self.before = [m.before_tool for m in middleware if hasattr(m, "before_tool")]
        self.after = [m.after_tool for m in middleware if hasattr(m, "after_tool")]
        self.slots = threading.BoundedSemaphore(dispatcher.max_concurrency)
        self.routes = dispatcher.routes

    async def emit(self, event: ToolEvent) -> None:
        """Deliver an event when there is a sink."""
        if self.sink is not None:
            pending = deliver(self.sink, event)
            if pending is not None:
                await pending

    async def run(
        self,
        call: ToolCall,
        inject: Mapping[str, Any] | None,
        allowed: Any,
        start: int,
        *,
        offload: bool,
        step_id: str,
    ) -> ToolResult:
        """One call, from admission to the final event."""
        dispatcher = self.dispatcher
        found = dispatcher.admit(call, allowed, start)
        if isinstance(found, ToolResult):
            if self.sink is not None:
                await self.emit(dispatcher.events_for_refusal(call, found, start))
            return await self.complete(call, found, start)
        tool, routed = found
        if routed is not call:
            if self.sink is not None:
                await self.emit(dispatcher.rewrite_event(call, routed, start))
            call = routed
        for before in self.before:
            try:
                outcome = await _settle(before(call, tool))
            except Exception as exc:
                return await self.complete(call, _middleware_failure(call, tool.name, exc, start), start)
            if isinstance(outcome, ToolResult):
                return await self.deny(call, outcome, start)
            if isinstance(outcome, ToolCall):
                call = outcome
                replaced = dispatcher.toolbox.get(call.name)
                if replaced is None:
                    message = f"Middleware sent the call to an unknown tool {call.name!r}."
                    return await self.complete(call, failed(call, call.name, "unknown_tool", message, start), start)
                tool = replaced
        return await self.invoke_bound(call, tool, inject, start, offload=offload, step_id=step_id)

    async def invoke_bound(
        self,
        call: ToolCall,
        tool: Tool[..., Any],
        inject: Mapping[str, Any] | None,
        start: int,
        *,
        offload: bool,
        step_id: str,
    ) -> ToolResult:
        """Validate, run (with timeout and retries), apply after-middleware, emit."""
        if tool.needs_approval and not self.dispatcher.approves:  # fail closed, middleware or not
            rule, reason = "require_approval", "it needs approval and no approver is configured"
            return await self.deny(call, denied_result(call, tool, rule, reason), start)
        runtime = Runtime(self, call, tool, start, step_id) if tool.wants else None
        if runtime is not None:
            inject = {**(inject or {}), **runtime.values}
        try:
            kwargs = self.dispatcher.bind(tool, call, inject)
        except ArgumentsError as exc:
            await self.emit(self.dispatcher.invalid_event(call, tool, exc, start))
            return await self.complete(call, self.dispatcher.bad_arguments(call, tool, exc, start), start)
        try:
            result = await self.attempts(call, tool, kwargs, start, offload, runtime, inject)
        finally:
            if runtime is not None:
                await runtime.close()
        result = self.dispatcher.settle(result, tool, inject, start)
        for after in self.after:
            try:
                replacement = await _settle(after(call, tool, result))
            except Exception as exc:
                result = _middleware_failure(call, tool.name, exc, start)
                continue
            if isinstance(replacement, ToolResult):
                result = replacement
        return await self.complete(call, result, start)

    async def attempts(
        self,
        call: ToolCall,
        tool: Tool[..., Any],
        kwargs: dict[str, Any],
        start: int,
        offload: bool,
        runtime: Runtime | None = None,
        inject: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Run the tool, retrying an idempotent one on timeouts and `RetryableError`.

        Each retry binds the arguments afresh: changes an attempt made to them are not seen.
        """
        tries = 1 + (tool.retries if tool.idempotent else 0)
        for attempt in range(1, tries + 1):
            if attempt > 1:
                kwargs = self.dispatcher.bind(tool, call, inject)
                if runtime is not None:
                    kwargs = runtime.for_attempt(kwargs, attempt)
            if self.sink is not None:
                await self.emit(
                    ToolStarted(call.id, tool.name, perf_counter_ns() - start, call_arguments(call), attempt)
                )
            last = attempt == tries
            try:
                output = await self.call_once(tool, kwargs, offload, call)
            except (TimeoutError, asyncio.TimeoutError) as exc:
                if runtime is not None and runtime.token is not None:
                    runtime.token.cancel("timeout")  # a cooperative tool still running can stop
                if not last:
                    await asyncio.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
                    continue
                return await self.failure(call, tool, _timeout(call, tool, start), exc, start)
            except RetryableError as exc:
                if not last:
                    await asyncio.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
                    continue
                return await self.failure(call, tool, tool_failure(call, tool.name, exc, start), exc, start)
            except TransferError:  # the application's configuration, like a missing injected value
                raise
            except ExecutorError as exc:  # a worker died or the executor refused the call
                if not last:
                    await asyncio.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
                    continue
                return await self.failure(call, tool, exc.result(call, tool, start), exc, start)
            except asyncio.CancelledError:
                if not self.dispatcher.token.cancelled:
                    raise
                status = "failed" if tool.idempotent else "outcome_unknown"
                message = "The run was cancelled while the tool ran" + (
                    "." if tool.idempotent else "; it may have acted."
                )
                result = failed(call, tool.name, "cancelled", message, start)
                result.status = status  # type: ignore[assignment]
                return result
            except BaseException as exc:
                if propagates(exc):
                    raise
                return await self.failure(call, tool, tool_failure(call, tool.name, exc, start), exc, start)
            result = finish(call, tool, output, start, self.dispatcher.artifacts)
            if result.error is not None:
                return await self.failure(call, tool, result, None, start)
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    async def failure(
        self, call: ToolCall, tool: Tool[..., Any], result: ToolResult, exc: BaseException | None, start: int
    ) -> ToolResult:
        """Emit `ToolFailed` for a result that failed while the tool ran."""
        if self.sink is not None and result.error is not None:
            await self.emit(ToolFailed(call.id, tool.name, perf_counter_ns() - start, result.error, exc))
        return result

    async def call_once(
        self, tool: Tool[..., Any], kwargs: dict[str, Any], offload: bool, call: ToolCall | None = None
    ) -> Any:
        """Call the tool once, under its timeout; cancellation of the run cancels it.

        A tool routed to an executor goes there whatever ``offload`` says.
        """
        route = self.routes.get(tool.name) if self.routes else None
        if tool.is_async:
            work: Awaitable[Any] = _contained(tool.call(**kwargs), tool.name)
        elif route is not None:
            work = route.run(call or ToolCall("", tool.name), kwargs)
        elif tool.timeout is None and not offload:
            return tool.call(**kwargs)
        else:
            work = self.in_thread(tool, kwargs)
        task = asyncio.ensure_future(work)
        loop = asyncio.get_running_loop()
        forget = self.dispatcher.token.on_cancel(lambda: loop.call_soon_threadsafe(task.cancel))
        try:
            if tool.timeout is None:
                return await task
            return await asyncio.wait_for(task, tool.timeout)
        finally:
            forget()

    def in_thread(self, tool: Tool[..., Any], kwargs: dict[str, Any]) -> Awaitable[Any]:
        """Run a sync tool in a daemon thread, at most ``max_concurrency`` at once."""

        def bounded() -> Any:
            with self.slots:
                try:
                    return tool.call(**kwargs)
                except GeneratorExit as exc:
                    raise _contained_exit(tool.name, exc) from exc

        return asyncio.wrap_future(in_daemon_thread(bounded))

    async def deny(self, call: ToolCall, result: ToolResult, start: int) -> ToolResult:
        """Finish a call that middleware or policy answered without running the tool."""
        if self.sink is not None and result.error is not None and result.error.code == "policy_denied":
            rule = (result.error.details or {}).get("rule", "policy")
            await self.emit(ToolDenied(call.id, result.name, perf_counter_ns() - start, rule, result.error.message))
        return await self.complete(call, result, start)

    async def complete(self, call: ToolCall, result: ToolResult, start: int) -> ToolResult:
        """Emit `ToolCompleted` and hand the result back."""
        result = self.dispatcher.scrub(result)
        if self.sink is not None:
            await self.emit(ToolCompleted(call.id, result.name, perf_counter_ns() - start, result))
        return result

    async def run_batch(
        self, calls: list[ToolCall], inject: Mapping[str, Any] | None, allowed: set[str] | None, step_id: str
    ) -> list[ToolResult]:
        """Run calls in order groups: parallel-safe neighbours together, serial ones alone."""
        results: list[ToolResult | None] = [None] * len(calls)
        seen: set[str] = set()
        group: list[int] = []
        offload = len(calls) > 1
        semaphore = asyncio.Semaphore(self.dispatcher.max_concurrency)

        async def one(index: int) -> None:
            async with semaphore:
                start = perf_counter_ns()
                results[index] = await self.run(calls[index], inject, allowed, start, offload=offload, step_id=step_id)

        async def flush() -> None:
            if group:
                await asyncio.gather(*(one(index) for index in group))
                group.clear()

        for index, call in enumerate(calls):
            if call.id in seen:
                message = f"Call id {call.id!r} was already used in this batch; the call was not made."
                results[index] = failed(call, call.name, "duplicate_call_id", message, perf_counter_ns())
                continue
            seen.add(call.id)
            tool = self.dispatcher.toolbox.get(call.name)
            if tool is not None and not tool.parallel_safe:
                await flush()
                start = perf_counter_ns()
                results[index] = await self.run(call, inject, allowed, start, offload=False, step_id=step_id)
            else:
                group.append(index)
        await flush()
        return [result for result in results if result is not None]


class Runtime:
    """The runtime values one call's tool receives by type, and their clean-up."""

    def __init__(self, runner: Runner, call: ToolCall, tool: Tool[..., Any], start: int, step_id: str):
        dispatcher = runner.dispatcher
        self.runner = runner
        self.call = call
        self.tool = tool
        self.step_id = step_id
        self.values: dict[str, Any] = {}
        self.token: CancellationToken | None = None
        self.tail: asyncio.Future[None] | None = None
        wants = tool.wants
        if "token" in wants:
            self.token = CancellationToken(parent=dispatcher.token)
            self.values[TOKEN_KEY] = self.token
        if "stores" in wants:
            self.values[STORES_KEY] = dispatcher.stores
        if "invocation" in wants:
            self.values[INVOCATION_KEY] = dispatcher.invocation(call, tool, step_id, 1)
        if "progress" in wants:
            send = self.sender(asyncio.get_running_loop()) if runner.sink is not None else None
            self.values[PROGRESS_KEY] = Progress(call.id, tool.name, start, send)

    def sender(self, loop: asyncio.AbstractEventLoop) -> Callable[[ToolEvent], None]:
        """Deliver progress events in order, from the loop thread or any worker thread."""

        def enqueue(event: ToolEvent) -> None:
            self.tail = loop.create_task(self.after(self.tail, event))

        def send(event: ToolEvent) -> None:
            loop.call_soon_threadsafe(enqueue, event)

        return send

    async def after(self, previous: asyncio.Future[None] | None, event: ToolEvent) -> None:
        if previous is not None:
            await previous
        await self.runner.emit(event)

    def for_attempt(self, kwargs: dict[str, Any], attempt: int) -> dict[str, Any]:
        """The keyword arguments with the `Invocation` of a later attempt."""
        if "invocation" not in self.tool.wants:
            return kwargs
        invocation = self.runner.dispatcher.invocation(self.call, self.tool, self.step_id, attempt)
        names = [p for p, source in self.tool.injection_sources.items() if source == "invocation"]
        return {**kwargs, **dict.fromkeys(names, invocation)}

    async def close(self) -> None:
        """Flush pending progress events and stop following the run's token."""
        if self.token is not None:
            self.token.detach()
        await asyncio.sleep(0)  # let progress scheduled from threads reach the chain
        if self.tail is not None:
            await self.tail


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """The arguments of a call as data, for events (decoded when they are text)."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        return arguments
    import msgspec

    try:
        decoded = msgspec.json.decode(arguments)
    except (ValueError, TypeError, RecursionError):  # DecodeError is a ValueError
        return {}
    return decoded if isinstance(decoded, dict) else {}


async def _contained(work: Awaitable[Any], name: str) -> Any:
    """Await a tool's coroutine in its own task, keeping a GeneratorExit it raises inside it."""
    try:
        return await work
    except GeneratorExit as exc:
        raise _contained_exit(name, exc) from exc


def _contained_exit(name: str, exc: GeneratorExit) -> RuntimeError:
    """A tool's GeneratorExit as an ordinary failure.

    Thrown into the task awaiting the tool, a GeneratorExit would close every coroutine on the
    way up instead of failing this one call.
    """
    return RuntimeError(f"tool {name!r} raised GeneratorExit: {exc}")


async def _settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _timeout(call: ToolCall, tool: Tool[..., Any], start: int) -> ToolResult:
    if tool.idempotent:
        message = f"Tool {tool.name!r} did not finish within {tool.timeout} seconds."
        return failed(call, tool.name, "timeout", message, start)
    message = (
        f"Tool {tool.name!r} did not finish within {tool.timeout} seconds; it may still have "
        "acted, so it was not retried."
    )
    result = failed(call, tool.name, "timeout", message, start)
    result.status = "outcome_unknown"
    return result


def _middleware_failure(call: ToolCall, name: str, exc: Exception, start: int) -> ToolResult:
    error_id = f"{id(exc):x}"[-12:]
    logger().error("middleware failed on tool %r (error id %s)", name, error_id, exc_info=exc)
    message = f"The call to {name!r} could not be completed (error id {error_id})."
    return failed(call, name, "middleware_error", message, start, {"error_id": error_id})
