"""The execution stage: bind a call's arguments by slot and run the tool, within its tries.

Each attempt is bound afresh (a retry sees the arguments as sent), receives the runtime values
only the pipeline makes (its token, `Invocation`, `Progress`, the stores), and runs through the
driver, bounded by the tool's timeout and the run's cancellation. No attempt starts once the run
was cancelled or its deadline passed; only an idempotent tool is tried again, after a timeout, a
`RetryableError` or a lost worker, with backoff. What the tool returned then meets the output
checks and the application's result rules.
"""

from __future__ import annotations

from collections.abc import Awaitable
from time import perf_counter_ns
from typing import Any

from tinytools._context import (
    Ask,
    CancellationToken,
    Discovery,
    IdempotencyKey,
    Invocation,
    Progress,
    RunContext,
    Stores,
)
from tinytools._errors import ArgumentsError, NeedsInput, RetryableError, TransferError, WaitsElsewhere, kept
from tinytools._events import ToolEvent, ToolOutputChunk, ToolStarted
from tinytools._results import ToolResult
from tinytools._run.admission import Admission
from tinytools._run.boundary import Boundary
from tinytools._run.call_state import Flight, invalid, read_arguments, started_arguments
from tinytools._run.failures import cancelled, denied, executor_failure, propagates, timed_out, tool_failure, waiting
from tinytools._run.jobs import CANCELLED, RAISED, REFUSED, RETURNED, Channel, Outcome, Work
from tinytools._run.output_checks import finish
from tinytools._run.plans import DefaultFailed, Read
from tinytools._run.policy_enforcement import Policies
from tinytools._run.secrets import Secrets
from tinytools._run.streams import TooLarge, async_stream, sync_stream, then_end
from tinytools.executors._failures import ExecutorError

__all__ = ["BACKOFF_SECONDS", "Attempts"]

BACKOFF_SECONDS = 0.05
"""First retry delay; doubled on each further attempt."""


def _nothing() -> None:
    """The end of a stream nobody listens to: nothing to let out."""


class Attempts:
    """The execution stage of one dispatcher (see the module)."""

    def __init__(
        self,
        *,
        admission: Admission,
        boundary: Boundary,
        policies: Policies,
        sink: Any,
        token: CancellationToken,
        context: RunContext,
        stores: Stores,
    ):
        self.admission = admission
        self.boundary = boundary
        self.policies = policies
        self.sink = sink
        self.token = token
        self.context = context
        self.stores = stores

    def execute(self, flight: Flight, read: Read) -> Awaitable[ToolResult]:
        """Bind and run the tool: at most its tries, never after the run stopped, within the gate."""
        if flight.scope.gate is None and not flight.plan.runtime and flight.plan.tool.streams is None:
            return self.attempts(flight, read)  # nothing to hold or to close around the attempts
        return self.guarded(flight, read)

    async def guarded(self, flight: Flight, read: Read) -> ToolResult:
        """The attempts, within the batch's gate, closing the call's progress channel and token after."""
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
        admission = self.admission
        for attempt in range(1, plan.tries + 1):
            if admission.checked:  # none starts once the run was cancelled or its deadline passed
                stopped = admission.stopped(call, plan.name, flight.start, retry=attempt > 1)
                if stopped is not None:
                    return stopped
            if attempt > 1:
                await driver.pause(BACKOFF_SECONDS * 2 ** (attempt - 2), self.token)
                stopped = self.admission.stopped(call, plan.name, flight.start, retry=True)
                if stopped is not None:
                    return stopped
                again = read_arguments(
                    flight, events=self.sink is not None
                )  # a retry sees the arguments as sent, not as the last attempt left them
                if again.__class__ is not Read:
                    return again  # type: ignore[return-value]
                read = again
                if flight.token is not None:  # the last attempt's token was cancelled by its timeout
                    flight.token.detach()
                    flight.token = None  # the next attempt gets a fresh one
            work = self.work(flight, read, attempt)
            if work.__class__ is not Work:
                return work  # type: ignore[return-value]
            if self.sink is not None:
                elapsed = perf_counter_ns() - flight.start
                pending = driver.emit(ToolStarted(call.id, plan.name, elapsed, started_arguments(read, call), attempt))
                if pending is not None:
                    await pending
            flight.acted = True
            outcome = driver.start(work)
            if outcome.__class__ is not Outcome:
                try:
                    outcome = await outcome  # type: ignore[misc]
                except BaseException:  # the call's task was cancelled: a sync tool hears it through its token
                    if flight.token is not None:
                        flight.token.cancel("cancelled")
                    raise
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
            return invalid(flight, kept(exc), events=self.sink is not None)
        except DefaultFailed as exc:
            return tool_failure(flight.call, plan.name, exc.error, flight.start, plan.exposed)
        if secrets and flight.secrets is None:
            flight.secrets = Secrets.of(secrets)
        tool = plan.tool
        if plan.route is not None:
            route = plan.route
            streamed = (self.stream(flight, tool.fn),) if tool.streams is not None else ()
            return Work(
                route.run, (flight.call, args, kwargs, *streamed), {}, name=plan.name, is_async=True,
                timeout=tool.timeout, token=self.token, channel=flight.channel,
            )  # fmt: skip
        fn = tool.call or tool.fn
        if tool.streams is not None:
            fn = self.stream(flight, fn)
        elif flight.channel is not None and "progress" in tool.wants:  # its emitted pieces end with it
            fn = then_end(fn, flight.channel, is_async=tool.is_async)
        return Work(
            fn, args, kwargs, name=plan.name, is_async=tool.is_async,
            timeout=tool.timeout, token=self.token, channel=flight.channel,
        )  # fmt: skip

    def stream(self, flight: Flight, fn: Any) -> Any:
        """A generator tool's function, run to its end: each piece an event, its end the output."""
        if flight.token is None:
            flight.token = CancellationToken(parent=self.token)  # a timeout stops the stream at its next piece
        channel = self.channel(flight)
        wrap = async_stream if flight.plan.tool.streams == "async" else sync_stream
        boundary = self.boundary
        keep = None if boundary.store is not None else boundary.limit  # text past the budget: kept only to store
        if channel is None:
            return wrap(fn, None, _nothing, flight.token, keep)
        call_id, name, start = flight.call.id, flight.plan.name, flight.start

        def send(kind: str, piece: Any) -> None:
            channel.send(ToolOutputChunk(call_id, name, perf_counter_ns() - start, kind, piece))

        return wrap(fn, send, lambda: channel.send(None), flight.token, keep)

    def channel(self, flight: Flight) -> Channel | None:
        """The call's way to the sink, made on first use; None when nobody listens."""
        if flight.channel is None and self.sink is not None:
            flight.channel = Channel(lambda event: self.seal(flight, event))
        return flight.channel

    def seal(self, flight: Flight, event: ToolEvent | None) -> list[ToolEvent]:
        """One event of a running call, model-facing: a streamed piece through the call's stream boundary."""
        if event is not None and event.__class__ is not ToolOutputChunk:
            return [self.boundary.event(event, flight.secrets)]
        if flight.pieces is None:
            flight.pieces = self.boundary.stream(flight.secrets, flight.plan.encoder)
        pieces = flight.pieces.end() if event is None else flight.pieces.piece(event.kind, event.data)
        call_id, name, elapsed = flight.call.id, flight.plan.name, perf_counter_ns() - flight.start
        return [ToolOutputChunk(call_id, name, elapsed, piece.kind, piece.data) for piece in pieces]

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
            channel = self.channel(flight)
            send = channel.send if channel is not None else None
            values["progress"] = Progress(call.id, plan.name, flight.start, send)
        if "stores" in wants:
            values["stores"] = self.stores
        if "key" in wants:
            values["key"] = IdempotencyKey(flight.act or flight.key or "")
        if "ask" in wants:
            values["ask"] = Ask(flight.answers or ())
        if "discovery" in wants:
            values["discovery"] = Discovery(lambda query, k: self.discover(flight, query, k))
        return values

    def discover(self, flight: Flight, query: str, k: int) -> list[Any]:
        """The deferred tools of this dispatcher's toolbox a search finds, revealed for the run.

        Tools a policy denies, or that this turn's allowlist leaves out, are not found.
        """
        if k < 1:
            return []
        allowed, denial = flight.scope.allowed, self.policies.denial
        toolbox = self.admission.toolbox
        wanted = 2 * k + 8
        while True:
            ranked = toolbox.search(query, k=wanted, deferred_only=True)
            found = [tool for tool in ranked if denial(tool) is None and (allowed is None or tool.name in allowed)]
            if len(found) >= k or len(ranked) < wanted:
                break
            wanted *= 4  # many of the best were left out: look further down the ranking
        found = found[:k]
        self.admission.revealed.add(tool.name for tool in found)
        return found

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
            result = finish(call, plan.tool, value, start, self.boundary.store, plan.encoder)
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
        if isinstance(exc, NeedsInput):  # the tool waits for the user: the journal stage parks the call
            return waiting(call, plan.name, "input", exc.message, exc.schema, exc.ttl), False
        if isinstance(exc, TooLarge):  # a text stream past the budget, with no store to take it
            return self.failure(flight, self.boundary.too_large(call, plan.name, exc.size, start), None), False
        if isinstance(exc, WaitsElsewhere):  # the call goes on outside: the application resumes it with the output
            return waiting(call, plan.name, "external", exc.message, plan.tool.output_schema or {}, exc.ttl), False
        result = tool_failure(call, plan.name, exc, start, plan.exposed)
        if isinstance(exc, RetryableError) and not last:
            return result, True
        return self.failure(flight, result, exc), False

    def failure(self, flight: Flight, result: ToolResult, exc: BaseException | None) -> ToolResult:
        """Note the tool's failure for the `ToolFailed` event, and hand the result on."""
        flight.failure, flight.exception = result, exc
        return result
