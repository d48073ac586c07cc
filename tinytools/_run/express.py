"""The express path: the whole call of a plain plan, as one function made when the plan is made.

A plan whose tool needs nothing around its call (`Plan.express`) runs the stages of the
pipeline that it has (read, bind, call, the output checks, the boundary) in as few steps as a
call can take, on the calling thread: everything it reads per call is fixed when it is made.
This is where a plain call's time goes, so it is a closure rather than methods; every branch off
the common case (a call the typed reader does not read, a failure, an output that is not plain
data or does not fit the budget) ends in the same stage functions the pipeline uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from time import perf_counter_ns
from typing import Any

import msgspec

from tinytools._context import CancellationToken
from tinytools._errors import ArgumentsError, NeedsInput, WaitsElsewhere, kept
from tinytools._results import ToolCall, ToolResult
from tinytools._run.admission import Admission
from tinytools._run.drivers import on_a_thread
from tinytools._run.failures import cancelled, executor_failure, tool_raised
from tinytools._run.jobs import RAISED, REFUSED, RETURNED, UNSTARTED, Job, in_task
from tinytools._run.output_checks import PLAIN_OUTPUT, finish
from tinytools._run.plans import Plan
from tinytools._schema.fast_decode import defaulted, direct, refuse_repeated
from tinytools._schema.strict_json import SHORT_ENOUGH
from tinytools._schema.strict_json import could_nest_too_deep as deep
from tinytools.executors._failures import ExecutorError

__all__ = ["AsyncExpress", "Express", "express", "within"]


Express = Callable[[ToolCall, Mapping[str, Any] | None], ToolResult]
AsyncExpress = Callable[[ToolCall, Mapping[str, Any] | None], Awaitable[ToolResult]]
Parked = Callable[[Plan, ToolCall, Mapping[str, Any] | None, BaseException, int, bool], Any]
"""The pipeline's end of a call its tool parked (`NeedsInput`, `WaitsElsewhere`): the result, or
(for an async caller, the last argument True) the awaitable of it."""
_PARKS = (NeedsInput, WaitsElsewhere)


def express(
    plan: Plan, admission: Admission, token: CancellationToken, parked: Parked
) -> tuple[Express | None, AsyncExpress | None]:
    """The express path of ``plan`` (see the module): for a sync tool the first, for an async one the second.

    ``admission`` holds the run's limits; ``token`` is the run's; a call its tool parks goes to
    ``parked``, which records it as the pipeline records any pending call. An async tool's express path is
    awaited in the caller's task, as the pipeline awaits one without a timeout (the run's
    cancellation cancels it there); a sync tool's never runs on an event loop: from async code its
    second path reads the call on the loop and runs the tool on a pool thread, as the pipeline does.
    """
    tool, name, boundary, exposed = plan.tool, plan.name, plan.boundary, plan.exposed
    reader = plan.reader()
    parts = direct(reader)  # the reader's work, when it converts no argument: written out in `run`
    decode, names, left_out, defaults = parts if parts is not None else (None, (), None, ())
    size = len(names)
    astuple = msgspec.structs.astuple
    short, unset = SHORT_ENOUGH, msgspec.UNSET
    limit, encoder = plan.limit, plan.encoder
    unchecked = not tool.validate_output
    encode = msgspec.json.encode
    now = perf_counter_ns
    plain = PLAIN_OUTPUT
    fn = tool.fn

    general = tool.call or fn

    def arguments(call: ToolCall, inject: Mapping[str, Any] | None, start: int) -> Any:
        """What to call: ``fn``'s positional values, a ``partial`` of the tool's callable, or the call's result.

        The values are a tuple or list (the typed reader's); a call read the general way comes
        bound in a ``partial``; a refusal or invalid arguments come as the call's result. The sync
        path (`run`) does the same inline, the typed reader's steps too (`Direct`): it is the fastest
        path there is; here, in front of an awaited tool or a thread hop, the reader's frame is kept.
        """
        if admission.checked:  # the run's limits, as any call meets them
            refusal = admission.refusal(call, start)
            if refusal is not None:
                return boundary.seal(refusal, None, start)
        else:
            admission.calls += 1
        values: Any = None
        if reader is not None:
            try:
                values = reader(call)
            except ArgumentsError as exc:
                return plan.sealed_invalid(call, kept(exc), start)
        if values is None:  # the general way; it raises what the application must see (a missing injected value)
            bound = plan.bound(call, inject, start)
            if bound.__class__ is ToolResult:
                return bound
            values = partial(general, *bound[0], **bound[1])  # type: ignore[index]
        if admission.checked:
            stopped = admission.stopped(call, name, start)
            if stopped is not None:  # cancelled, or out of time, while the call was read: no tool starts
                return boundary.seal(stopped, None, start)
        return values

    def finished(call: ToolCall, output: Any, start: int) -> ToolResult:
        """The result of a tool that returned ``output`` (`run` writes this out in its own frame, a call's ~40 ns).

        Plain data whose JSON fits the budget and holds no ``null`` (what JSON writes for a NaN)
        succeeds here; anything else takes the output checks and the boundary. The null is looked
        for with `partition`: bytes' `find` parses its arguments from a tuple and `in` first tries
        its operand as an integer, 30 and 110 ns more a call.
        """
        if output.__class__ in plain and unchecked:
            try:
                encoded = encode(output)
            except Exception:  # not plain data after all, or its own code raised as it was read: the checks say
                pass
            else:
                fits = len(encoded) <= limit or within(boundary.limit, output, encoded)
                if fits and not encoded.partition(b"null")[1]:
                    return ToolResult(
                        call_id=call.id, name=name, status="succeeded", output=output, elapsed=now() - start
                    )
        return boundary.seal(finish(call, tool, output, start, boundary.store, encoder), None, start)

    def raised(call: ToolCall, exc: BaseException, start: int) -> ToolResult:
        """The result of a tool that raised, as on the pipeline (`tool_raised`), held to the budget at the boundary.

        Raises:
            BaseException: What must reach the caller (an interrupt, a ``CancelledError`` that is
                not the run's, a `TransferError`).
        """
        return boundary.seal(tool_raised(call, tool, exc, start, token.cancelled, exposed), None, start)

    if tool.is_async:
        from asyncio import CancelledError, current_task  # loaded by now: an async tool is awaited on a loop

        async def arun(call: ToolCall, inject: Mapping[str, Any] | None) -> ToolResult:
            start = now()
            values = arguments(call, inject, start)
            kind = values.__class__
            if kind is ToolResult:
                return values  # type: ignore[no-any-return]
            task = current_task()
            # the cancellations the task had before (caught, not taken back): none of them is one from outside
            before = task.cancelling() if task is not None and hasattr(task, "cancelling") else 0
            mark = object()  # this call's: the run's cancellation finds it in `running`, its own code in `in_task`
            running[mark] = task
            entered = in_task.set(mark)
            try:
                if token.cancelled:  # cancelled as it began: `stop_running` may have looked before it was listed
                    return boundary.seal(cancelled(call, tool, start, started=False), None, start)
                output = await (values() if kind is partial else fn(*values))
            except CancelledError:
                if mark not in stopped:
                    raise
                stopped.discard(mark)
                if task is not None and hasattr(task, "uncancel") and task.uncancel() > before:  # from outside too
                    raise
                return boundary.seal(cancelled(call, tool, start, started=True), None, start)  # cancelled as it ran
            except BaseException as exc:
                if isinstance(exc, _PARKS):
                    return await parked(plan, call, inject, exc, start, True)  # type: ignore[no-any-return]
                return raised(call, exc, start)
            finally:
                del running[mark]
                in_task.reset(entered)
                if mark in stopped:  # the run's cancellation reached the tool, which ended otherwise: taken back
                    stopped.discard(mark)
                    if task is not None and hasattr(task, "uncancel"):
                        task.uncancel()
            return finished(call, output, start)

        running: dict[object, Any] = {}
        """The calls awaiting this tool now, each its task; the run's cancellation cancels them (as `in_place`)."""
        stopped: set[object] = set()
        """Of those, the calls the run's cancellation was delivered to (on their loop, while they awaited)."""

        def stop_here(mark: object, task: Any) -> None:
            """On the task's loop: cancel it if that call still awaits this tool (it may have ended since)."""
            if mark in running and mark not in stopped and not task.done():
                stopped.add(mark)
                task.cancel()

        def stop_running() -> None:
            mine = in_task.get()  # a tool cancelling its own run (from its task, sub-task or thread) finishes its call
            for mark, task in list(running.items()):
                if mark is not mine:
                    task.get_loop().call_soon_threadsafe(stop_here, mark, task)

        token.on_cancel(stop_running)

        return None, arun

    async def hop(call: ToolCall, inject: Mapping[str, Any] | None) -> ToolResult:
        """From async code: read here, run on a pool thread (never on the loop), finish here."""
        start = now()
        values = arguments(call, inject, start)
        kind = values.__class__
        if kind is ToolResult:
            return values  # type: ignore[no-any-return]
        function, args = (values, ()) if kind is partial else (fn, values)
        outcome = await on_a_thread(Job(function, args, _NONE, name=name, is_async=False, timeout=None, token=token))
        kind = outcome.kind
        if kind == RETURNED:
            return finished(call, outcome.value, start)
        if kind == RAISED:
            if isinstance(outcome.value, _PARKS):
                return await parked(plan, call, inject, outcome.value, start, True)  # type: ignore[no-any-return]
            return raised(call, outcome.value, start)
        if kind == REFUSED:  # too many stray threads: the call was not made
            error = ExecutorError("executor_unavailable", str(outcome.value), may_have_acted=False)
            return boundary.seal(executor_failure(error, call, tool, start), None, start)
        started = outcome is not UNSTARTED  # the run was cancelled meanwhile: as the tool ran, or before it started
        return boundary.seal(cancelled(call, tool, start, started=started), None, start)

    def run(call: ToolCall, inject: Mapping[str, Any] | None) -> ToolResult:
        start = now()  # `arguments`, written out with the typed reader's one decode: the fastest path there is
        if admission.checked:  # the run's limits, as any call meets them
            refusal = admission.refusal(call, start)
            if refusal is not None:
                return boundary.seal(refusal, None, start)
        else:
            admission.calls += 1
        values: Any = None
        if decode is not None:  # the typed reader, written out (see `Direct`): a frame less
            text = call.arguments
            kind = text.__class__
            if (kind is bytes or kind is str) and call.invalid is None and (len(text) <= short or not deep(text)):
                try:
                    values = astuple(decode(text))
                except (ValueError, RecursionError):
                    pass  # refused, or unsure: the general way decides and explains
                else:
                    missing = values.count(unset) if left_out is not None and left_out(values) else 0
                    if text.count(b":" if kind is bytes else ":") != size - missing:  # colons in strings, a key twice
                        try:
                            refuse_repeated(text, names, values)
                        except ArgumentsError as exc:
                            return plan.sealed_invalid(call, kept(exc), start)
                    if missing:  # an omitted argument gets the function's own default object, as if left out
                        values = defaulted(values, defaults)
        elif reader is not None:
            try:
                values = reader(call)
            except ArgumentsError as exc:
                return plan.sealed_invalid(call, kept(exc), start)
        if values is None:  # the general way; it raises what the application must see (a missing injected value)
            bound = plan.bound(call, inject, start)
            if bound.__class__ is ToolResult:
                return bound
        if admission.checked:
            stopped = admission.stopped(call, name, start)
            if stopped is not None:  # cancelled, or out of time, while the call was read: no tool starts
                return boundary.seal(stopped, None, start)
        try:
            output = fn(*values) if values is not None else general(*bound[0], **bound[1])  # type: ignore[index]
        except BaseException as exc:
            if isinstance(exc, _PARKS):
                return parked(plan, call, inject, exc, start, False)  # type: ignore[no-any-return]
            return raised(call, exc, start)
        if output.__class__ in plain and unchecked:  # `finished`, written out: the fastest path there is
            try:
                encoded = encode(output)
            except Exception:  # not plain data after all, or its own code raised as it was read: the checks say
                pass
            else:
                fits = len(encoded) <= limit or within(boundary.limit, output, encoded)
                if fits and not encoded.partition(b"null")[1]:
                    return ToolResult(
                        call_id=call.id, name=name, status="succeeded", output=output, elapsed=now() - start
                    )
        return boundary.seal(finish(call, tool, output, start, boundary.store, encoder), None, start)

    return run, hop


_NONE: dict[str, Any] = {}
"""No keyword arguments (the typed reader's values are all positional); never changed."""


def within(limit: int | None, output: Any, encoded: bytes) -> bool:
    """Whether the model-facing text of ``output`` (itself for a string, else its JSON) fits ``limit`` bytes."""
    if limit is None:
        return True
    if output.__class__ is not str:
        return len(encoded) <= limit
    return len(output) * 4 <= limit or len(output.encode("utf-8", "surrogatepass")) <= limit
