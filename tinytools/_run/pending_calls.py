"""Finishing pending calls: resume, poll, expire and cancel, each through the one pipeline.

`resume` verifies the handle, checks the answer against the schema the call asked for, moves
the entry from ``pending`` to ``started`` in one compare-and-set (so of two resumers one wins,
and the other reads the winner's outcome), and hands the call to the pipeline's execution stage
(`Pipeline.go`) or its end (`Pipeline.end`), which seal, record and report it as any call.
"""

from __future__ import annotations

import logging
import time
from time import perf_counter_ns
from typing import Any

import msgspec

from tinytools._errors import JournalError, PendingError
from tinytools._results import ToolCall, ToolResult
from tinytools._run.call_state import CallState, Scope
from tinytools._run.entries import Parked
from tinytools._run.failures import denied, failed
from tinytools._run.journals import AsyncJournal, JournalEntry, holds
from tinytools._run.output_checks import finish
from tinytools._run.pipeline import Pipeline
from tinytools._run.reading import read_arguments

__all__ = ["cancel_pending", "expire", "poll", "resume"]


async def resume(pipeline: Pipeline, handle: str, answer: Any, scope: Scope, error: str | None) -> ToolResult:
    """The pending call's final result (or its next pending one), given the answer it waited for.

    Raises:
        PendingError: The handle fails verification or is unknown; the answer does not match
            the requested schema, or ``error`` is given for a call that is not external (the
            call stays pending).
    """
    stage = pipeline.journal_stage
    key, step = stage.handles.read_handle(handle)
    io = stage.faces.on(scope.driver.asynchronous)
    entry = await _entry(io, key)
    parked = stage.entries.parked(entry) if entry.pending else None
    if parked is not None and parked.kind == "task" and (answer is not None or error is not None):
        raise PendingError("a background call takes no answer: it ends by itself", code="invalid_answer")
    if entry.state != "pending" or entry.step != step or parked is None or parked.kind == "task":
        return await _outcome(pipeline, entry, step, scope)
    if time.time() >= parked.expires_at:
        return await end_entry(pipeline, entry, "expired", scope)
    if error is not None and parked.kind != "external":
        raise PendingError("only an external call is resumed with error=", code="invalid_answer")
    if error is None:
        answer = stage.entries.check_answer(parked, answer)
    runs = parked.kind == "input" or (parked.kind == "approval" and answer["approved"])
    tool = pipeline.admission.toolbox.get(entry.tool)
    if runs and tool is not None:  # missing values raise before anything moves: the same handle works again
        pipeline.plan_for(tool).check_injected(scope.inject)
    validated = stage.entries.arguments(entry)  # what cannot be read is refused before anything moves
    answers = [*parked.answers, answer] if parked.kind == "input" else parked.answers
    kept = msgspec.json.encode(msgspec.structs.replace(parked, answers=answers))
    if not await io.advance(key, step, state="started", owner=stage.owner, pending=kept, lease=stage.leases.until()):
        return await _outcome(pipeline, await _entry(io, key), step, scope)  # another worker moved it first
    stage.hold(key, step + 1)
    moved = msgspec.structs.replace(entry, state="started", owner=stage.owner, pending=kept, step=step + 1)
    return await _run(pipeline, moved, entry, validated, parked, (answer, error), scope)


async def _run(
    pipeline: Pipeline,
    entry: JournalEntry,
    waited: JournalEntry,
    validated: dict[str, Any],
    parked: Parked,
    answered: tuple[Any, str | None],
    scope: Scope,
) -> ToolResult:
    """Run the resumed call through the pipeline, from the stage it waited at (``waited``: its entry then)."""
    stage = pipeline.journal_stage
    answer, error = answered
    arguments = parked.arguments if parked.arguments is not None else validated
    call = ToolCall(entry.call_id, entry.tool, arguments)
    start = perf_counter_ns()
    tool = pipeline.admission.toolbox.get(entry.tool)
    if tool is None:
        message = f"Tool {entry.tool!r} is not in this dispatcher's toolbox, so its pending call cannot go on."
        io = stage.faces.on(scope.driver.asynchronous)
        ended = await stage.record_entry(io, entry, failed(call, entry.tool, "unknown_tool", message, start))
        if ended is not None:
            _trace_end_of(pipeline, entry, ended, start)
        return ended or await _outcome(pipeline, entry, entry.step, scope)
    state = CallState(call, pipeline.plan_for(tool), scope, start)
    tracer = pipeline.tracer
    if tracer is not None and tracer.live():  # a span of its own, linked to the span of the call that parked
        state.span = tracer.open(call, entry.tool, tool.description, start, (parked.trace,) if parked.trace else ())
    state.key, state.step, state.arguments = entry.key, entry.step, validated
    state.resumed = parked.kind != "approval"  # an approved call goes on as any call: an external one waits again
    state.waited = waited
    state.answers = list(parked.answers) + ([answer] if parked.kind == "input" else [])
    state.asked_state = parked.state
    try:
        return await _go_on(pipeline, state, parked, answer, error)
    except BaseException as exc:  # the application's mistake: a call that did not act waits again
        if state.span is not None:
            pipeline.trace_escaped(state, exc)
        await stage.interrupted(state)
        raise


async def _go_on(pipeline: Pipeline, state: CallState, parked: Parked, answer: Any, error: str | None) -> ToolResult:
    """The stages a resumed call goes through: its end, a denial, or execution."""
    call, plan, start = state.call, state.plan, state.start
    tool = plan.tool
    if parked.kind == "external":
        if error is not None:
            return await pipeline.end(state, failed(call, plan.name, "tool_error", error, start))
        return await pipeline.end(state, finish(call, tool, answer, start, pipeline.boundary.store, plan.encoder))
    if parked.kind == "approval" and not answer["approved"]:
        rule = plan.approval.name if plan.approval is not None else "approval"
        reason = answer.get("reason") or "the approver said no"
        pipeline.note_denied(state, rule, reason)
        return await pipeline.end(state, denied(call, plan.name, rule, reason, start))
    read = read_arguments(state, events=pipeline.sink is not None)  # checked again, by this toolbox
    if isinstance(read, ToolResult):
        return await pipeline.end(state, read)
    return await pipeline.go(state, read)


async def _outcome(pipeline: Pipeline, entry: JournalEntry, step: int, scope: Scope) -> ToolResult:
    """What a call the handle no longer moves stands at: its final result, waited for if it runs.

    A call another live worker runs is waited for as long as a journaled call would be (see
    `JournalStage.wait_bound`); past that, its pending result says it is still running.
    """
    stage = pipeline.journal_stage
    io = stage.faces.on(scope.driver.asynchronous)
    delay = 0.002
    tool = pipeline.admission.toolbox.get(entry.tool)
    waited_until = time.monotonic() + (stage.wait_bound(tool) if tool is not None else 600.0)
    while True:
        now = await poll_entry(pipeline, entry, scope)
        if now.status != "pending" or (entry.state == "pending" and entry.step != step):
            return now  # ended, or waiting for something new (a new handle)
        if stage.token.cancelled or time.monotonic() > waited_until:
            return now
        running = entry.state == "started" or stage.entries.parked(entry).kind == "task"
        if running and not holds(entry):
            message = f"Tool {entry.tool!r} was running this call in a worker that stopped; it may have acted."
            unknown = failed(ToolCall(entry.call_id, entry.tool, {}), entry.tool, "outcome_unknown", message, 0)
            unknown.status = "outcome_unknown"
            ended = await stage.record_entry(io, entry, unknown)
            if ended is not None:
                return ended
        await scope.driver.pause(delay, stage.token)
        delay = min(delay * 2, 0.05)
        entry = await _entry(io, entry.key)


async def poll_entry(pipeline: Pipeline, entry: JournalEntry, scope: Scope) -> ToolResult:
    """The call's final result if it ended (or just expired), else its pending result."""
    stage = pipeline.journal_stage
    if entry.state == "done":
        return stage.entries.stored(entry, entry.call_id)
    if entry.state == "started":  # resumed, and running: no answer moves it now
        return stage.entries.running_result(entry)
    parked = stage.entries.parked(entry)
    if entry.state == "pending" and time.time() >= parked.expires_at:
        return await end_entry(pipeline, entry, "expired", scope)
    return stage.entries.pending_result(entry, entry.call_id)


async def poll(pipeline: Pipeline, handle: str, scope: Scope) -> ToolResult:
    """Where the call of a handle stands now: its final result, or its pending one (never waits)."""
    stage = pipeline.journal_stage
    key, _ = stage.handles.read_handle(handle)
    return await poll_entry(pipeline, await _entry(stage.faces.on(scope.driver.asynchronous), key), scope)


async def end_entry(pipeline: Pipeline, entry: JournalEntry, why: str, scope: Scope) -> ToolResult:
    """End a pending call (``expired`` or ``cancelled``) once, and tell the sink its final result."""
    stage = pipeline.journal_stage
    io = stage.faces.on(scope.driver.asynchronous)
    result = await stage.ended(io, entry, pipeline.admission.toolbox.get(entry.tool), why)
    if result is None:  # resumed meanwhile: it ends as it runs
        return await _outcome(pipeline, await _entry(io, entry.key), entry.step, scope)
    stage.tasks.stop(entry.key)
    return await _told(pipeline, entry, result, scope)


async def expire(pipeline: Pipeline, now: float, scope: Scope) -> list[ToolResult]:
    """End every pending call of the journal whose time is up by ``now``; their final results.

    A call resumed meanwhile is no longer waiting: it is left to end as it runs.
    """
    stage = pipeline.journal_stage
    io = stage.faces.on(scope.driver.asynchronous)
    ended = []
    for entry in await io.waiting():
        try:
            due = stage.entries.parked(entry).expires_at <= now
        except JournalError as exc:  # one entry this version cannot read stops no other from ending
            logging.getLogger("tinytools.journal").error("expire skipped an entry: %s", exc)
            continue
        if not due:
            continue
        result = await stage.ended(io, entry, pipeline.admission.toolbox.get(entry.tool), "expired")
        if result is not None:
            stage.tasks.stop(entry.key)
            ended.append(await _told(pipeline, entry, result, scope))
    return ended


def _trace_end_of(pipeline: Pipeline, entry: JournalEntry, result: ToolResult, start: int) -> None:
    """The span of a pending call that ended without running again, linked to the span that parked it."""
    tracer = pipeline.tracer
    if tracer is None or not tracer.live():
        return
    try:
        parent = pipeline.journal_stage.entries.parked(entry).trace if entry.pending else None
    except JournalError:
        parent = None
    call = ToolCall(entry.call_id, entry.tool, {})
    tracer.alone(call, result, start, links=(parent,) if parent else ())


async def _told(pipeline: Pipeline, entry: JournalEntry, result: ToolResult, scope: Scope) -> ToolResult:
    """A pending call's end (expired or cancelled), traced and told to the sink."""
    _trace_end_of(pipeline, entry, result, perf_counter_ns() - result.elapsed)
    if pipeline.sink is None:
        return result
    done = pipeline.complete(ToolCall(entry.call_id, entry.tool, {}), result, None, scope)
    return done if isinstance(done, ToolResult) else await done


async def cancel_pending(pipeline: Pipeline, handle: str | None, scope: Scope) -> list[ToolResult]:
    """End one pending call (its handle), or every pending call of this run, as cancelled."""
    stage = pipeline.journal_stage
    io = stage.faces.on(scope.driver.asynchronous)
    if handle is None:
        entries = await io.waiting(stage.run_id)
    else:
        key, _ = stage.handles.read_handle(handle)
        entry = await _entry(io, key)
        if entry.state == "started":  # already resumed: a task of this process is told, and the end awaited
            stage.tasks.stop(entry.key)
            return [await _outcome(pipeline, entry, entry.step, scope)]
        if entry.state != "pending":
            return [await poll_entry(pipeline, entry, scope)]
        entries = [entry]
    ended = []
    for entry in entries:
        try:
            ended.append(await end_entry(pipeline, entry, "cancelled", scope))
        except JournalError as exc:
            if handle is not None:
                raise
            logging.getLogger("tinytools.journal").error("cancel skipped an entry: %s", exc)
    return ended


async def _entry(io: AsyncJournal, key: str) -> JournalEntry:
    entry = await io.get(key)
    if entry is None:
        raise PendingError("the journal holds no call for this handle", code="unknown_handle")
    return entry
