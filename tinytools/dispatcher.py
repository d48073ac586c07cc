"""`Dispatcher`: one run's execution boundary between a model and the application's tools.

It adds to the one-call path of `tinytools.dispatch`: limits (budget, deadline, argument size,
cancellation), recovery policies for unknown tools and bad arguments, per-turn allowlists,
middleware, lifecycle events, timeouts with retries and unknown outcomes, and batches that
run parallel-safe calls concurrently. Every call still ends in exactly one `ToolResult`
carrying its id. With no middleware and no event sink, a call takes the same lean path as
`dispatch`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter, perf_counter_ns
from typing import TYPE_CHECKING, Any, Literal

from tinytools._outcomes import (
    argument_failure,
    failed,
    finish,
    fit_budget,
    propagates,
    redact,
    tool_failure,
    unknown_tool,
)
from tinytools.artifacts import ArtifactStore
from tinytools.context import Invocation, RunContext, Stores
from tinytools.dispatch import run_coroutine, secrets_of
from tinytools.errors import ArgumentsError, ToolNotFound, shorten
from tinytools.events import EventSink, InvalidToolArgs, ToolDenied, ToolEvent, UnknownToolCall
from tinytools.limits import CancellationToken, Limits
from tinytools.policy import PolicyMiddleware
from tinytools.results import ToolCall, ToolResult
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from tinytools.strict import StrictSchema

__all__ = [
    "Dispatcher",
    "InvalidArgsPolicy",
    "Rewrite",
    "UnknownToolPolicy",
    "adispatch_many",
    "dispatch_many",
]


@dataclass(frozen=True)
class Rewrite:
    """Unknown-tool policy: send the call to ``tool`` instead (once)."""

    tool: str
    """The fallback tool's name."""


UnknownToolPolicy = Literal["return_error", "fail"] | Rewrite
InvalidArgsPolicy = Literal["return_error", "fail"]


class Dispatcher:
    """Runs a model's tool calls for one run of an agent; cheap, so make one per run.

    Args:
        toolbox: The tools (a `Toolbox` or an iterable of tools).
        unknown_tool: ``"return_error"`` (a repairable result listing the tools), ``"fail"``
            (raise `ToolNotFound`) or ``Rewrite("fallback")``.
        invalid_args: ``"return_error"`` (the validation detail and the schema) or ``"fail"``
            (raise `ArgumentsError`). Malformed JSON always gets a repairable result.
        limits: Budget, deadline (seconds from now) and argument size for the run.
        middleware: Objects with ``before_tool(call, tool)`` and/or
            ``after_tool(call, tool, result)``, sync or async, applied in order.
        on_event: A callable (sync or async) or ``asyncio.Queue`` receiving `ToolEvent` s.
        max_concurrency: How many parallel-safe calls of a batch run at once.
        max_inline_output_bytes: Largest encoded output kept inline; a larger one moves to
            ``artifacts`` (a preview and the reference stay), or fails ``output_too_large``.
        artifacts: The `ArtifactStore` for large outputs and artifact data tools return.
        redact: Scrubs every model-facing string of every result (secrets of injected
            ``Injected(..., secret=True)`` values are always scrubbed).
        strict: Validate against the OpenAI strict-mode rendering of each schema (what a strict
            provider was shown), and treat ``null`` for an optional argument as omitted.
        context: The run's trusted identity, given to tools that take an `Invocation`.
        stores: Named application stores, given to tools that take `Stores`.
        executor: A `concurrent.futures.Executor` that runs every sync tool not marked
            ``@tool(executor="inline")`` (a process pool, a Dask client's executor), or a mapping
            of names to executors: ``"default"`` for tools that name none, the others for
            ``@tool(executor="name")``. See `tinytools.executors`.

    Raises:
        ToolDefinitionError: A tool cannot go to the executor it would run on.
    """

    def __init__(
        self,
        toolbox: Toolbox | Iterable[Tool[..., Any]],
        *,
        unknown_tool: UnknownToolPolicy = "return_error",
        invalid_args: InvalidArgsPolicy = "return_error",
        limits: Limits | None = None,
        middleware: Sequence[Any] = (),
        on_event: EventSink | None = None,
        max_concurrency: int = 8,
        max_inline_output_bytes: int | None = None,
        artifacts: ArtifactStore | None = None,
        redact: Callable[[str], str] | None = None,
        strict: bool = False,
        context: RunContext | None = None,
        stores: Mapping[str, Any] | None = None,
        executor: Executor | Mapping[str, Executor] | None = None,
    ):
        self.toolbox = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)
        self.unknown_tool = _check_unknown_policy(unknown_tool)
        if invalid_args not in ("return_error", "fail"):
            raise ValueError(f"invalid_args must be 'return_error' or 'fail', not {invalid_args!r}")
        self.invalid_args = invalid_args
        self.limits = limits or Limits()
        self.max_concurrency = max(1, max_concurrency)
        self.token = CancellationToken()
        """The run's cancellation token; `cancel` sets it."""
        self.calls = 0
        """Calls admitted so far (each recovery counts)."""
        self._started = perf_counter()
        self._deadline_at = None if self.limits.deadline is None else self._started + self.limits.deadline
        self.context = context or RunContext()
        self.stores = Stores(stores)
        self.strict = strict
        self._strict: dict[str, StrictSchema] | None = None
        if strict:
            from tinytools.strict import render_strict  # only strict mode needs it

            self._strict = {tool.name: render_strict(tool) for tool in self.toolbox}
        self._steps = 0
        self.max_inline_output_bytes = max_inline_output_bytes
        self.artifacts = artifacts
        self.redact = redact
        self._policies = [m for m in middleware if isinstance(m, PolicyMiddleware)]
        self.approves = any(p.approval is not None and p.approval.approver is not None for p in self._policies)
        """Whether an approver is configured (tools that need approval are denied otherwise)."""
        from tinytools._runner import Runner  # asyncio loads with the first dispatcher, not at import
        from tinytools.executors import plan_routes

        self.routes = plan_routes(self.toolbox, executor)
        """Tool name -> where its calls go, for tools that leave this process."""
        self._runner = Runner(self, middleware, on_event)
        self._plain = not middleware and on_event is None
        self._unlimited = self.limits == Limits()
        self._post = max_inline_output_bytes is not None or redact is not None
        self._open = self._unlimited
        """No limit to check per call (and not cancelled): a known tool goes straight to its call."""
        self.token.on_cancel(self._close)
        self._direct = {  # tools a call reaches with nothing around it; aliases, misses and the rest go through admit
            name: tool
            for name, tool in self.toolbox._tools.items()
            if not _needs_lifecycle(tool) and name not in self.routes
        }

    def visible_tools(self, names: Iterable[str] | None = None, *, state: Any = None) -> list[Tool[..., Any]]:
        """The tools that may be advertised this turn, once selection and policies apply.

        A call to any other tool is refused when it arrives, whatever the model was shown.
        """
        return [tool for tool in self.toolbox.select(names, state=state) if self.policy_denial(tool) is None]

    def policy_denial(self, tool: Tool[..., Any]) -> tuple[str, str] | None:
        """The (rule, reason) that denies ``tool`` before any call, or None."""
        for policy in self._policies:
            denied = policy.denial(tool)
            if denied is not None:
                return denied
        if tool.needs_approval and not self.approves:
            return "require_approval", "it needs approval and no approver is configured"
        return None

    def _close(self) -> None:
        self._open = False  # from now on every call goes through admit(), which refuses it

    def cancel(self) -> None:
        """Cancel the run: calls not yet started get ``cancelled``; running ones are told."""
        self.token.cancel()

    def dispatch(
        self,
        call: ToolCall,
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> ToolResult:
        """Run one call from synchronous code.

        Raises:
            ToolNotFound: Only under ``unknown_tool="fail"``.
            ArgumentsError: Only under ``invalid_args="fail"``.
            InjectionError: The application did not supply an injected value.
        """
        start = perf_counter_ns()
        if not self._plain:
            return run_coroutine(  # type: ignore[no-any-return]
                self._runner.run(call, inject, allowed, start, offload=False, step_id=self.step(step_id))
            )
        tool = self._direct.get(call.name) if self._open else None
        if tool is not None and (allowed is None or tool.name in allowed):
            self.calls += 1
            route = None
        else:
            found = self.admit(call, allowed, start)
            if isinstance(found, ToolResult):
                return self.scrub(found)
            tool, call = found
            if _needs_lifecycle(tool):
                return run_coroutine(  # type: ignore[no-any-return]
                    self._runner.invoke_bound(call, tool, inject, start, offload=False, step_id=self.step(step_id))
                )
            route = self.routes.get(tool.name) if self.routes else None
        try:
            args = tool.positional(call) if self._strict is None and route is None else None
            if args is None and self._strict is None and not tool.remote_keys:
                bound = tool.try_bind(call, inject)
                if isinstance(bound, ArgumentsError):
                    return self.scrub(self.bad_arguments(call, tool, bound, start))
                kwargs = bound
            elif args is None:
                kwargs = self.bind(tool, call, inject)
        except ArgumentsError as exc:
            return self.scrub(self.bad_arguments(call, tool, exc, start))
        try:
            if args is not None:
                output = tool.fn(*args)
            else:
                output = tool.call(**kwargs) if route is None else route.call(call, kwargs)
            if tool.is_async:
                output = run_coroutine(output)
        except BaseException as exc:
            if propagates(exc):
                raise
            result = tool_failure(call, tool.name, exc, start) if route is None else route.failure(call, exc, start)
        else:
            result = finish(call, tool, output, start, self.artifacts)
        if self._post or tool.secret_keys:
            return self.settle(result, tool, inject, start)
        return result

    def settle(
        self, result: ToolResult, tool: Tool[..., Any], inject: Mapping[str, Any] | None, start: int
    ) -> ToolResult:
        """Apply the output budget and redaction to a result the tool produced."""
        if self.max_inline_output_bytes is not None:
            result = fit_budget(result, self.max_inline_output_bytes, self.artifacts, start)
        secrets = secrets_of(tool, inject)
        if secrets or self.redact is not None:
            result = redact(result, secrets, self.redact)
        return result

    def scrub(self, result: ToolResult) -> ToolResult:
        """Apply the application's redaction hook, if any, to a result."""
        return result if self.redact is None else redact(result, [], self.redact)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        inject: Mapping[str, Any] | None = None,
        allowed: Iterable[str] | None = None,
        step_id: str | None = None,
    ) -> ToolResult:
        """Run one call from async code (sync tools run inline unless they have a timeout)."""
        start = perf_counter_ns()
        return await self._runner.run(call, inject, allowed, start, offload=False, step_id=self.step(step_id))

    def bind(self, tool: Tool[..., Any], call: ToolCall, inject: Mapping[str, Any] | None) -> dict[str, Any]:
        """Decode, validate (strictly, in strict mode), convert and inject a call's arguments.

        A call read the typed way (see `Tool.positional`) comes back with every parameter, an
        omitted one as the function's own default; one read the general way leaves it out.
        Both call the function the same way.
        """
        if tool.name in self.routes:  # sent to a worker: omitted arguments stay omitted
            if tool.remote_keys:  # made by the worker, not sent from here
                inject = self.routes[tool.name].overlay(inject)
        elif self._strict is None:
            args = tool.positional(call)  # the fast way in, as keywords for the lifecycle's path
            if args is not None:
                return tool.keywords(args)
        if self._strict is None:
            return tool.bind(call, inject)
        return tool.bind_strict(call, inject, self._strict[tool.name])

    def step(self, step_id: str | None) -> str:
        """The step id for a call or batch: the one given, or the next ``step-N``."""
        self._steps += 1
        return step_id if step_id is not None else f"step-{self._steps}"

    def invocation(self, call: ToolCall, tool: Tool[..., Any], step_id: str, attempt: int) -> Invocation:
        """The trusted identity of one execution of ``tool``."""
        context = self.context
        return Invocation(
            call,
            tool.name,
            run_id=context.run_id,
            step_id=step_id,
            session_id=context.session_id,
            agent_id=context.agent_id,
            workspace_id=context.workspace_id,
            actor=context.actor,
            attempt=attempt,
            max_inline_output_bytes=self.max_inline_output_bytes,
            deadline=self._deadline_at,
        )

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
        (sync tools in threads); a serial call waits for everything before it and runs alone.
        A call id seen earlier in the batch is refused (``duplicate_call_id``).
        """
        names = None if allowed is None else set(allowed)
        return await self._runner.run_batch(list(calls), inject, names, self.step(step_id))

    def admit(
        self, call: ToolCall, allowed: Iterable[str] | None, start: int
    ) -> tuple[Tool[..., Any], ToolCall] | ToolResult:
        """Apply limits, lookup, the unknown-tool policy and the allowlist to a call.

        Returns the tool and the (possibly rewritten) call, or the result that ends it.
        """
        refusal = self._limit_refusal(call, start)
        if refusal is not None:
            return refusal
        tool = self.toolbox.get(call.name)
        if tool is None:
            return self._unknown(call, start)
        if allowed is not None and tool.name not in allowed:
            message = f"Tool {shorten(call.name)!r} is not available in this turn."
            return failed(call, tool.name, "tool_not_allowed", message, start)
        return tool, call

    def _limit_refusal(self, call: ToolCall, start: int) -> ToolResult | None:
        if self.token.cancelled:
            return failed(call, call.name, "cancelled", "The run was cancelled; the call was not made.", start)
        if self._deadline_at is not None and perf_counter() > self._deadline_at:
            message = "The run's deadline has passed; the call was not made."
            return failed(call, call.name, "deadline_exceeded", message, start)
        self.calls += 1
        limit = self.limits.max_tool_calls
        if limit is not None and self.calls > limit:
            message = f"The run's budget of {limit} tool calls is spent; the call was not made."
            return failed(call, call.name, "budget_exhausted", message, start)
        size_limit = self.limits.max_argument_bytes
        if size_limit is not None and _argument_bytes(call.arguments, size_limit) > size_limit:
            message = f"The arguments are larger than {size_limit} bytes; send smaller arguments."
            return failed(call, call.name, "arguments_too_large", message, start)
        return None

    def _unknown(self, call: ToolCall, start: int) -> tuple[Tool[..., Any], ToolCall] | ToolResult:
        policy = self.unknown_tool
        if policy == "fail":
            raise ToolNotFound(call.name, self.toolbox.names)
        if isinstance(policy, Rewrite):
            fallback = self.toolbox.get(policy.tool)
            if fallback is not None:
                return fallback, ToolCall(call.id, fallback.name, call.arguments, call.invalid)
        return unknown_tool(call, self.toolbox.names, start)

    def rewrite_event(self, call: ToolCall, routed: ToolCall, start: int) -> ToolEvent:
        """The event for a call the unknown-tool policy sent to a fallback tool."""
        elapsed = perf_counter_ns() - start
        return UnknownToolCall(call.id, routed.name, elapsed, call.name, call.arguments, f"rewrite:{routed.name}")

    def bad_arguments(self, call: ToolCall, tool: Tool[..., Any], error: ArgumentsError, start: int) -> ToolResult:
        """Apply the invalid-arguments policy (malformed JSON always gets a result)."""
        if self.invalid_args == "fail" and error.keyword != "json":
            error.tool = tool.name
            raise error
        return argument_failure(call, tool, error, start)

    def events_for_refusal(self, call: ToolCall, result: ToolResult, start: int) -> ToolEvent:
        """The event that explains a result from `admit`."""
        elapsed = perf_counter_ns() - start
        code = result.error.code if result.error else ""
        if code == "unknown_tool":
            return UnknownToolCall(call.id, call.name, elapsed, call.name, call.arguments, "tool_error")
        reason = result.error.message if result.error else ""
        return ToolDenied(call.id, result.name, elapsed, code, reason)

    def invalid_event(self, call: ToolCall, tool: Tool[..., Any], error: ArgumentsError, start: int) -> ToolEvent:
        """The event for arguments that failed."""
        recovery = "fail" if self.invalid_args == "fail" and error.keyword != "json" else "tool_error"
        return InvalidToolArgs(call.id, tool.name, perf_counter_ns() - start, call.arguments, error, recovery)


def _check_unknown_policy(policy: Any) -> UnknownToolPolicy:
    if policy in ("return_error", "fail") or isinstance(policy, Rewrite):
        return policy  # type: ignore[no-any-return]
    raise ValueError(f"unknown_tool must be 'return_error', 'fail' or Rewrite(name), not {policy!r}")


def _argument_bytes(arguments: Any, limit: int) -> int:
    """The size of the arguments' JSON text, computing exactly only near the limit."""
    if isinstance(arguments, bytes):
        return len(arguments)
    if isinstance(arguments, str):
        return len(arguments) if len(arguments) * 4 <= limit else len(arguments.encode("utf-8", "surrogatepass"))
    import msgspec

    try:
        return len(msgspec.json.encode(arguments))
    except (TypeError, ValueError, OverflowError):
        return 0  # not JSON: decoding refuses it
    except RecursionError:
        return limit + 1  # nested too deeply to measure: refused as too large


def _needs_lifecycle(tool: Tool[..., Any]) -> bool:
    """Whether a sync call must go through the async lifecycle: a timeout, retries, runtime values or approval."""
    return tool.timeout is not None or bool(tool.retries) or bool(tool.wants) or tool.needs_approval


def dispatch_many(
    calls: Iterable[ToolCall],
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
    max_concurrency: int = 8,
) -> list[ToolResult]:
    """Run a batch from synchronous code with a fresh `Dispatcher`; results in call order."""
    return Dispatcher(toolbox, max_concurrency=max_concurrency).dispatch_many(calls, inject=inject)


async def adispatch_many(
    calls: Iterable[ToolCall],
    toolbox: Toolbox | Iterable[Tool[..., Any]],
    *,
    inject: Mapping[str, Any] | None = None,
    max_concurrency: int = 8,
) -> list[ToolResult]:
    """Run a batch from async code with a fresh `Dispatcher`; results in call order."""
    return await Dispatcher(toolbox, max_concurrency=max_concurrency).adispatch_many(calls, inject=inject)
