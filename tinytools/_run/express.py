"""The express path: the whole call of a plain plan, as one function made when the plan is made.

A plan whose tool needs nothing around its call (`Plan.express`) runs the stages of the
pipeline that it has (read, bind, call, the output checks, the boundary) in as few steps as a
call can take, on the calling thread: everything it reads per call is fixed when it is made.
This is where a plain call's time goes, so it is a closure rather than methods; every branch off
the common case (a call the typed reader does not read, a failure, an output that is not plain
data or does not fit the budget) ends in the same stage functions the pipeline uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from time import perf_counter_ns
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError, kept
from tinytools._results import ToolCall, ToolResult
from tinytools._run.admission import Admission
from tinytools._run.failures import propagates, tool_failure
from tinytools._run.output_checks import PLAIN_OUTPUT, finish
from tinytools._run.plans import Plan

__all__ = ["express", "within"]


def express(plan: Plan, admission: Admission) -> Callable[[ToolCall, Mapping[str, Any] | None], ToolResult]:
    """The express path of ``plan`` (see the module); ``admission`` holds the run's limits."""
    tool, name, boundary, exposed = plan.tool, plan.name, plan.boundary, plan.exposed
    reader = plan.reader()
    limit, encoder = plan.limit, plan.encoder
    unchecked = not tool.validate_output
    encode = msgspec.json.encode
    now = perf_counter_ns
    plain = PLAIN_OUTPUT
    fn = tool.fn

    def run(call: ToolCall, inject: Mapping[str, Any] | None) -> ToolResult:
        start = now()
        if admission.checked:  # the run's limits, as any call meets them
            refusal = admission.refusal(call, start)
            if refusal is not None:
                return refusal
        else:
            admission.calls += 1
        values = None
        if reader is not None:
            try:
                values = reader(call)
            except ArgumentsError as exc:  # a failed result of a plain plan needs nothing from the boundary
                return plan.invalid(call, kept(exc), start)
        try:
            if values is not None:
                output = fn(*values)
            else:
                bound = plan.bound(call, inject, start)
                if bound.__class__ is ToolResult:
                    return bound
                output = (tool.call or tool.fn)(*bound[0], **bound[1])  # type: ignore[index]
        except BaseException as exc:
            if propagates(exc):
                raise
            return tool_failure(call, name, exc, start, exposed)
        if output.__class__ in plain and unchecked:
            try:
                encoded = encode(output)
            except (TypeError, ValueError, OverflowError, RecursionError):
                pass
            else:
                if (len(encoded) <= limit or within(boundary.limit, output, encoded)) and b"null" not in encoded:
                    return ToolResult(
                        call_id=call.id, name=name, status="succeeded", output=output, elapsed=now() - start
                    )
        return boundary.seal(finish(call, tool, output, start, boundary.store, encoder), None, start)

    return run


def within(limit: int | None, output: Any, encoded: bytes) -> bool:
    """Whether the model-facing text of ``output`` (itself for a string, else its JSON) fits ``limit`` bytes."""
    if limit is None:
        return True
    if output.__class__ is not str:
        return len(encoded) <= limit
    return len(output) * 4 <= limit or len(output.encode("utf-8", "surrogatepass")) <= limit
