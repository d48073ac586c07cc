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
method; the per-tool decisions come from the call's `Plan`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools.context import CancellationToken, Invocation, Progress, RunContext, Stores
from tinytools.errors import ArgumentsError, RetryableError, TransferError, kept, shorten
from tinytools.events import (
    InvalidToolArgs,
    ToolCompleted,
    ToolDenied,
    ToolEvent,
    ToolFailed,
    ToolStarted,
    UnknownToolCall,
)
from tinytools.executors.routes import ExecutorError
from tinytools.results import ToolCall, ToolResult
from tinytools.run.admission import Admission, Admitted
from tinytools.run.approval import Policies, ask
from tinytools.run.boundary import Boundary
from tinytools.run.drivers import CANCELLED, RAISED, REFUSED, RETURNED, Channel, Driver, Outcome, Work
from tinytools.run.outcomes import (
    cancelled,
    denied,
    executor_failure,
    failed,
    hook_failure,
    propagates,
    timed_out,
    tool_failure,
)
from tinytools.run.output import finish
from tinytools.run.plan import Plan, Read
from tinytools.run.secrets import Secrets

if TYPE_CHECKING:
    from tinytools.run.gate import Gate

__all__ = ["BACKOFF_SECONDS", "Flight", "Pipeline", "Scope", "call_arguments"]

BACKOFF_SECONDS = 0.05
"""First retry delay; doubled on each further attempt."""


class Scope:
    """What one entry point's call (or batch) brings: injected values, the allowlist, its step, its driver."""

    __slots__ = ("allowed", "driver", "gate", "inject", "step_id")

    def __init__(
        self,
        driver: Driver,
        inject: Mapping[str, Any] | None,
        allowed: frozenset[str] | set[str] | None,
        step_id: str,
        gate: Gate | None = None,
    ):
        self.driver = driver
        self.inject = inject
        self.allowed = allowed
        self.step_id = step_id
        self.gate = gate
        """Keeps a serial tool alone within a batch."""


class Flight:
    """One admitted call on its way through the stages."""

    __slots__ = ("call", "channel", "exception", "failure", "plan", "queued", "scope", "secrets", "start", "token")

    def __init__(self, call: ToolCall, plan: Plan, scope: Scope, start: int):
        self.call = call
        self.plan = plan
        self.scope = scope
        self.start = start
        self.secrets: Secrets | None = None
        """The secret values injected into the call, once bound."""
        self.token: CancellationToken | None = None
        """The call's own token, for a tool that takes one."""
        self.channel: Channel | None = None
        """The call's progress events, for a tool that reports them to a sink."""
        self.failure: ToolResult | None = None
        """The tool's own failure, for the `ToolFailed` event."""
        self.exception: BaseException | None = None
        """The exception behind `failure`, for logs."""
        self.queued: list[ToolEvent] = []
        """Events a sync stage made, delivered first by `Pipeline.complete`."""


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
        self.context = context
        self.stores = stores
        self.plan_for = plan_for

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
            found = self.read(flight)
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
        result = await self.execute(flight, authorised)
        if self.after:
            result = await self.after_middleware(flight, result)
        return result

    def read(self, flight: Flight) -> Read | ToolResult:
        """Decode and validate the call's arguments against the schema this dispatcher enforces."""
        try:
            read = flight.plan.read(flight.call)
        except ArgumentsError as exc:
            read = kept(exc)  # kept, not raised: no frame of this call in it
        if read.__class__ is Read:
            return read
        return self.invalid(flight, read)  # type: ignore[arg-type]

    def invalid(self, flight: Flight, error: ArgumentsError) -> ToolResult:
        """The invalid-arguments stage: the event, then the repairable result (or the raise of ``fail``)."""
        if self.sink is not None:
            recovery = "fail" if flight.plan.fail_invalid and error.keyword != "json" else "tool_error"
            elapsed = perf_counter_ns() - flight.start
            call = flight.call
            flight.queued.append(InvalidToolArgs(call.id, flight.plan.name, elapsed, call.arguments, error, recovery))
        return flight.plan.invalid(flight.call, error, flight.start)

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
        return self.read(flight)

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
            return self.read(flight)
        await self.emit_denied(flight, plan.approval.name, decision.reason)
        return denied(flight.call, plan.name, plan.approval.name, decision.reason, flight.start)

    async def execute(self, flight: Flight, read: Read) -> ToolResult:
        """Bind and run the tool: at most its tries, never after the run stopped, within the gate."""
        gate = flight.scope.gate
        if gate is not None:
            await gate.enter(flight.plan.serial)
        try:
            return await self.attempts(flight, read)
        finally:
            if gate is not None:
                await gate.leave(flight.plan.serial)
            if flight.channel is not None:
                flight.channel.close()  # progress sent after the call ended is not delivered
            if flight.token is not None:
                flight.token.detach()

    async def attempts(self, flight: Flight, read: Read) -> ToolResult:
        """Each attempt in turn: none once the run stopped, a retry only when the last attempt asks for one."""
        plan, call, driver = flight.plan, flight.call, flight.scope.driver
        result: ToolResult | None = None
        for attempt in range(1, plan.tries + 1):
            stopped = self.admission.stopped(call, plan.name, flight.start, retry=attempt > 1)
            if stopped is not None:
                return stopped
            if attempt > 1:
                await driver.pause(BACKOFF_SECONDS * 2 ** (attempt - 2), self.token)
                stopped = self.admission.stopped(call, plan.name, flight.start, retry=True)
                if stopped is not None:
                    return stopped
                again = self.read(flight)  # a retry sees the arguments as sent, not as the last attempt left them
                if again.__class__ is not Read:
                    return again  # type: ignore[return-value]
                read = again
            work = self.work(flight, read, attempt)
            if work.__class__ is not Work:
                return work  # type: ignore[return-value]
            if self.sink is not None:
                elapsed = perf_counter_ns() - flight.start
                await driver.emit(ToolStarted(call.id, plan.name, elapsed, _started_arguments(read, call), attempt))
            outcome = await driver.execute(work)
            result, retry = self.settle(flight, outcome, last=attempt == plan.tries)
            if not retry:
                return result
        assert result is not None
        return result

    def work(self, flight: Flight, read: Read, attempt: int) -> Work | ToolResult:
        """The tool's call for one attempt: its arguments bound by slot, with runtime values."""
        plan = flight.plan
        runtime = self.runtime(flight, attempt) if plan.runtime else None
        try:
            args, kwargs, secrets = plan.bind(read, flight.scope.inject, runtime)
        except ArgumentsError as exc:
            return self.invalid(flight, kept(exc))
        if secrets and flight.secrets is None:
            flight.secrets = Secrets.of(secrets)
        tool = plan.tool
        if plan.route is not None:
            route = plan.route
            return Work(
                route.run, (flight.call, args, kwargs), {}, name=plan.name, is_async=True,
                timeout=tool.timeout, token=self.token, channel=flight.channel,
            )  # fmt: skip
        return Work(
            plan.function(), args, kwargs, name=plan.name, is_async=tool.is_async,
            timeout=tool.timeout, token=self.token, channel=flight.channel,
        )  # fmt: skip

    def runtime(self, flight: Flight, attempt: int) -> dict[str, Any]:
        """The values only the pipeline makes, for a tool that takes them by type."""
        plan, call = flight.plan, flight.call
        wants = plan.tool.wants
        values: dict[str, Any] = {"call": call}
        if "token" in wants:
            if flight.token is None:
                flight.token = CancellationToken(parent=self.token)
            values["token"] = flight.token
        if "invocation" in wants:
            values["invocation"] = self.invocation(flight, attempt)
        if "progress" in wants:
            if flight.channel is None and self.sink is not None:
                flight.channel = Channel(lambda event: self.boundary.event(event, flight.secrets))
            send = flight.channel.send if flight.channel is not None else None
            values["progress"] = Progress(call.id, plan.name, flight.start, send)
        if "stores" in wants:
            values["stores"] = self.stores
        return values

    def invocation(self, flight: Flight, attempt: int) -> Invocation:
        """The trusted identity of one execution of a tool."""
        context = self.context
        return Invocation(
            flight.call,
            flight.plan.name,
            run_id=context.run_id,
            step_id=flight.scope.step_id,
            session_id=context.session_id,
            agent_id=context.agent_id,
            workspace_id=context.workspace_id,
            actor=context.actor,
            attempt=attempt,
            max_inline_output_bytes=self.boundary.limit,
            deadline=self.admission.deadline_at,
        )

    def settle(self, flight: Flight, outcome: Outcome, *, last: bool) -> tuple[ToolResult, bool]:
        """The result of one attempt, and whether to try again."""
        plan, call, start = flight.plan, flight.call, flight.start
        kind, value = outcome.kind, outcome.value
        if kind == RETURNED:
            result = finish(call, plan.tool, value, start, self.boundary.store)
            if result.status != "succeeded":
                return self.failure(flight, result, None), False
            refused = self.policies.result_denial(plan.tool, result) if self.policies.middleware else None
            if refused is not None:
                return denied(call, plan.name, refused[0], refused[1], start), False
            return result, False
        if kind == RAISED:
            return self.raised(flight, value, last=last)
        if kind == CANCELLED:
            return cancelled(call, plan.tool, start, started=True), False
        if kind == REFUSED:
            error = ExecutorError("executor_unavailable", str(value), may_have_acted=False)
            return self.failure(flight, executor_failure(error, call, plan.tool, start), value), False
        if flight.token is not None:
            flight.token.cancel("timeout")  # a cooperative tool still running can stop
        if not last:
            return timed_out(call, plan.tool, start), True
        return self.failure(flight, timed_out(call, plan.tool, start), None), False

    def raised(self, flight: Flight, exc: BaseException, *, last: bool) -> tuple[ToolResult, bool]:
        """The result of an attempt that raised, and whether to try again."""
        plan, call, start = flight.plan, flight.call, flight.start
        if isinstance(exc, TransferError):  # the application's configuration, like a missing injected value
            raise exc
        if propagates(exc):  # an asyncio CancelledError the tool raised: cancellation of the run, or its caller's
            if not self.token.cancelled:
                raise exc
            return cancelled(call, plan.tool, start, started=True), False
        if isinstance(exc, ExecutorError):
            return self.failure(flight, executor_failure(exc, call, plan.tool, start), exc), not last
        result = tool_failure(call, plan.name, exc, start, plan.exposed)
        if isinstance(exc, RetryableError) and not last:
            return result, True
        return self.failure(flight, result, exc), False

    def failure(self, flight: Flight, result: ToolResult, exc: BaseException | None) -> ToolResult:
        """Note the tool's failure for the `ToolFailed` event, and hand the result on."""
        flight.failure, flight.exception = result, exc
        return result

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


def _started_arguments(read: Read, call: ToolCall) -> dict[str, Any]:
    return read.arguments if read.arguments is not None else call_arguments(call)


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """The arguments of a call as data, for events and approvers (decoded when they are text)."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = msgspec.json.decode(arguments)
    except (ValueError, TypeError, RecursionError):  # DecodeError is a ValueError
        return {}
    return decoded if isinstance(decoded, dict) else {}
