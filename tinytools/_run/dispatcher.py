"""`Dispatcher`: one run's execution boundary between a model and the application's tools.

Every entry point (`dispatch`, `adispatch`, `dispatch_many`, `adispatch_many`, and the MCP server
and provider loops built on them) runs the one pipeline of `tinytools._run.pipeline`; a tool's
`Plan` is made the first time the dispatcher sees it. A call of a tool whose plan needs nothing
around it (`Plan.express`) runs in a few steps on the calling thread; every other call goes
through the pipeline's stages. Every call ends in exactly one `ToolResult` carrying its id.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from sys import modules
from time import perf_counter
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from tinytools._context import CancellationToken, RunContext, Stores
from tinytools._encoding import Encoders, OutputEncoder
from tinytools._errors import JournalError, ToolNotFound
from tinytools._public import publish
from tinytools._results import PendingCall, ToolCall, ToolResult
from tinytools._run.admission import Admission, Revealed, Rewrite, UnknownToolPolicy, check_unknown_policy
from tinytools._run.batches import run_batch
from tinytools._run.boundary import DEFAULT_INLINE_OUTPUT_BYTES, Boundary, checked_budget
from tinytools._run.call_state import CallState, Scope
from tinytools._run.drivers import AsyncDriver, SyncDriver, drive
from tinytools._run.express import AsyncExpress, Express, express
from tinytools._run.failures import logger
from tinytools._run.gate import Gate
from tinytools._run.limits import Limits
from tinytools._run.output_checks import DEFAULT_ENCODER
from tinytools._run.pipeline import Pipeline
from tinytools._run.plans import Plan
from tinytools._run.policy_enforcement import PolicyEnforcement
from tinytools._run.threads import run_coroutine
from tinytools._run.tracing import TRACE_API, CallTracer, Tracing, available
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox, as_toolbox

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from tinytools._events import EventSink
    from tinytools._run.artifacts import ArtifactStore
    from tinytools._run.journal_stage import JournalStage
    from tinytools._run.journals import Journal

__all__ = ["DEFAULT", "Dispatcher", "InvalidArgsPolicy", "Rewrite", "UnknownToolPolicy"]


InvalidArgsPolicy = Literal["return_error", "fail"]


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()
"""The default of ``max_inline_output_bytes``: `DEFAULT_INLINE_OUTPUT_BYTES`."""


class Dispatcher:
    """Runs a model's tool calls for one run of an agent; cheap, so make one per run.

    Args:
        toolbox: The tools: a `Toolbox`, a single `Tool`, or an iterable of tools.
        unknown_tool: ``"return_error"`` (a repairable result listing the tools), ``"fail"``
            (raise `ToolNotFound`) or ``Rewrite("fallback")``.
        invalid_args: ``"return_error"`` (the validation detail and the schema) or ``"fail"``
            (raise `ArgumentsError`). Malformed JSON always gets a repairable result.
        limits: Budget, deadline (seconds from now) and argument size for the run.
        middleware: Objects with ``before_tool(call, tool)`` and/or
            ``after_tool(call, tool, result)``, sync or async, applied in order; with
            ``around_tool(call, tool, attempt)``, a context manager around each run of the
            tool (an execution hook); and `PolicyMiddleware` objects, whose rules apply at the
            policy stage.
        on_event: A callable (sync or async) or ``asyncio.Queue`` receiving `ToolEvent` s.
        max_concurrency: How many parallel-safe calls of a batch run at once.
        max_inline_output_bytes: Largest output text kept inline and longest failure text, in UTF-8 bytes (by
            default `DEFAULT_INLINE_OUTPUT_BYTES`; None for no limit; at least 64, so that a cut
            message still fits); a larger output moves to ``artifacts`` (a note with the reference
            and the output's first that many bytes stays), or fails ``output_too_large``.
        artifacts: The `ArtifactStore` for large outputs and artifact data tools return.
        redact: Scrubs every model-facing string of every result (secrets of injected
            ``Injected(..., secret=True)`` values are always scrubbed).
        strict: Validate against the OpenAI strict-mode rendering of each schema (what a strict
            provider was shown), and treat ``null`` for an optional argument as omitted. Every
            tool's rendering is made here: one strict mode cannot express raises `SchemaError`.
        context: The run's trusted identity, given to tools that take an `Invocation`.
        stores: Named application stores, given to tools that take `Stores`.
        executor: A `concurrent.futures.Executor` that runs every sync tool not marked
            ``@tool(executor="inline")`` (a process pool, a Dask client's executor), or a mapping
            of names to executors: ``"default"`` for tools that name none, the others for
            ``@tool(executor="name")``. See `tinytools.executors`.
        expose_errors: Exception types (besides `ToolError`) whose message the model may read,
            for every tool; a tool adds its own with ``@tool(expose_errors=...)``.
        encoders: How to encode outputs of other types as JSON data: class -> function returning
            JSON-able data (``{Fraction: str}``), looked up by the MRO; for one class, these win
            over the toolbox's ``encoders``. Applied in this process, also to outputs that come
            back from an executor's workers (see `tinytools._encoding`).
        journal: Where every call is recorded before it runs and when it ends, so that no call
            runs twice (`SQLiteJournal`, or any `Journal`); see `tinytools._run.journal_stage`. The
            run is ``context.run_id`` (give one to resume a run in another process).
        signing_key: Signs the handles of pending calls (bytes or text); the same key and
            journal let another process resume them. By default a random key of this dispatcher.
        pending_ttl: Seconds a pending call waits, unless its source says otherwise.
        lease_seconds: How long this worker's claim on a journaled call holds without renewal; it
            renews it while the tool runs (`tinytools._run.leases`). A worker on another host
            takes a call over once its lease has expired. By default 30 seconds.
        revealed: Deferred tools the run starts with revealed (see `reveal`).
        tracing: OpenTelemetry spans and the tool-duration metric for every call (`Tracing`; see
            `tinytools._run.tracing`): on by default wherever ``opentelemetry-api`` is installed,
            and at work only once the application set a tracer or meter provider. ``False``
            turns it off; ``Tracing(content=True)`` records arguments and results as scrubbed.

    Raises:
        ToolDefinitionError: A tool cannot go to the executor it would run on.
        SchemaError: Under ``strict=True``, a tool's schema uses what strict mode cannot express.
    """

    def __init__(
        self,
        toolbox: Toolbox | Tool[..., Any] | Iterable[Tool[..., Any]],
        *,
        unknown_tool: UnknownToolPolicy = "return_error",
        invalid_args: InvalidArgsPolicy = "return_error",
        limits: Limits | None = None,
        middleware: Sequence[Any] = (),
        on_event: EventSink | None = None,
        max_concurrency: int = 8,
        max_inline_output_bytes: int | None = DEFAULT,
        artifacts: ArtifactStore | None = None,
        redact: Callable[[str], str] | None = None,
        strict: bool = False,
        context: RunContext | None = None,
        stores: Mapping[str, Any] | None = None,
        executor: Executor | Mapping[str, Executor] | None = None,
        expose_errors: Iterable[type[BaseException]] = (),
        encoders: Encoders | None = None,
        journal: Journal | None = None,
        signing_key: bytes | str | None = None,
        pending_ttl: float = 3600.0,
        revealed: Iterable[str] = (),
        tracing: bool | Tracing = True,
        lease_seconds: float | None = None,
    ):
        self.toolbox = as_toolbox(toolbox)
        if invalid_args not in ("return_error", "fail"):
            raise ValueError(f"invalid_args must be 'return_error' or 'fail', not {invalid_args!r}")
        self.invalid_args = invalid_args
        self.unknown_tool = check_unknown_policy(unknown_tool)
        self.limits = limits or Limits()
        self.max_concurrency = max(1, max_concurrency)
        self.strict = strict
        if strict:  # a tool strict mode cannot show fails here, not as each of its calls raises later
            for each in self.toolbox:
                each.strict()
        self.token = CancellationToken()
        """The run's cancellation token; `cancel` sets it."""
        self.context = context or RunContext()
        self.run_id = self.context.run_id or uuid.uuid4().hex
        """The run's id: its journal entries and idempotency keys are this run's."""
        self.expose_errors = tuple(expose_errors)
        self.encoder = _encoder(self.toolbox, encoders)
        """Turns outputs that are not plain data into plain data, for every plan of this dispatcher."""
        budget = max_inline_output_bytes
        limit = DEFAULT_INLINE_OUTPUT_BYTES if budget is DEFAULT else checked_budget(budget)
        self.boundary = Boundary(hook=redact, limit=limit, store=artifacts)
        self._journal_options = (journal, signing_key, pending_ttl, lease_seconds)
        self._journal_stage: JournalStage | None = None
        self._remembers = True
        """Whether a call is remembered for the run without a journal (a one-line call's is not)."""
        if journal is not None or signing_key is not None:  # made now: a bad key or journal fails here
            self.journal_stage  # noqa: B018
        self.tracer = _tracer(tracing, self.boundary)
        """Each call's span and duration, or None where tracing is off or OpenTelemetry absent."""
        self.routes = _routes(self.toolbox, executor)
        self.policies = PolicyEnforcement(middleware)
        self._revealed = Revealed(revealed)
        self._plans: dict[str, Plan] = {}
        self._plain = not middleware and on_event is None and redact is None and journal is None
        self._express: dict[str, Express] = {}
        self._aexpress: dict[str, AsyncExpress] = {}
        self._steps = 0
        self._sync = SyncDriver(on_event)
        self._async = AsyncDriver(on_event)
        self._assemble(middleware, on_event, Stores(stores))
        self.token.on_cancel(self._cancelled)

    def _assemble(self, middleware: Sequence[Any], on_event: EventSink | None, stores: Stores) -> None:
        """Admission and the pipeline, from the stages built in `__init__`; the deadline starts now."""
        deadline_at = None if self.limits.deadline is None else perf_counter() + self.limits.deadline
        self.admission = Admission(
            self.toolbox, self.limits, self.unknown_tool, self.token, deadline_at, self.plan, self._revealed
        )
        self.pipeline = Pipeline(
            admission=self.admission,
            boundary=self.boundary,
            policies=self.policies,
            middleware=middleware,
            sink=on_event,
            token=self.token,
            context=self.context,
            stores=stores,
            plan_for=self.plan,
            journal_stage=lambda: self.journal_stage,
            tracer=self.tracer,
            max_concurrency=self.max_concurrency,
        )

    def _cancelled(self) -> None:
        """From now on every call is admitted, and refused; the run's pending calls end."""
        self._express.clear()
        self._aexpress.clear()
        self.admission.recheck()
        if self._journal_stage is not None and self._journal_stage.store.waiting(self.run_id):
            drive(_pending().cancel_pending(self.pipeline, None, self.scope(self._sync, None, None, None)))

    @property
    def journal_stage(self) -> JournalStage:
        """The journal stage: made when the run first needs it (a journal, a pending call, a cache, an act)."""
        stage = self._journal_stage
        if stage is None:
            from tinytools._run.journal_stage import JournalStage  # the journal subsystem loads on first use

            with _MAKING_STAGES:  # two threads' first calls make one stage: what it remembers is the run's
                stage = self._journal_stage
                if stage is None:
                    journal, key, ttl, lease_seconds = self._journal_options
                    stage = JournalStage(journal, key, ttl, self.run_id, self.token, self.boundary, lease_seconds)
                    stage.remember = self._remembers
                    self._journal_stage = stage
        return stage

    @property
    def calls(self) -> int:
        """Calls admitted so far (each recovery counts)."""
        return self.admission.calls

    @property
    def artifacts(self) -> ArtifactStore | None:
        """The artifact store."""
        return self.boundary.store

    @property
    def max_inline_output_bytes(self) -> int | None:
        """The budget of one result's model-facing text."""
        return self.boundary.limit

    def plan(self, tool: Tool[..., Any]) -> Plan:
        """The plan of ``tool`` in this dispatcher, made on first use."""
        plan = self._plans.get(tool.name)
        if plan is None or plan.tool is not tool:
            plan = self._plans[tool.name] = Plan(
                tool,
                strict=self.strict,
                denial=self.policies.denial(tool),
                approval=self.policies.approval(tool),
                route=self.routes.get(tool.name),
                exposed=self.expose_errors + tool.expose_errors,
                boundary=self.boundary,
                fail_invalid=self.invalid_args == "fail",
                plain=self._plain,
                encoder=self.encoder,
                journaled=self._journal_options[0] is not None,
                watchable=not self.pipeline.execution.around,
            )
            # a deferred tool's calls meet admission, which checks the reveal; given providers trace
            # every call, so none takes an express path (see `TRACE_API`)
            traces_all = self.tracer is not None and self.tracer.given
            if plan.plain and not tool.defer and not traces_all:
                plan.express, plan.aexpress = express(plan, self.admission, self.token, self._parked)
                if not self.token.cancelled and self.toolbox.get(tool.name) is tool:
                    if plan.express is not None:
                        self._express[tool.name] = plan.express
                    if plan.aexpress is not None:
                        self._aexpress[tool.name] = plan.aexpress
        return plan

    def visible_tools(self, names: Iterable[str] | None = None, *, state: Any = None) -> list[Tool[..., Any]]:
        """The tools that may be advertised this turn, once selection and policies apply.

        Deferred tools come only once revealed, after the others (`Toolbox.shown`). A call to
        any other tool is refused when it arrives, whatever the model was shown.
        """
        shown = self.toolbox.select(names, state=state).shown(self.revealed)
        return [tool for tool in shown if self.policies.denial(tool) is None]

    @property
    def revealed(self) -> tuple[str, ...]:
        """The deferred tools this run revealed, in the order it revealed them (they only grow)."""
        return self._revealed.names

    def reveal(self, names: Iterable[str]) -> None:
        """Reveal deferred tools for the rest of this run (as a search does), by name.

        Raises:
            ToolNotFound: A name is not a tool of the toolbox.
        """
        chosen = list(names)
        for name in chosen:
            if self.toolbox.get(name) is None:
                raise ToolNotFound(name, self.admission.callable_names())
        self._revealed.add(self.toolbox[name].name for name in chosen)

    def policy_denial(self, tool: Tool[..., Any]) -> tuple[str, str] | None:
        """The (rule, reason) that denies ``tool`` before any call, or None."""
        return self.policies.denial(tool)

    def _parked(
        self,
        plan: Plan,
        call: ToolCall,
        inject: Mapping[str, Any] | None,
        exc: BaseException,
        start: int,
        asynchronous: bool,
    ) -> ToolResult | Awaitable[ToolResult]:
        """A call the express path ran and its tool parked, ended as the pipeline ends any parked call."""
        state = CallState(
            call, plan, self.scope(self._async if asynchronous else self._sync, inject, None, None), start
        )
        result, _ = self.pipeline.execution.raised(state, exc, last=True)  # the pending result, as an attempt's
        ended = self.pipeline.cut_short(state, self.pipeline.end(state, result))
        return ended if asynchronous else drive(ended)

    def cancel(self) -> None:
        """Cancel the run: calls not yet started get ``cancelled``; running ones are told."""
        self.token.cancel()

    def scope(
        self, driver: Any, inject: Mapping[str, Any] | None, allowed: Iterable[str] | None, step_id: str | None
    ) -> Scope:
        """What one entry point's call or batch brings, as the pipeline reads it; it is the next step."""
        self._steps += 1
        return Scope(driver, inject, None if allowed is None else _names(allowed), step_id, self._steps)

    def dispatch(
        self,
        call: ToolCall,
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> ToolResult:
        """Run one call from synchronous code; a sync tool runs on this thread.

        Raises:
            ToolNotFound: Only under ``unknown_tool="fail"``.
            ArgumentsError: Only under ``invalid_args="fail"``.
            InjectionError: The application did not supply an injected value.
        """
        express = self._express.get(call.name) if allowed is None else None
        if express is not None and (self.tracer is None or TRACE_API not in modules or not self.tracer.live()):
            return express(call, inject)
        scope = self.scope(self._sync, inject, allowed, step_id)
        outcome = self.pipeline.run(call, scope)
        return outcome if isinstance(outcome, ToolResult) else drive(outcome)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> ToolResult:
        """Run one call from async code; a sync tool runs on a pool thread, never on the loop's."""
        fast = self._aexpress.get(call.name) if allowed is None else None
        if fast is not None and (self.tracer is None or TRACE_API not in modules or not self.tracer.live()):
            return await fast(call, inject)
        scope = self.scope(self._async, inject, allowed, step_id)
        outcome = self.pipeline.run(call, scope)  # an async driver's: always a coroutine
        return outcome if isinstance(outcome, ToolResult) else await outcome

    def resume(
        self, handle: str, answer: Any = None, *, error: str | None = None, inject: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Finish a pending call with the answer it waited for; its final result (same call id).

        The answer is validated against ``result.pending.request.schema``: an approval takes
        ``{"approved": bool, "reason"?: str}``, an external call its output (or ``error=`` the
        text of its failure), an input call the user's answer; a task takes none and is waited
        for. A call that asks again ends ``pending`` once more, with a new handle. A handle
        whose call already ended gets that same final result. ``inject`` gives the tool its
        injected values, as at dispatch (a call whose values are missing raises, and waits on).

        Raises:
            PendingError: The handle fails verification or its call is unknown to the journal,
                or the answer does not match the schema (the call stays pending).
        """
        scope = self.scope(self._sync, inject, None, None)
        return drive(_pending().resume(self.pipeline, handle, answer, scope, error))  # type: ignore[no-any-return]

    async def aresume(
        self, handle: str, answer: Any = None, *, error: str | None = None, inject: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """`resume` from async code."""
        scope = self.scope(self._async, inject, None, None)
        return await _pending().resume(self.pipeline, handle, answer, scope, error)  # type: ignore[no-any-return]

    def pending(self, *, all_runs: bool = False) -> list[PendingCall]:
        """The calls that wait for an answer: an approvals inbox, read from the journal.

        Each `PendingCall` names the tool, the call's arguments (scrubbed of its secrets, as the
        application's ``redact`` hook and the injected secrets leave them), and its `Pending`:
        ``kind``, ``request.message``, ``expires_at`` and the ``handle`` that `resume` takes. Any
        process that opens the same journal lists the same calls, and one with the same
        ``signing_key`` resumes them. By default this run's calls; ``all_runs=True`` for every run
        in the journal. An entry this version of tinytools cannot read is logged and left out.
        """
        stage = self.journal_stage
        listed = []
        for entry in stage.store.waiting(None if all_runs else self.run_id):
            try:
                listed.append(stage.entries.listed(entry))
            except JournalError as exc:
                logger("tinytools.journal").error("pending() left out an entry: %s", exc)
        return sorted(listed, key=lambda item: (item.pending.expires_at, item.call_id))

    def poll(self, handle: str) -> ToolResult:
        """Where a pending call stands, without waiting: its final result, or its pending one.

        Raises:
            PendingError: The handle fails verification or its call is unknown to the journal.
        """
        return drive(_pending().poll(self.pipeline, handle, self.scope(self._sync, None, None, None)))  # type: ignore[no-any-return]

    async def apoll(self, handle: str) -> ToolResult:
        """`poll` from async code."""
        return await _pending().poll(self.pipeline, handle, self.scope(self._async, None, None, None))  # type: ignore[no-any-return]

    def expire(self, now: float | None = None) -> list[ToolResult]:
        """End every pending call in the journal whose time is up; their final results.

        ``now`` is seconds since the epoch (by default the time now). An approval that never
        came ends failed with the code ``expired``; a call that may have acted, ``outcome_unknown``.
        """
        moment = time.time() if now is None else now
        return drive(_pending().expire(self.pipeline, moment, self.scope(self._sync, None, None, None)))  # type: ignore[no-any-return]

    def cancel_pending(self, handle: str) -> ToolResult:
        """End one pending call as cancelled (`cancel` ends every pending call of the run); its final result.

        Raises:
            PendingError: The handle fails verification or its call is unknown to the journal.
        """
        scope = self.scope(self._sync, None, None, None)
        return drive(_pending().cancel_pending(self.pipeline, handle, scope))[0]  # type: ignore[no-any-return]

    async def acancel_pending(self, handle: str) -> ToolResult:
        """`cancel_pending` from async code."""
        scope = self.scope(self._async, None, None, None)
        return (await _pending().cancel_pending(self.pipeline, handle, scope))[0]  # type: ignore[no-any-return]

    def dispatch_many(
        self,
        calls: Iterable[ToolCall],
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> list[ToolResult]:
        """Run a batch from synchronous code; results come back in call order."""
        batch = self.adispatch_many(calls, inject=inject, allowed=allowed, step_id=step_id)
        return run_coroutine(batch)  # type: ignore[no-any-return]

    async def adispatch_many(
        self,
        calls: Iterable[ToolCall],
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> list[ToolResult]:
        """Run a batch from async code; results come back in call order.

        Consecutive parallel-safe calls run concurrently, at most ``max_concurrency`` at once
        (sync tools on pool threads); a serial call waits for everything before it and runs
        alone. A call id seen earlier in the batch is refused (``duplicate_call_id``).
        """
        scope = self.scope(self._async, inject, allowed, step_id)
        scope.gate = Gate()
        return await run_batch(self.pipeline, list(calls), scope, self.max_concurrency)


def _names(allowed: Iterable[str] | None) -> frozenset[str] | set[str] | None:
    if allowed is None or isinstance(allowed, (set, frozenset)):
        return allowed
    return frozenset(allowed)


def _encoder(toolbox: Toolbox, encoders: Encoders | None) -> OutputEncoder:
    """The dispatcher's encoder: its own ``encoders`` over the toolbox's; the shared default when neither has any."""
    merged = {**getattr(toolbox, "encoders", {}), **(encoders or {})}
    return OutputEncoder(merged) if merged else DEFAULT_ENCODER


def _routes(toolbox: Toolbox, executor: Executor | Mapping[str, Executor] | None) -> dict[str, Any]:
    """The routes of the tools that leave this process (`tinytools.executors._placement`), if any do."""
    if executor is None and all(tool.executor in (None, "inline") for tool in toolbox):
        return {}  # nothing leaves: process pools and pickling stay unloaded
    from tinytools.executors._placement import plan_routes

    return plan_routes(toolbox, executor)


publish("tinytools", Dispatcher)


_MAKING_STAGES = threading.Lock()
"""Held while a dispatcher makes its journal stage (rarely, and briefly: one lock for every dispatcher)."""


def _pending() -> ModuleType:
    """`pending_calls`, loaded by the first resume, poll, expiry or cancellation of a pending call."""
    from tinytools._run import pending_calls

    return pending_calls


def _tracer(tracing: bool | Tracing, boundary: Boundary) -> CallTracer | None:
    """The dispatcher's tracer: None when tracing is off or ``opentelemetry-api`` is not installed."""
    if tracing is False or not available():
        return None
    return CallTracer(tracing if isinstance(tracing, Tracing) else Tracing(), boundary)
