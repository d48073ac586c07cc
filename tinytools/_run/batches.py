"""Batches: a model's calls of one turn, run in order groups, results in call order.

Calls are grouped by the tool each reaches (a `Rewrite` included): consecutive calls to
parallel-safe tools run together, at most ``max_concurrency`` at once; a call to a serial tool
(``@tool(parallel_safe=False)``) waits for everything before it and runs alone. A group's calls
are admitted in call order when the group's turn comes, so the budget counts in call order and a
cancellation reaches every call after it. The `Gate` (`tinytools._run.gate`) keeps a serial tool
alone for a call a middleware moved to one, too. A call id seen earlier in the batch is refused
(``duplicate_call_id``).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any

from tinytools._results import ToolCall, ToolResult
from tinytools._run.admission import Admitted
from tinytools._run.call_state import Scope
from tinytools._run.failures import failed
from tinytools._run.pipeline import Pipeline
from tinytools._run.threads import LEFTOVER_GRACE, abandon_task

__all__ = ["run_batch"]


async def run_batch(pipeline: Pipeline, calls: list[ToolCall], scope: Scope, max_concurrency: int) -> list[ToolResult]:
    """Run a batch (see the module); one result per call, in call order."""
    import asyncio  # imported on first use: it alone costs more than importing tinytools

    results: list[ToolResult | None] = [None] * len(calls)
    semaphore = asyncio.Semaphore(max_concurrency)

    async def one(index: int, entry: Admitted | ToolResult, start: int) -> None:
        call = calls[index]
        if entry.__class__ is not Admitted:
            results[index] = await pipeline.refused(call, entry, scope, start)  # type: ignore[arg-type]
            return
        async with semaphore:
            results[index] = await pipeline.run_admitted(entry, scope, start)

    async def run(group: list[int]) -> None:
        admitted = []
        for index in group:  # admitted in call order, when the group's turn comes
            start = perf_counter_ns()
            admitted.append((index, pipeline.admission.admit(calls[index], scope.allowed, start), start))
        tasks = [asyncio.ensure_future(one(*item)) for item in admitted]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a call raised (or the caller was cancelled): no call of the batch runs on
            for task in tasks:
                task.cancel()
            names = [calls[index].name for index, _, _ in admitted]
            try:
                await asyncio.wait(tasks, timeout=LEFTOVER_GRACE)
            except BaseException:  # the caller was cancelled meanwhile: it waits no longer, the check happens later
                asyncio.get_running_loop().call_later(LEFTOVER_GRACE, _strays, tasks, names)
                raise
            _strays(tasks, names)
            raise

    for group in _groups(pipeline, calls, results):
        await run(group)
    return [result for result in results if result is not None]


def _strays(tasks: list[Any], names: list[str]) -> None:
    """Log each call of a batch still running after its cancellation (its tool ignored it) as a stray.

    What an ended call raised is the batch's first exception or a sibling's, not news: it is read
    here, so asyncio does not log it as never retrieved.
    """
    for task, name in zip(tasks, names, strict=True):
        if not task.done():
            abandon_task(task, name)
        elif not task.cancelled():
            task.exception()


def _groups(pipeline: Pipeline, calls: list[ToolCall], results: list[ToolResult | None]) -> list[list[int]]:
    """The batch's calls in order groups: parallel-safe neighbours together, each serial call alone.

    A repeated call id is answered here, and takes no place in any group.
    """
    groups: list[list[int]] = []
    seen: set[str] = set()
    parallel: list[int] = []
    for index, call in enumerate(calls):
        if call.id in seen:
            message = f"Call id {call.id!r} was already used in this batch; the call was not made."
            start = perf_counter_ns()
            results[index] = repeated = failed(call, call.name, "duplicate_call_id", message, start)
            if pipeline.tracer is not None and pipeline.tracer.live():
                pipeline.tracer.alone(call, repeated, start)
            continue
        seen.add(call.id)
        tool = pipeline.admission.resolve(call)
        if tool is not None and not tool.parallel_safe:
            if parallel:
                groups.append(parallel)
                parallel = []
            groups.append([index])
        else:
            parallel.append(index)
    if parallel:
        groups.append(parallel)
    return groups
