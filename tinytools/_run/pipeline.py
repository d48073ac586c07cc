"""The pipeline: the ordered stages every call goes through, whatever its entry point.

This is the one account of the stages, in order (`STAGES` holds their names and modules; the
docs page "The pipeline" (docs/concepts/pipeline.md) follows it, and a test keeps the two equal):

1. **Admission** (`admission`): the run's cancellation, deadline and call budget, the size
   limit, the lookup by name (an unknown name meets its policy; a ``Rewrite`` is admitted again),
   the turn's allowlist and the run's revealed tools. → a refusal
2. **Read** (`reading`): decode and validate once, against the schema this dispatcher enforces.
   → invalid arguments (repairable)
3. **Before-middleware** (`pipeline`): a call a middleware replaced is looked up and read again.
4. **Journal** (`journal_stage`): the call is claimed by its run and call id; a call already
   journaled is answered from its entry, one another worker runs is waited for.
5. **Policy** (`policy_enforcement`): static rules, then the approver, on the final arguments (an
   edit is read again; a deferred decision parks the call pending). A call plan is checked whole
   here, then approved once if a step needs it (`call_plans`); its steps are calls of their own.
6. **Execution** (`execution`): an external or background tool's call parks pending; a read-only
   tool's cached result or a declared act already made answers instead (`result_cache`, `acts`);
   else bind by slot and run, within the timeout, the run's cancellation and the tries of an
   idempotent tool, around the application's execution hooks. A tool's `NeedsInput` parks too.
7. **Output checks** (`output_checks`): the output becomes JSON data, checked against its schema.
8. **After-middleware** (`pipeline`): each may replace the result.
9. **Boundary** (`boundary`): every model-facing string scrubbed, then held to the budget.
10. **Record** (`journal_stage`): the journal records the call's end (a pending call parks).
11. **Events** (`pipeline`): the call's last events, then the one `ToolResult`.

It is written once, as coroutines that never wait on anything but their driver
(`tinytools._run.drivers`), so the same code serves sync and async entry points. Each stage is a
method here or a module of its own; the per-tool decisions come from the call's `Plan`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from inspect import isawaitable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._context import CancellationToken, RunContext, Stores
from tinytools._errors import InjectionError, ResultError, shorten
from tinytools._events import ToolCompleted, ToolDenied, ToolEvent, ToolFailed, ToolPending, UnknownToolCall
from tinytools._results import ToolCall, ToolResult
from tinytools._run.admission import Admission, Admitted, not_revealed
from tinytools._run.boundary import Boundary
from tinytools._run.call_state import CallState, Scope
from tinytools._run.drivers import SyncDriver, drive
from tinytools._run.edits import read_edit
from tinytools._run.execution import Execution
from tinytools._run.failures import (
    APPROVAL_SCHEMA,
    cancelled,
    denied,
    failed,
    hook_failure,
    missing_value,
    propagates,
    waiting,
)
from tinytools._run.plans import Plan, Read
from tinytools._run.policy_enforcement import PolicyEnforcement, ask, refused_edit
from tinytools._run.reading import call_arguments, read_arguments, started_arguments
from tinytools._run.secrets import Secrets
from tinytools._run.tracing import CallTracer, traceparent_of
from tinytools._tool import is_search

if TYPE_CHECKING:
    from tinytools._run.journal_stage import JournalStage
    from tinytools.policy import Rule

__all__ = ["STAGES", "Pipeline"]

STAGES: tuple[tuple[str, str], ...] = (
    ("Admission", "admission"),
    ("Read", "reading"),
    ("Before-middleware", "pipeline"),
    ("Journal", "journal_stage"),
    ("Policy", "policy_enforcement"),
    ("Execution", "execution"),
    ("Output checks", "output_checks"),
    ("After-middleware", "pipeline"),
    ("Boundary", "boundary"),
    ("Record", "journal_stage"),
    ("Events", "pipeline"),
)
"""The stages every call goes through, in order, and the module of `tinytools._run` each lives in."""


class Pipeline:
    """The stages of one dispatcher (see the module)."""

    def __init__(
        self,
        *,
        admission: Admission,
        boundary: Boundary,
        policies: PolicyEnforcement,
        middleware: Sequence[Any],
        sink: Any,
        token: CancellationToken,
        context: RunContext,
        stores: Stores,
        plan_for: Callable[[Any], Plan],
        journal_stage: Callable[[], JournalStage],
        tracer: CallTracer | None = None,
        max_concurrency: int = 8,
    ):
        self.admission = admission
        self.max_concurrency = max_concurrency
        """How many steps of a call plan run at once (the dispatcher's bound for a batch)."""
        self.fits: dict[Any, str | None] = {}
        """Whether a tool's output at a pointer fits a parameter, as call plans found (`tinytools._run.call_plans`)."""
        self.tracer = tracer
        """Opens and closes each call's span, when the dispatcher traces (`tinytools._run.tracing`)."""
        self._journal_stage = journal_stage
        self.boundary = boundary
        self.policies = policies
        hooks = [m for m in middleware if m not in policies.middleware]
        self.before = [m.before_tool for m in hooks if hasattr(m, "before_tool")]
        self.after = [m.after_tool for m in hooks if hasattr(m, "after_tool")]
        around = [m.around_tool for m in hooks if hasattr(m, "around_tool")]
        self.sink = sink
        self.token = token
        self.plan_for = plan_for
        self.execution = Execution(
            admission=admission,
            boundary=boundary,
            policies=policies,
            sink=sink,
            token=token,
            context=context,
            stores=stores,
            around=around,
            tracer=tracer,
        )
        self.execution.pipeline = self  # a plan's steps are calls of their own, through these stages

    def run(self, call: ToolCall, scope: Scope) -> ToolResult | Awaitable[ToolResult]:
        """One call, from admission to its final event: the coroutine to await or drive, or the result itself.

        The result itself only for a watched plan's call from a sync entry point (see `watched`).
        """
        start = perf_counter_ns()
        admitted = self.admission.admit(call, scope.allowed, start)
        if admitted.__class__ is not Admitted:
            return self.refused(call, admitted, scope, start)  # type: ignore[arg-type]
        if (
            admitted.plan.watched
            and not scope.driver.asynchronous
            and not admitted.rewritten
            and (self.tracer is None or not self.tracer.live())
        ):
            return self.watched(admitted, scope, start)
        return self.run_admitted(admitted, scope, start)

    def watched(self, admitted: Admitted, scope: Scope, start: int) -> ToolResult | Awaitable[ToolResult]:
        """A watched plan's call (`Plan.watched`) from sync code: its stages in one frame, on this thread.

        The stages are the pipeline's own, in its order; only the coroutines between them are left
        out. Where a stage answers otherwise than the common way (the arguments are not read, a
        hook replaces or answers the call, or answers with an awaitable, the tool parks its call),
        the call goes on in the coroutines from that stage, as `run_admitted` awaits them: what is
        returned then is the awaitable to drive.
        """
        state = CallState(admitted.call, admitted.plan, scope, start)
        read = read_arguments(state, events=self.sink is not None)
        if read.__class__ is not Read:
            return self.cut_short(state, self.end(state, read))  # type: ignore[arg-type]
        if self.before:
            moved = self.before_middleware(state, read)
            if moved is not read:  # a hook answered, replaced the call or is async: the stages go on from there
                return self.cut_short(state, self.after_before(state, moved))
        result = self.execution.once(state, read)
        if self.after:
            kept = self.after_middleware(state, result)
            if kept.__class__ is not ToolResult:
                return self.cut_short(state, self._ended_later(state, kept))  # type: ignore[arg-type]
            result = kept
        if result.status == "pending":  # the tool parked its call: the journal stage records it
            return self.cut_short(state, self.end(state, result))
        result = self.sealed(state, result)
        if self.sink is None:
            return result if result.call_id == state.call.id else msgspec.structs.replace(result, call_id=state.call.id)
        return self.complete(state.call, result, state, scope)

    async def _ended_later(self, state: CallState, pending: Awaitable[ToolResult]) -> ToolResult:
        return await self.end(state, await pending)

    async def refused(self, call: ToolCall, result: ToolResult, scope: Scope, start: int) -> ToolResult:
        """Finish a call admission refused."""
        if self.sink is not None:
            pending = scope.driver.emit(_refusal_event(call, result, start))
            if pending is not None:
                await pending
        sealed = self.boundary.seal(result, None, start)
        if self.tracer is not None and self.tracer.live():  # a call refused before it ran still has its span
            self.trace_refused(call, sealed, scope, start)
        done = self.complete(call, sealed, None, scope)
        return done if done.__class__ is ToolResult else await done  # type: ignore[misc]

    def trace_refused(self, call: ToolCall, result: ToolResult, scope: Scope, start: int) -> None:
        """The span of a call refused before it ran; its arguments scrubbed of its tool's secrets, if known."""
        assert self.tracer is not None
        tool = self.admission.toolbox.get(call.name) if call.name.__class__ is str else None
        if tool is None:  # no tool, so no secrets to scrub its arguments of: they are not recorded
            self.tracer.alone(call, result, start)
            return
        secrets = None
        if self.tracer.config.content:
            try:
                secrets = Secrets.of(self.plan_for(tool).secrets(scope.inject))
            except Exception:  # what cannot be scrubbed is not recorded
                self.tracer.alone(call, result, start, description=tool.description)
                return
        self.tracer.alone(call, result, start, description=tool.description, arguments=call.arguments, secrets=secrets)

    @property
    def journal_stage(self) -> JournalStage:
        """The dispatcher's journal stage, made on first use: a call with no journal, cache or act never loads it."""
        return self._journal_stage()

    async def run_admitted(self, admitted: Admitted, scope: Scope, start: int) -> ToolResult:
        """The stages after admission, in a span of the call's own when the dispatcher traces."""
        state = CallState(admitted.call, admitted.plan, scope, start)
        if self.tracer is not None and self.tracer.live():
            state.span = self.tracer.open(state.call, state.plan.name, state.plan.tool.description, start)
        return await self.cut_short(state, self.stages(state, admitted))

    async def cut_short(self, state: CallState, stages: Awaitable[ToolResult]) -> ToolResult:
        """The call's stages, awaited; a call cut short on the way is traced and released.

        Cut short: its caller cancelled, or the application's mistake. Claimed in the journal, it is
        released, or ended unknown if it acted.
        """
        try:
            return await stages
        except BaseException as exc:
            if state.span is not None:
                self.trace_escaped(state, exc)
            if state.step is not None:
                await self.journal_stage.interrupted(state)
            raise

    async def stages(self, state: CallState, admitted: Admitted) -> ToolResult:
        """Read, before-middleware, the journal, policy, execution, after-middleware, the boundary."""
        if admitted.rewritten and self.sink is not None:
            await self.emit_rewrite(admitted, state)
        read = read_arguments(state, events=self.sink is not None)
        if read.__class__ is Read and self.before:
            return await self.after_before(state, self.before_middleware(state, read))
        return await self.after_before(state, read)

    async def after_before(self, state: CallState, read: Read | ToolResult | Awaitable[Any]) -> ToolResult:
        """From what the before-middleware left (awaited if it is async): the journal, then `decide`."""
        if read.__class__ is not Read and read.__class__ is not ToolResult:
            read = await read  # type: ignore[misc]
        plan = state.plan
        if read.__class__ is Read and plan.journaled:
            state.arguments = started_arguments(read, state.call)
            answered = await self.journal_stage.claim(state, read)
            if answered is not None:
                state.answered_by = "journal" if state.answered else None
                if state.answered and answered.status == "succeeded" and is_search(plan.tool):  # its reveal too
                    self.admission.revealed.add(
                        entry["name"] for entry in answered.output if isinstance(entry, dict) and "name" in entry
                    )
                return await self.end(state, answered)
        return await self.decide(state, read)  # type: ignore[arg-type]

    async def decide(self, state: CallState, read: Read | ToolResult) -> ToolResult:
        """Policy and approval, then execution: or the call's end, for a call already answered."""
        plan = state.plan
        if read.__class__ is Read and plan.plans:
            read = await self.check_plan(state, read)
        elif read.__class__ is Read and (plan.denial is not None or plan.approval is not None):
            read = await self.authorise(state, read, plan.approval)
        if read.__class__ is Read:
            return await self.go(state, read)
        return await self.end(state, read)  # type: ignore[arg-type]

    async def go(self, state: CallState, read: Read) -> ToolResult:
        """Execute the call, then after-middleware and its end (where a resumed call comes in).

        An external tool's call, and a background tool's, park pending instead: the application
        runs the first, a thread of its own the second.
        """
        options = state.plan.tool.options
        if options.outlives_turn and not state.resumed:
            return await self.park_outliving(state, read)
        if options.cache_ttl is not None:
            reused = await self.journal_stage.cache.reused(state)
            if reused is not None:
                state.answered_by = "cache"
                return await self.end(state, reused)
        if options.idempotency_key is not None:
            made = await self.journal_stage.acts.claim(state, read)  # the same act, made by another call already
            if made is not None:
                state.answered_by = "act" if state.answered else None
                return await self.end(state, made)
        result = await self.execution.execute(state, read)
        if self.after:
            result = self.after_middleware(state, result)  # type: ignore[assignment]
            if result.__class__ is not ToolResult:
                result = await result  # type: ignore[misc]
        return await self.end(state, result)

    async def park_outliving(self, state: CallState, read: Read) -> ToolResult:
        """An external tool's call, or a background tool's, parked pending: run elsewhere, or on a thread."""
        plan = state.plan
        if plan.tool.options.external:
            message = f"Run tool {plan.name!r} with the call's arguments, then resume it with the output."
            schema = plan.tool.output_schema or {}
            return await self.end(state, waiting(state.call, plan.name, "external", message, schema, None))
        try:
            plan.check_injected(state.scope.inject)  # a task that could not start must not wait
        except InjectionError as exc:
            return await self.end(state, missing_value(state.call, exc, state.start))
        message = f"Tool {plan.name!r} is running in the background."
        link = traceparent_of(state.span)  # the parked call's span, which its end closes
        parked = await self.end(state, waiting(state.call, plan.name, "task", message, None, None))
        if parked.status == "pending":
            self.background(state, read, link)
        return parked

    def background(self, state: CallState, read: Read, link: str | None = None) -> None:
        """Run a parked task's call on a thread of its own, to its recorded end."""
        scope = state.scope
        alone = Scope(SyncDriver(self.sink), scope.inject, scope.allowed, scope.step_id, 0)
        task = CallState(state.call, state.plan, alone, state.start)
        task.key, task.step, task.arguments, task.resumed = state.key, state.step, state.arguments, True
        if link is not None and self.tracer is not None:  # its own span, linked to the call's that parked it
            task.span = self.tracer.open(
                task.call, task.plan.name, task.plan.tool.description, perf_counter_ns(), (link,)
            )
        self.journal_stage.tasks.start(task, lambda: drive(self.go(task, read)))

    async def end(self, state: CallState, result: ToolResult) -> ToolResult:
        """The call's end: sealed at the boundary, recorded in the journal, told to the sink."""
        plan, scope = state.plan, state.scope
        tool = plan.tool
        if not state.answered:  # a journaled answer was sealed when it was made
            result = self.sealed(state, result)
            if state.step is not None or result.status == "pending":
                result = await self.journal_stage.record(state, result)
            if tool.options.cache_ttl is not None:
                await self.journal_stage.cache.keep(state, result)
        if state.span is not None:
            self.trace_end(state, result)
        if self.sink is None or state.superseded:  # nothing to tell (again): the result is the call's end
            return result if result.call_id == state.call.id else msgspec.structs.replace(result, call_id=state.call.id)
        done = self.complete(state.call, result, state, scope)
        return done if done.__class__ is ToolResult else await done  # type: ignore[misc]

    def sealed(self, state: CallState, result: ToolResult) -> ToolResult:
        """The result at the boundary: scrubbed of the call's secrets, redacted, within the budget."""
        self.call_secrets(state)
        note = state.pieces.note() if state.pieces is not None else None
        if note is not None and result.status == "succeeded" and state.plan.tool.output_schema is not None:
            note = None  # its output stays its structured output: the stream's last progress says it
        return self.boundary.seal(result, state.secrets, state.start, note)

    def call_secrets(self, state: CallState) -> Secrets | None:
        """The call's secrets: bound with its arguments, or read from its injected values before binding."""
        tool = state.plan.tool
        if state.secrets is None and (tool.secret_keys or tool.fixed_secrets):
            state.secrets = Secrets.of(state.plan.secrets(state.scope.inject))
        return state.secrets

    def trace_end(self, state: CallState, result: ToolResult) -> None:
        """Close a traced call's span with its final result (a span is closed once)."""
        span, state.span = state.span, None
        assert self.tracer is not None
        arguments = state.arguments if state.arguments is not None else state.call.arguments
        try:
            secrets = self.call_secrets(state)
        except Exception:  # no secrets to scrub with: the arguments are not recorded
            secrets, arguments = None, None
        self.tracer.close(span, result, arguments, secrets, state)

    def trace_escaped(self, state: CallState, exc: BaseException) -> None:
        """Close a traced call's span that an exception cut short (its caller's cancellation, a configuration error)."""
        code = "cancelled" if propagates(exc) else type(exc).__name__
        message = f"The call was cut short: {type(exc).__name__}."
        self.trace_end(state, failed(state.call, state.plan.name, code, message, state.start))

    async def emit_rewrite(self, admitted: Admitted, state: CallState) -> None:
        """The `UnknownToolCall` event of a call the unknown-tool policy sent to its fallback."""
        sent, name = admitted.sent, state.plan.name
        elapsed = perf_counter_ns() - state.start
        pending = state.scope.driver.emit(
            UnknownToolCall(sent.id, name, elapsed, sent.name, sent.arguments, f"rewrite:{name}")
        )
        if pending is not None:
            await pending

    def before_middleware(self, state: CallState, read: Read, first: int = 0) -> Read | ToolResult | Awaitable[Any]:
        """Each before-middleware in order: go on, replace the call (read again), or answer it.

        Sync hooks run here and now; the first that answers with an awaitable leaves the rest to
        `_before_later`, which the pipeline awaits.
        """
        for index in range(first, len(self.before)):
            try:
                outcome = self.before[index](state.call, state.plan.tool)
            except BaseException as exc:
                if propagates(exc):
                    raise
                return hook_failure(state.call, state.plan.name, "middleware", exc, state.start)
            if outcome is None:  # the common answer: go on
                continue
            if outcome.__class__ not in _ANSWERS and isawaitable(outcome):
                return self._before_later(state, read, index, outcome)
            moved = self._before_answer(state, read, outcome)
            if moved.__class__ is not Read:
                return moved
            read = moved
        return read

    async def _before_later(
        self, state: CallState, read: Read, index: int, pending: Awaitable[Any]
    ) -> Read | ToolResult:
        try:
            outcome = await state.scope.driver.wait_for(pending)
        except BaseException as exc:
            if propagates(exc):
                raise
            return hook_failure(state.call, state.plan.name, "middleware", exc, state.start)
        moved = self._before_answer(state, read, outcome)
        if moved.__class__ is not Read:
            return moved
        rest = self.before_middleware(state, moved, index + 1)
        return rest if rest.__class__ is Read or rest.__class__ is ToolResult else await rest  # type: ignore[misc]

    def _before_answer(self, state: CallState, read: Read, outcome: Any) -> Read | ToolResult:
        """What one before-middleware's answer means: go on, answer the call, or read a new one."""
        if isinstance(outcome, ToolResult):
            error = outcome.error
            if error is not None and error.code == "policy_denied":
                self.note_denied(state, (error.details or {}).get("rule", "policy"), error.message)
            return _well_formed(state, outcome)
        if isinstance(outcome, ToolCall):
            return self.relocate(state, outcome)
        return read

    def relocate(self, state: CallState, call: ToolCall) -> Read | ToolResult:
        """A call a middleware replaced: looked up, checked against the allowlist and read again."""
        tool = self.admission.toolbox.get(call.name)
        if tool is None:
            message = f"Middleware sent the call to an unknown tool {shorten(call.name)!r}."
            return failed(call, call.name, "unknown_tool", message, state.start)
        allowed = state.scope.allowed
        if allowed is not None and tool.name not in allowed:
            message = f"Tool {shorten(call.name)!r} is not available in this turn."
            return failed(call, tool.name, "tool_not_allowed", message, state.start)
        if tool.defer and tool.name not in self.admission.revealed:
            return not_revealed(call, tool, self.admission.toolbox, state.start)
        state.call = ToolCall(state.call.id, tool.name, call.arguments, call.invalid)
        state.plan = self.plan_for(tool)
        if state.span is not None and self.tracer is not None:
            self.tracer.rename(state.span, tool.name, tool.description)
        read = read_edit(state, strict_form=True)
        if isinstance(read, Read):
            return read
        return hook_failure(state.call, tool.name, "middleware", read, state.start)  # the application's mistake

    async def check_plan(self, state: CallState, read: Read) -> Read | ToolResult:
        """A call plan's policy stage: the whole plan checked, then approved once if a step needs it.

        See `tinytools._run.call_plans`; an approver's edit of the plan is checked again.
        """
        from tinytools._run import call_plans  # plans load on first use

        if state.scope.planned is not None:  # a step a middleware sent to the plan tool
            refusal = call_plans.Refusal(None, "", "plan", "a plan cannot be a step of another plan")
            return call_plans.refusal_result(self, state, refusal)
        checked = call_plans.check(self, state, read.arguments or {})
        if isinstance(checked, call_plans.Refusal):
            return call_plans.refusal_result(self, state, checked)
        state.checked_plan = checked
        call_plans.check_injected(self, checked, state.scope.inject)  # the application's mistake raises, as for a call
        approval = state.plan.approval if checked.needs_approval else None
        authorised = await self.authorise(state, read, approval, checked)
        if authorised.__class__ is not Read:
            return authorised
        if authorised is not read:  # the approver edited the plan
            checked = call_plans.check(self, state, authorised.arguments or {})
            if isinstance(checked, call_plans.Refusal):
                return call_plans.refusal_result(self, state, checked)
            state.checked_plan = checked
        if not call_plans.reserve(self, checked):  # calls made while the approver thought used the room
            return call_plans.refusal_result(self, state, call_plans.over_budget(self, checked))
        return authorised

    async def authorise(
        self, state: CallState, read: Read, approval: Rule | None, checked: Any = None
    ) -> Read | ToolResult:
        """The policy stage: static rules, then the approver (``approval``), on the final validated arguments.

        A step of a plan already approved is not asked again (the step itself: not a call a
        middleware moved to another tool). ``checked``: a plan's, whose steps that need approval
        the approver is told.
        """
        plan = state.plan
        if plan.denial is not None:
            rule, reason = plan.denial
            self.note_denied(state, rule, reason)
            return denied(state.call, plan.name, rule, reason, state.start)
        if approval is None or state.scope.is_step(state.call, plan.name):
            return read
        arguments = read.arguments if read.arguments is not None else call_arguments(state.call)
        steps = checked.approvals(state.call.id) if checked is not None else ()
        decision = await ask(approval, plan.tool, state.call, arguments, state.scope.driver, self.token, steps)
        if state.span is not None and self.tracer is not None:
            attributes = {
                "tinytools.approval.decision": decision.kind,
                "tinytools.approval.reason": decision.reason or "",
            }
            self.tracer.event(state.span, "tinytools.approval", attributes, self.call_secrets(state))
        if decision.kind == "approve":
            return read
        if decision.kind == "defer":
            return waiting(state.call, plan.name, "approval", decision.reason, APPROVAL_SCHEMA, decision.ttl)
        if decision.kind == "cancelled":
            return cancelled(state.call, plan.tool, state.start, started=False)
        if decision.kind == "edit":
            state.call = ToolCall(state.call.id, plan.name, decision.arguments or {})
            edited = read_edit(state, strict_form=False)
            if isinstance(edited, Read):
                return edited
            decision = refused_edit(plan.name, edited)
        self.note_denied(state, approval.name, decision.reason)
        return denied(state.call, plan.name, approval.name, decision.reason, state.start)

    def after_middleware(
        self, state: CallState, result: ToolResult, first: int = 0
    ) -> ToolResult | Awaitable[ToolResult]:
        """Each after-middleware in order: keep the result or replace it (an async one left to await)."""
        for index in range(first, len(self.after)):
            try:
                replacement = self.after[index](state.call, state.plan.tool, result)
            except BaseException as exc:
                if propagates(exc):
                    raise
                result = hook_failure(state.call, state.plan.name, "middleware", exc, state.start)
                continue
            if replacement is not None and replacement.__class__ is not ToolResult and isawaitable(replacement):
                return self._after_later(state, result, index, replacement)
            if isinstance(replacement, ToolResult):
                result = _well_formed(state, replacement)
        return result

    async def _after_later(
        self, state: CallState, result: ToolResult, index: int, pending: Awaitable[Any]
    ) -> ToolResult:
        try:
            replacement = await state.scope.driver.wait_for(pending)
        except BaseException as exc:
            if propagates(exc):
                raise
            replacement = hook_failure(state.call, state.plan.name, "middleware", exc, state.start)
        if isinstance(replacement, ToolResult):
            result = _well_formed(state, replacement)
        rest = self.after_middleware(state, result, index + 1)
        return rest if rest.__class__ is ToolResult else await rest  # type: ignore[misc]

    def note_denied(self, state: CallState, rule: str, reason: str) -> None:
        """Queue the `ToolDenied` event of a call a rule refused (delivered with its last events)."""
        if self.sink is not None:
            elapsed = perf_counter_ns() - state.start
            state.queued.append(ToolDenied(state.call.id, state.plan.name, elapsed, rule, reason))

    def complete(
        self, call: ToolCall, result: ToolResult, state: CallState | None, scope: Scope
    ) -> ToolResult | Awaitable[ToolResult]:
        """Deliver the call's last events (`ToolFailed`, `ToolCompleted`) and hand the result back.

        An async sink's deliveries are left to await, in order, before the result.
        """
        if result.call_id != call.id:  # middleware's own result: it still answers this call
            result = msgspec.structs.replace(result, call_id=call.id)
        if self.sink is None:
            return result
        events = [] if state is None else state.queued
        if state is not None and state.failure is not None and state.failure.error is not None:
            error = self.boundary.error(state.failure.error, state.secrets)
            events.append(ToolFailed(call.id, state.plan.name, perf_counter_ns() - state.start, error, state.exception))
        start = state.start if state is not None else perf_counter_ns() - result.elapsed
        if result.status == "pending":
            events.append(ToolPending(call.id, result.name, perf_counter_ns() - start, result))
        else:
            events.append(ToolCompleted(call.id, result.name, perf_counter_ns() - start, result))
        emit, pending = scope.driver.emit, []
        for event in events:  # a loop, not a comprehension: no frame of its own (before Python 3.12)
            sent = emit(event)
            if sent is not None:
                pending.append(sent)
        return _after(pending, result) if pending else result


_ANSWERS = frozenset({type(None), ToolCall, ToolResult})  # what a hook answers when it is not async


async def _after(pending: list[Awaitable[None]], result: ToolResult) -> ToolResult:
    for sent in pending:
        await sent
    return result


def _refusal_event(call: ToolCall, result: ToolResult, start: int) -> ToolEvent:
    elapsed = perf_counter_ns() - start
    code = result.error.code if result.error else ""
    if code == "unknown_tool":
        return UnknownToolCall(call.id, call.name, elapsed, call.name, call.arguments, "tool_error")
    reason = result.error.message if result.error else ""
    return ToolDenied(call.id, result.name, elapsed, code, reason)


def _well_formed(state: CallState, result: ToolResult) -> ToolResult:
    """A result a middleware made, if it is one (its call id is set later); else ``middleware_error``."""
    try:
        msgspec.structs.replace(result, call_id=state.call.id).validate()
    except ResultError as exc:
        return hook_failure(state.call, state.plan.name, "middleware", exc, state.start)
    return result
