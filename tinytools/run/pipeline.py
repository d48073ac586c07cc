"""The pipeline: the ordered stages every call goes through, whatever its entry point.

::

    admission (limits, lookup, Rewrite, allowlist)   → refusal
    read: decode and validate once                   → invalid arguments (repairable)
    before-middleware (a replaced call is read again)
    policy: static rules, then the approver, on the final arguments
    bind by slot, then execute (timeout, cancellation, retries of idempotent tools)
    output checks, result rules, after-middleware
    the boundary (scrub, budget) → events → the one `ToolResult`

It is written once, as coroutines that never wait on anything but their driver
(`tinytools.run.drivers`), so the same code serves sync and async entry points. Each stage is a
method; the per-tool decisions come from the call's `Plan`. Reading is `tinytools.run.flight`'s,
the execution stage `tinytools.run.attempts`'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter_ns
from typing import Any

import msgspec

from tinytools.context import CancellationToken, RunContext, Stores
from tinytools.errors import shorten
from tinytools.events import ToolCompleted, ToolDenied, ToolEvent, ToolFailed, UnknownToolCall
from tinytools.results import ToolCall, ToolResult
from tinytools.run.admission import Admission, Admitted
from tinytools.run.approval import Policies, ask
from tinytools.run.attempts import Attempts
from tinytools.run.boundary import Boundary
from tinytools.run.flight import Flight, Scope, call_arguments, read_arguments
from tinytools.run.outcomes import cancelled, denied, failed, hook_failure, propagates
from tinytools.run.plan import Plan, Read

__all__ = ["Pipeline"]


class Pipeline:
    """The stages of one dispatcher (see the module)."""

    def __init__(
        self,
        *,
        admission: Admission,
        boundary: Boundary,
        policies: Policies,
        middleware: Sequence[Any],
        sink: Any,
        token: CancellationToken,
        context: RunContext,
        stores: Stores,
        plan_for: Callable[[Any], Plan],
    ):
        self.admission = admission
        self.boundary = boundary
        self.policies = policies
        hooks = [m for m in middleware if m not in policies.middleware]
        self.before = [m.before_tool for m in hooks if hasattr(m, "before_tool")]
        self.after = [m.after_tool for m in hooks if hasattr(m, "after_tool")]
        self.sink = sink
        self.token = token
        self.plan_for = plan_for
        self.attempts = Attempts(
            admission=admission,
            boundary=boundary,
            policies=policies,
            sink=sink,
            token=token,
            context=context,
            stores=stores,
        )

    async def run(self, call: ToolCall, scope: Scope) -> ToolResult:
        """One call, from admission to its final event."""
        start = perf_counter_ns()
        admitted = self.admission.admit(call, scope.allowed, start)
        if admitted.__class__ is not Admitted:
            return await self.refused(call, admitted, scope, start)  # type: ignore[arg-type]
        return await self.run_admitted(admitted, scope, start)

    async def refused(self, call: ToolCall, result: ToolResult, scope: Scope, start: int) -> ToolResult:
        """Finish a call admission refused."""
        if self.sink is not None:
            await scope.driver.emit(_refusal_event(call, result, start))
        return await self.complete(call, self.boundary.seal(result, None, start), None, scope)

    async def run_admitted(self, admitted: Admitted, scope: Scope, start: int, read: Read | None = None) -> ToolResult:
        """The stages after admission (``read``: arguments a caller already read)."""
        flight = Flight(admitted.call, admitted.plan, scope, start)
        if self.sink is not None and admitted.sent.name not in self.admission.toolbox:
            elapsed = perf_counter_ns() - start
            sent = admitted.sent
            event = UnknownToolCall(
                sent.id, flight.plan.name, elapsed, sent.name, sent.arguments, f"rewrite:{flight.plan.name}"
            )
            await scope.driver.emit(event)
        result = await self.stages(flight, read)
        result = self.boundary.seal(result, flight.secrets, start)
        return await self.complete(flight.call, result, flight, scope)

    async def stages(self, flight: Flight, read: Read | None) -> ToolResult:
        """Read, before-middleware, policy, execute, after-middleware."""
        if read is None:
            found = read_arguments(flight, events=self.sink is not None)
            if found.__class__ is not Read:
                return found  # type: ignore[return-value]
            read = found
        if self.before:
            moved = await self.before_middleware(flight, read)
            if moved.__class__ is not Read:
                return moved  # type: ignore[return-value]
            read = moved
        authorised = await self.authorise(flight, read)
        if authorised.__class__ is not Read:
            return authorised  # type: ignore[return-value]
        result = await self.attempts.execute(flight, authorised)
        if self.after:
            result = await self.after_middleware(flight, result)
        return result

    async def before_middleware(self, flight: Flight, read: Read) -> Read | ToolResult:
        """Each before-middleware in order: go on, replace the call (read again), or answer it."""
        for before in self.before:
            try:
                outcome = await flight.scope.driver.settle(before(flight.call, flight.plan.tool))
            except BaseException as exc:
                if propagates(exc):
                    raise
                return hook_failure(flight.call, flight.plan.name, "middleware", exc, flight.start)
            if isinstance(outcome, ToolResult):
                if self.sink is not None and outcome.error is not None and outcome.error.code == "policy_denied":
                    rule = (outcome.error.details or {}).get("rule", "policy")
                    await self.emit_denied(flight, rule, outcome.error.message)
                return outcome
            if isinstance(outcome, ToolCall):
                moved = self.relocate(flight, outcome)
                if moved.__class__ is not Read:
                    return moved
                read = moved
        return read

    def relocate(self, flight: Flight, call: ToolCall) -> Read | ToolResult:
        """A call a middleware replaced: looked up, checked against the allowlist and read again."""
        tool = self.admission.toolbox.get(call.name)
        if tool is None:
            message = f"Middleware sent the call to an unknown tool {shorten(call.name)!r}."
            return failed(call, call.name, "unknown_tool", message, flight.start)
        allowed = flight.scope.allowed
        if allowed is not None and tool.name not in allowed:
            message = f"Tool {shorten(call.name)!r} is not available in this turn."
            return failed(call, tool.name, "tool_not_allowed", message, flight.start)
        flight.call = ToolCall(flight.call.id, tool.name, call.arguments, call.invalid)
        flight.plan = self.plan_for(tool)
        return read_arguments(flight, events=self.sink is not None)

    async def authorise(self, flight: Flight, read: Read) -> Read | ToolResult:
        """The policy stage: static rules, then the approver, on the final validated arguments."""
        plan = flight.plan
        if plan.denial is not None:
            rule, reason = plan.denial
            await self.emit_denied(flight, rule, reason)
            return denied(flight.call, plan.name, rule, reason, flight.start)
        if plan.approval is None:
            return read
        arguments = read.arguments if read.arguments is not None else call_arguments(flight.call)
        decision = await ask(plan.approval, plan.tool, flight.call, arguments, flight.scope.driver, self.token)
        if decision.kind == "approve":
            return read
        if decision.kind == "cancelled":
            return cancelled(flight.call, plan.tool, flight.start, started=False)
        if decision.kind == "edit":
            flight.call = ToolCall(flight.call.id, plan.name, decision.arguments or {})
            return read_arguments(flight, events=self.sink is not None)
        await self.emit_denied(flight, plan.approval.name, decision.reason)
        return denied(flight.call, plan.name, plan.approval.name, decision.reason, flight.start)

    async def after_middleware(self, flight: Flight, result: ToolResult) -> ToolResult:
        """Each after-middleware in order: keep the result or replace it."""
        for after in self.after:
            try:
                replacement = await flight.scope.driver.settle(after(flight.call, flight.plan.tool, result))
            except BaseException as exc:
                if propagates(exc):
                    raise
                result = hook_failure(flight.call, flight.plan.name, "middleware", exc, flight.start)
                continue
            if isinstance(replacement, ToolResult):
                result = replacement
        return result

    async def emit_denied(self, flight: Flight, rule: str, reason: str) -> None:
        """The `ToolDenied` event of a call a rule refused."""
        if self.sink is not None:
            elapsed = perf_counter_ns() - flight.start
            await flight.scope.driver.emit(ToolDenied(flight.call.id, flight.plan.name, elapsed, rule, reason))

    async def complete(self, call: ToolCall, result: ToolResult, flight: Flight | None, scope: Scope) -> ToolResult:
        """Deliver the call's last events (`ToolFailed`, `ToolCompleted`) and hand the result back."""
        if result.call_id != call.id:  # middleware's own result: it still answers this call
            result = msgspec.structs.replace(result, call_id=call.id)
        if self.sink is None:
            return result
        driver = scope.driver
        if flight is not None:
            for event in flight.queued:
                await driver.emit(event)
            if flight.failure is not None and flight.failure.error is not None:
                error = self.boundary.error(flight.failure.error, flight.secrets)
                elapsed = perf_counter_ns() - flight.start
                await driver.emit(ToolFailed(call.id, flight.plan.name, elapsed, error, flight.exception))
        start = flight.start if flight is not None else perf_counter_ns() - result.elapsed
        await driver.emit(ToolCompleted(call.id, result.name, perf_counter_ns() - start, result))
        return result


def _refusal_event(call: ToolCall, result: ToolResult, start: int) -> ToolEvent:
    elapsed = perf_counter_ns() - start
    code = result.error.code if result.error else ""
    if code == "unknown_tool":
        return UnknownToolCall(call.id, call.name, elapsed, call.name, call.arguments, "tool_error")
    reason = result.error.message if result.error else ""
    return ToolDenied(call.id, result.name, elapsed, code, reason)
