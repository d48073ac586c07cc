"""The execution stage: bind a call's arguments by slot and run the tool, within its tries.

Each attempt is bound afresh (a retry sees the arguments as sent), receives the runtime values
only the pipeline makes (its token, `Invocation`, `Progress`, the stores), and runs through the
driver, bounded by the tool's timeout and the run's cancellation. No attempt starts once the run
was cancelled or its deadline passed; only an idempotent tool is tried again, after a timeout, a
`RetryableError` or a lost worker, with backoff. What the tool returned then meets the output
checks and the application's result rules.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from time import perf_counter_ns
from typing import Any

from tinytools._context import (
    Ask,
    CancellationToken,
    Discovery,
    IdempotencyKey,
    Invocation,
    PlanRun,
    Progress,
    RunContext,
    Stores,
)
from tinytools._errors import ArgumentsError, NeedsInput, RetryableError, WaitsElsewhere, kept
from tinytools._events import ToolEvent, ToolOutputChunk, ToolStarted
from tinytools._results import ToolCall, ToolResult
from tinytools._run.admission import Admission
from tinytools._run.boundary import Boundary
from tinytools._run.call_state import CallState
from tinytools._run.failures import (
    cancelled,
    denied,
    executor_failure,
    hook_failure,
    logger,
    propagates,
    timed_out,
    tool_failure,
    tool_raised,
    waiting,
)
from tinytools._run.jobs import CANCELLED, RAISED, REFUSED, RETURNED, TIMEOUT, UNSTARTED, Channel, Job, Outcome
from tinytools._run.output_checks import finish
from tinytools._run.plans import DefaultFailed, Read
from tinytools._run.policy_enforcement import PolicyEnforcement
from tinytools._run.reading import invalid, read_arguments, started_arguments
from tinytools._run.secrets import Secrets
from tinytools._run.streams import TooLarge, async_stream, sync_stream, then_end
from tinytools._run.tracing import CallTracer
from tinytools.executors._failures import ExecutorError

__all__ = ["BACKOFF_SECONDS", "Execution"]

BACKOFF_SECONDS = 0.05
"""First retry delay; doubled on each further attempt."""


Around = Callable[[ToolCall, Any, int], AbstractContextManager[Any]]
"""An execution hook: ``around_tool(call, tool, attempt)`` returns a context manager around the tool's run."""


def _leave(entered: list[AbstractContextManager[Any]], exc: BaseException | None) -> None:
    """Leave the hooks entered, innermost first; what one raises on its way out is logged, not the call's."""
    for manager in reversed(entered):
        try:
            manager.__exit__(type(exc) if exc is not None else None, exc, exc.__traceback__ if exc else None)
        except Exception:
            logger().exception("an execution hook failed on its way out")


def _nothing() -> None:
    """The end of a stream nobody listens to: nothing to let out."""


class Execution:
    """The execution stage of one dispatcher (see the module)."""

    def __init__(
        self,
        *,
        admission: Admission,
        boundary: Boundary,
        policies: PolicyEnforcement,
        sink: Any,
        token: CancellationToken,
        context: RunContext,
        stores: Stores,
        around: Sequence[Around] = (),
        tracer: CallTracer | None = None,
    ):
        self.admission = admission
        self.tracer = tracer
        """Makes a traced call's span current while its tool runs."""
        self.around = tuple(around)
        """The application's execution hooks (``around_tool``), outermost first."""
        self.boundary = boundary
        self.policies = policies
        self.sink = sink
        self.token = token
        self.context = context
        self.stores = stores
        self.pipeline: Any = None
        """The pipeline these stages belong to (a plan's steps go through it)."""

    def execute(self, state: CallState, read: Read) -> Awaitable[ToolResult]:
        """Bind and run the tool: at most its tries, never after the run stopped, within the gate."""
        if state.scope.gate is None and not state.plan.runtime and state.plan.tool.streams is None:
            return self.attempts(state, read)  # nothing to hold or to close around the attempts
        return self.guarded(state, read)

    async def guarded(self, state: CallState, read: Read) -> ToolResult:
        """The attempts, within the batch's gate, closing the call's progress channel and token after."""
        gate = state.scope.gate if not state.plan.plans else None  # a plan's steps take the gate, one by one
        if gate is not None:
            await gate.enter(state.plan.serial)
        try:
            return await self.attempts(state, read)
        finally:
            if gate is not None:
                await gate.leave(state.plan.serial)
            if state.channel is not None:
                state.channel.close()  # progress sent after the call ended is not delivered
            if state.token is not None:
                state.token.detach()

    async def attempts(self, state: CallState, read: Read) -> ToolResult:
        """Each attempt in turn: none once the run stopped, a retry only when the last attempt asks for one."""
        plan, call, driver = state.plan, state.call, state.scope.driver
        result: ToolResult | None = None
        admission = self.admission
        for attempt in range(1, plan.tries + 1):
            if admission.checked:  # none starts once the run was cancelled or its deadline passed
                stopped = admission.stopped(call, plan.name, state.start, retry=attempt > 1)
                if stopped is not None:
                    return stopped
            if attempt > 1:
                await driver.pause(BACKOFF_SECONDS * 2 ** (attempt - 2), self.token)
                stopped = self.admission.stopped(call, plan.name, state.start, retry=True)
                if stopped is not None:
                    return stopped
                again = read_arguments(
                    state, events=self.sink is not None
                )  # a retry sees the arguments as sent, not as the last attempt left them
                if again.__class__ is not Read:
                    return again  # type: ignore[return-value]
                read = again
                if state.token is not None:  # the last attempt's token was cancelled by its timeout
                    state.token.detach()
                    state.token = None  # the next attempt gets a fresh one
            job = self.job(state, read, attempt)
            if job.__class__ is not Job:
                return job  # type: ignore[return-value]
            if self.sink is not None:
                pending = driver.emit(self.started(state, read, attempt))
                if pending is not None:
                    await pending
            lock = plan.tool.exclusive
            if lock is not None and not await self.hold(lock, driver):
                return cancelled(call, plan.tool, state.start, started=False)
            try:
                state.acted = True
                state.attempts = attempt
                state.failure = state.exception = None  # an earlier attempt's: this one may succeed
                if self.around or state.span is not None:
                    outcome = await self.run_around(state, job, attempt)
                else:
                    outcome = await self.run(state, job)
            finally:
                if lock is not None:
                    lock.release()
            if isinstance(outcome, ToolResult):  # a hook failed before the tool could start
                state.acted = False
                return outcome
            result, retry = self.result_of(state, outcome, last=attempt == plan.tries)
            if state.span is not None:
                self.trace_attempt(state, outcome, result, retry)
            if not retry:
                return result
        assert result is not None
        return result

    def once(self, state: CallState, read: Read) -> ToolResult:
        """The one attempt of a watched plan's call (`Plan.watched`), on a sync driver, as `attempts` makes it.

        A watched plan has one try, no shared lock, no gate, runtime values, stream or executor,
        and the dispatcher no execution hooks: what is left of an attempt is its job, the
        `ToolStarted` event, the run and the result.
        """
        plan, call, driver = state.plan, state.call, state.scope.driver
        if self.admission.checked:  # none starts once the run was cancelled or its deadline passed
            stopped = self.admission.stopped(call, plan.name, state.start, retry=False)
            if stopped is not None:
                return stopped
        job = self.job(state, read, 1)
        if job.__class__ is not Job:
            return job  # type: ignore[return-value]
        if self.sink is not None:  # a sync driver delivers it now, an async sink on this thread's loop
            driver.emit(self.started(state, read, 1))
        state.acted = True
        state.attempts = 1
        outcome = driver.start(job)  # a sync driver's: the outcome itself
        return self.result_of(state, outcome, last=True)[0]  # type: ignore[arg-type]

    def started(self, state: CallState, read: Read, attempt: int) -> ToolStarted:
        """The event of an attempt that starts: the arguments as validated, the time since the call came."""
        call = state.call
        return ToolStarted(
            call.id, state.plan.name, perf_counter_ns() - state.start, started_arguments(read, call), attempt
        )

    async def hold(self, lock: Any, driver: Any) -> bool:
        """Take a lock the tool shares with others (one object's methods); False when the run stopped first."""
        delay = 0.0005
        while not lock.acquire(blocking=False):
            if self.token.cancelled:
                return False
            await driver.pause(delay, self.token)
            delay = min(delay * 2, 0.01)
        return True

    async def run(self, state: CallState, job: Job) -> Outcome:
        """The one place a tool runs: its job started by the driver, and its outcome awaited."""
        outcome = state.scope.driver.start(job)
        if isinstance(outcome, Outcome):
            return outcome
        try:
            return await outcome
        except BaseException:  # the call's task was cancelled: a sync tool hears it through its token
            if state.token is not None:
                state.token.cancel("cancelled")
            raise

    async def run_around(self, state: CallState, job: Job, attempt: int) -> Outcome | ToolResult:
        """The tool's run inside the application's execution hooks, entered in order and left in reverse.

        A hook that fails on the way in ends the call ``middleware_error`` before the tool starts;
        one that fails on the way out is logged, and the tool's outcome stands.
        """
        entered: list[AbstractContextManager[Any]] = []
        if state.span is not None and self.tracer is not None:  # the call's span, current around the tool
            current = self.tracer.current(state.span)
            current.__enter__()
            entered.append(current)
        try:
            for around in self.around:
                manager = around(state.call, state.plan.tool, attempt)
                manager.__enter__()
                entered.append(manager)
        except BaseException as exc:
            _leave(entered, exc)
            if propagates(exc):
                raise
            return hook_failure(state.call, state.plan.name, "around_tool", exc, state.start)
        try:
            outcome = await self.run(state, job)
        except BaseException as exc:
            _leave(entered, exc)
            raise
        _leave(entered, None)
        return outcome

    def trace_attempt(self, state: CallState, outcome: Outcome, result: ToolResult, retry: bool) -> None:
        """A traced attempt's events: a timeout, a cancellation, the retry that follows."""
        tracer = self.tracer
        if tracer is None:
            return
        if outcome.kind == TIMEOUT:
            tracer.event(state.span, "tinytools.timeout", {"tinytools.attempt": state.attempts})
        elif outcome.kind == CANCELLED or (result.error is not None and result.error.code == "cancelled"):
            tracer.event(state.span, "tinytools.cancelled", {"tinytools.attempt": state.attempts})
        if retry:
            code = result.error.code if result.error is not None else "retry"
            next_try = {"tinytools.attempt": state.attempts + 1, "error.type": code}
            tracer.event(state.span, "tinytools.retry", next_try, state.secrets)

    def job(self, state: CallState, read: Read, attempt: int) -> Job | ToolResult:
        """The tool's call for one attempt: its arguments bound by slot, with runtime values.

        Binding runs the application's code (converters, default factories): a run it cancelled,
        or whose deadline passed meanwhile, starts no tool (admission is asked again).
        """
        plan = state.plan
        runtime = self.runtime(state, attempt) if plan.runtime else None
        try:
            args, kwargs, secrets = plan.bind(read, state.scope.inject, runtime)
        except ArgumentsError as exc:
            return invalid(state, kept(exc), events=self.sink is not None)
        except DefaultFailed as exc:
            return tool_failure(state.call, plan.name, exc.error, state.start, plan.exposed)
        if self.admission.checked:
            refusal = self.admission.stopped(state.call, plan.name, state.start, retry=attempt > 1)
            if refusal is not None:
                return refusal
        if secrets and state.secrets is None:
            state.secrets = Secrets.of(secrets)
        tool = plan.tool
        if plan.route is not None:
            route = plan.route
            streamed = (self.stream(state, tool.fn),) if tool.streams is not None else ()
            return Job(
                route.run, (state.call, args, kwargs, *streamed), {}, name=plan.name, is_async=True,
                timeout=tool.timeout, token=self.token, channel=state.channel,
            )  # fmt: skip
        fn = tool.call or tool.fn
        # a plan is never stopped halfway by the run's cancellation: its steps are, each ending as its own call
        token = CancellationToken() if plan.plans else self.token
        if tool.streams is not None:
            fn = self.stream(state, fn)
        elif state.channel is not None and "progress" in tool.wants:  # its emitted pieces end with it
            fn = then_end(fn, state.channel, is_async=tool.is_async)
        return Job(
            fn, args, kwargs, name=plan.name, is_async=tool.is_async,
            timeout=tool.timeout, token=token, channel=state.channel,
        )  # fmt: skip

    def stream(self, state: CallState, fn: Any) -> Any:
        """A generator tool's function, run to its end: each piece an event, its end the output."""
        if state.token is None:
            state.token = CancellationToken(parent=self.token)  # a timeout stops the stream at its next piece
        channel = self.channel(state)
        wrap = async_stream if state.plan.tool.streams == "async" else sync_stream
        boundary = self.boundary
        keep = None if boundary.store is not None else boundary.limit  # text past the budget: kept only to store
        if channel is None:
            return wrap(fn, None, _nothing, state.token, keep)
        call_id, name, start = state.call.id, state.plan.name, state.start

        def send(kind: str, piece: Any) -> None:
            channel.send(ToolOutputChunk(call_id, name, perf_counter_ns() - start, kind, piece))

        return wrap(fn, send, lambda: channel.send(None), state.token, keep)

    def channel(self, state: CallState) -> Channel | None:
        """The call's way to the sink, made on first use; None when nobody listens."""
        if state.channel is None and self.sink is not None:
            state.channel = Channel(lambda event: self.seal(state, event))
        return state.channel

    def seal(self, state: CallState, event: ToolEvent | None) -> list[ToolEvent]:
        """What a running call sends, model-facing: through its stream boundary, in order (None: it ended)."""
        if state.pieces is None:
            call = (state.call.id, state.plan.name, state.start)
            state.pieces = self.boundary.stream(state.secrets, state.plan.encoder, call)
        return state.pieces.end() if event is None else state.pieces.take(event)

    def runtime(self, state: CallState, attempt: int) -> dict[str, Any]:
        """The values only the pipeline makes, for a tool that takes them by type."""
        plan, call = state.plan, state.call
        wants = plan.tool.wants
        values: dict[str, Any] = {"call": call}
        if "token" in wants:
            if state.token is None:
                state.token = CancellationToken(parent=self.token)
            values["token"] = state.token
        if "invocation" in wants:
            values["invocation"] = self.invocation(state, attempt)
        if "progress" in wants:
            channel = self.channel(state)
            send = channel.send if channel is not None else None
            values["progress"] = Progress(call.id, plan.name, state.start, send)
        if "stores" in wants:
            values["stores"] = self.stores
        if "key" in wants:
            values["key"] = IdempotencyKey(state.act or state.key or "")
        if "ask" in wants:
            values["ask"] = Ask(state.answers or (), state.asked_state)
        if "discovery" in wants:
            values["discovery"] = Discovery(lambda query, k: self.discover(state, query, k))
        if "plan" in wants:
            values["plan"] = PlanRun(lambda steps, returns: self.run_plan(state, steps, returns))
        return values

    def run_plan(self, state: CallState, steps: Any, returns: Any) -> Awaitable[Any]:
        """A plan tool's plan, run (`tinytools._run.call_plans`)."""
        from tinytools._run import call_plans  # plans load on first use

        return call_plans.run(self.pipeline, state, {"steps": steps, "return": returns})

    def discover(self, state: CallState, query: str, k: int) -> list[Any]:
        """The deferred tools of this dispatcher's toolbox a search finds, revealed for the run.

        Tools a policy denies, or that this turn's allowlist leaves out, are not found.
        """
        if k < 1:
            return []
        allowed, denial = state.scope.allowed, self.policies.denial
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

    def invocation(self, state: CallState, attempt: int) -> Invocation:
        """The trusted identity of one execution of a tool."""
        context = self.context
        return Invocation(
            state.call,
            state.plan.name,
            run_id=context.run_id,
            step_id=state.scope.step_id,
            session_id=context.session_id,
            agent_id=context.agent_id,
            workspace_id=context.workspace_id,
            actor=context.actor,
            attempt=attempt,
            max_inline_output_bytes=self.boundary.limit,
            deadline=self.admission.deadline_at,
        )

    def result_of(self, state: CallState, outcome: Outcome, *, last: bool) -> tuple[ToolResult, bool]:
        """The result of one attempt, and whether to try again."""
        plan, call, start = state.plan, state.call, state.start
        kind, value = outcome.kind, outcome.value
        if kind == RETURNED:
            result = finish(call, plan.tool, value, start, self.boundary.store, plan.encoder)
            if result.status != "succeeded":
                return self.failure(state, result, None), False
            refused = self.policies.result_denial(plan.tool, result) if self.policies.middleware else None
            if refused is not None:
                return denied(call, plan.name, refused[0], refused[1], start), False
            return result, False
        if kind == RAISED:
            return self.raised(state, value, last=last)
        if kind == CANCELLED:  # while the tool ran, or before a thread took it (`UNSTARTED`): an earlier attempt ran
            started = outcome is not UNSTARTED or state.attempts > 1
            return cancelled(call, plan.tool, start, started=started), False
        if kind == REFUSED:
            error = ExecutorError("executor_unavailable", str(value), may_have_acted=False)
            return self.failure(state, executor_failure(error, call, plan.tool, start), value), False
        if state.token is not None:
            state.token.cancel("timeout")  # a cooperative tool still running can stop
        if not last:
            return timed_out(call, plan.tool, start), True
        return self.failure(state, timed_out(call, plan.tool, start), None), False

    def raised(self, state: CallState, exc: BaseException, *, last: bool) -> tuple[ToolResult, bool]:
        """The result of an attempt that raised, and whether to try again."""
        plan, call, start = state.plan, state.call, state.start
        if isinstance(exc, NeedsInput):  # the tool waits for the user: the journal stage parks the call
            state.asked_state = exc.state
            return waiting(call, plan.name, "input", exc.message, exc.schema, exc.ttl, exc.name), False
        if isinstance(exc, TooLarge):  # a text stream past the budget, with no store to take it
            return self.failure(state, self.boundary.too_large(call, plan.name, exc.size, start), None), False
        if isinstance(exc, WaitsElsewhere):  # the call goes on outside: the application resumes it with the output
            return waiting(call, plan.name, "external", exc.message, plan.tool.output_schema or {}, exc.ttl), False
        result = tool_raised(call, plan.tool, exc, start, self.token.cancelled, plan.exposed)  # raises what propagates
        if propagates(exc):  # the run's cancellation: nothing failed
            return result, False
        if isinstance(exc, RetryableError) and not last:
            return result, True
        return self.failure(state, result, exc), isinstance(exc, ExecutorError) and not last

    def failure(self, state: CallState, result: ToolResult, exc: BaseException | None) -> ToolResult:
        """Note the tool's failure for the `ToolFailed` event, and hand the result on."""
        state.failure, state.exception = result, exc
        return result
