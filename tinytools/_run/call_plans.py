"""Call plans: every step checked before the first runs, then each step a call of its own.

A plan tool's call (`tinytools._plan_tool`) meets the pipeline like any call, up to the policy
stage. There `check` reads the plan as a whole, before anything runs, and refuses all of it at the
first fault, naming the step and the JSON pointer (a repairable ``invalid_arguments``):

- step ids: each unique (the schema says their form);
- each step's tool: one this turn may call (the allowlist, a deferred tool revealed), not a
  search or plan tool; a tool a static rule denies refuses the plan (``policy_denied``);
- each reference ``{"$from", "at"}``: to an earlier step; the referenced tool's output schema at
  the pointer fits the parameter's schema (`tinytools._schema.compatible`; a tool without an
  output schema only into a parameter that takes anything);
- ``return``: ids of steps of the plan;
- the run's call budget: room for every step.

The steps' literal arguments were enforced already, by the plan tool's schema. If any step's tool
needs approval, the approver is asked once, about the whole plan, before any step (a deferred
answer parks the plan's call, resumable like any other); its steps are then not asked again.

`run` then runs the steps: each a call of its own through the same pipeline (its call id is the
plan call's id, ``/`` and the step's id; the plan call's injected values and allowlist), as soon as
the steps it refers to succeeded. Consecutive parallel-safe steps run concurrently (at most the
dispatcher's ``max_concurrency``), a serial one alone, after those before it. A referenced value
is taken from the referenced step's final result (as sealed: scrubbed of its secrets) and checked
again by the step's own read. A step whose reference failed, or that refers to a step that did not
succeed, does not run (``not_run``); the others go on. The model reads each step's id and status
and the outputs of the steps the plan returns; the plan's ``output`` holds every step's
`ToolResult` for the application (`plan_steps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from tinytools._errors import ArgumentsError, ToolError, kept, shorten
from tinytools._events import InvalidToolArgs
from tinytools._plan_tool import is_reference
from tinytools._public import publish
from tinytools._results import ToolCall, ToolOutput, ToolResult
from tinytools._run.argument_messages import argument_failure
from tinytools._run.call_state import Scope
from tinytools._run.drivers import AsyncDriver, SyncDriver, drive
from tinytools._run.failures import failed
from tinytools._run.gate import Gate
from tinytools._schema.compatible import misfit, output_at
from tinytools._schema.validation_failures import escape, unescape
from tinytools._tool import is_search
from tinytools.policy import ApprovalRequest, policy_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tinytools._run.admission import Admission
    from tinytools._run.boundary import Boundary
    from tinytools._run.call_state import CallState
    from tinytools._run.plans import Plan
    from tinytools._tool import Tool

__all__ = [
    "Checked",
    "Refusal",
    "Stages",
    "Step",
    "check",
    "check_injected",
    "over_budget",
    "plan_steps",
    "refusal_result",
    "reserve",
    "run",
]


class Stages(Protocol):
    """What a plan needs of the pipeline that runs it (`tinytools._run.pipeline.Pipeline`)."""

    admission: Admission
    boundary: Boundary
    sink: Any
    max_concurrency: int
    fits: dict[Any, str | None]
    plan_for: Callable[[Any], Plan]
    before: list[Any]
    after: list[Any]

    def run(self, call: ToolCall, scope: Scope) -> ToolResult | Awaitable[ToolResult]: ...

    def note_denied(self, state: CallState, rule: str, reason: str) -> None: ...


_MAX_FITS = 4096
"""How many answers of whether an output fits a parameter a dispatcher remembers (`Pipeline.fits`)."""


class Step:
    """One checked step of a plan."""

    __slots__ = ("approval", "arguments", "depends", "id", "index", "references", "tool")

    def __init__(self, index: int, step_id: str, tool: Tool[..., Any], arguments: dict[str, Any], approval: bool):
        self.index = index
        self.id = step_id
        self.tool = tool
        self.approval = approval
        """Whether its tool needs an approver's yes (the plan's approval gives it)."""
        self.arguments = arguments
        """The literal arguments (references left in place, replaced when the step runs)."""
        self.references: dict[str, tuple[str, str]] = {}
        """Parameter -> (step id, pointer) of each argument taken from an earlier step."""
        self.depends: list[str] = []
        """The steps it refers to, each once, in the order first referred to."""


class Checked:
    """A plan that passed every check: its steps, what it returns, whether it needs approval."""

    __slots__ = ("needs_approval", "returns", "steps")

    def __init__(self, steps: list[Step], returns: list[str], needs_approval: bool):
        self.steps = steps
        self.returns = returns
        self.needs_approval = needs_approval

    def approvals(self, call_id: str) -> tuple[ApprovalRequest, ...]:
        """A request for each step that needs approval, for the approver of the plan's call ``call_id``."""
        return tuple(
            ApprovalRequest(
                step.tool,
                policy_of(step.tool),
                step.arguments,
                ToolCall(f"{call_id}/{step.id}", step.tool.name, step.arguments),
            )
            for step in self.steps
            if step.approval
        )


class Refusal:
    """Why a plan is refused: where (step, JSON pointer), the keyword, the reason; or the rule that denies it."""

    __slots__ = ("keyword", "pointer", "reason", "rule", "step")

    def __init__(self, step: str | None, pointer: str, keyword: str, reason: str, rule: str | None = None):
        self.step = step
        self.pointer = pointer
        self.keyword = keyword
        self.reason = reason
        self.rule = rule
        """The policy rule that denies a step's tool (a denial, not invalid arguments), or None."""

    def message(self) -> str:
        where = f"step {shorten(self.step)!r} (at {self.pointer})" if self.step is not None else f"at {self.pointer}"
        if not self.pointer:
            where = "the plan"
        if self.rule is not None:
            return f"The plan was not run: {where}: {self.reason}. No step has run."
        return f"The plan was not run: {where}: {self.reason}. Correct the plan and send it again; no step has run."


def check(pipeline: Stages, state: CallState, arguments: Mapping[str, Any]) -> Checked | Refusal:
    """Check a plan whole (see the module); its checked steps, or why it is refused."""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    tools: dict[str, tuple[Tool[..., Any], bool] | str] = {}  # each tool named: itself and whether it needs approval
    needs_approval = False
    fits = pipeline.fits
    for index, raw in enumerate(arguments.get("steps") or ()):
        step_id, name = raw["id"], raw["tool"]
        if step_id in by_id:
            reason = f"the id {shorten(step_id)!r} is already the id of step {by_id[step_id].index}"
            return Refusal(step_id, f"/steps/{index}/id", "uniqueItems", reason)
        decided = tools.get(name)
        if decided is None:
            decided = tools[name] = _callable(pipeline, state, name)
        if decided.__class__ is not tuple:
            rule, _, reason = decided.partition(" ")  # type: ignore[union-attr]
            keyword = "policy" if rule else "enum"
            return Refusal(step_id, f"/steps/{index}/tool", keyword, reason, rule or None)
        tool, approval = decided
        needs_approval = needs_approval or approval
        step = Step(index, step_id, tool, raw["arguments"], approval)
        for parameter, value in step.arguments.items():
            if is_reference(value):
                problem = _reference(step, parameter, value, by_id, fits)
                if problem is not None:
                    return problem
        steps.append(step)
        by_id[step_id] = step
    returns = list(arguments.get("return") or ())
    for index, step_id in enumerate(returns):
        if step_id not in by_id:
            return Refusal(None, f"/return/{index}", "enum", f"there is no step {shorten(step_id)!r} to return")
    admission = pipeline.admission
    limit = admission.limits.max_tool_calls
    if limit is not None and admission.calls + len(steps) > limit:
        room = max(0, limit - admission.calls)
        reason = f"the plan has {len(steps)} steps and the run may make {room} more calls"
        return Refusal(None, "/steps", "maxItems", reason)
    return Checked(steps, returns, needs_approval)


def _callable(pipeline: Stages, state: CallState, name: str) -> tuple[Tool[..., Any], bool] | str:
    """The tool a step names and whether it needs approval; or why it cannot be called (" reason", or "rule reason")."""
    admission = pipeline.admission
    tool = admission.toolbox.get(name)
    if tool is None:
        return f" there is no tool {shorten(name)!r}"
    if "plan" in tool.wants or is_search(tool):
        return f" the tool {tool.name!r} cannot be a step of a plan"
    allowed = state.scope.allowed
    if (allowed is not None and tool.name not in allowed) or (tool.defer and tool.name not in admission.revealed):
        return f" the tool {tool.name!r} is not available in this turn"
    plan = pipeline.plan_for(tool)
    if plan.denial is not None:
        rule, reason = plan.denial
        return f"{rule} the tool {tool.name!r} is denied: {reason}"
    return tool, plan.approval is not None


def _reference(
    step: Step, parameter: str, value: dict[str, Any], by_id: dict[str, Step], fits: dict[Any, str | None]
) -> Refusal | None:
    """Read one reference: to an earlier step, into an output that fits the parameter."""
    source_id, path = value["$from"], value.get("at") or ""
    source = by_id.get(source_id)
    if source is None:
        reason = f"{shorten(source_id)!r} is not the id of an earlier step (a step refers only to steps before it)"
        return Refusal(step.id, f"{_pointer(step, parameter)}/$from", "$from", reason)
    if path and path[0] != "/":
        reason = f"{shorten(path)!r} is not a JSON pointer (it starts with /)"
        return Refusal(step.id, f"{_pointer(step, parameter)}/at", "format", reason)
    problem = fits.get((source.tool, path, step.tool, parameter), fits)
    if problem is fits:
        problem = _fit(fits, source.tool, path, step.tool, parameter)
    if problem is not None:
        where = f" at {shorten(path)}" if path else ""
        reason = f"the output of step {source_id!r}{where} {problem}"
        return Refusal(step.id, _pointer(step, parameter), "type", reason)
    step.references[parameter] = (source_id, path)
    if source_id not in step.depends:
        step.depends.append(source_id)
    return None


def _pointer(step: Step, parameter: str) -> str:
    return f"/steps/{step.index}/arguments/{escape(parameter)}"


def _fit(
    fits: dict[Any, str | None], source: Tool[..., Any], path: str, target: Tool[..., Any], parameter: str
) -> str | None:
    """Why ``source``'s output at ``path`` may not fit ``target``'s ``parameter`` (None: it fits); remembered."""
    key = (source, path, target, parameter)
    located = output_at(source.output_schema, path)
    if isinstance(located, str):
        problem: str | None = f"cannot be: it {located.removeprefix('the output ')}"
    else:
        schema = target.input_schema
        reason = misfit(schema, schema["properties"][parameter], located)
        problem = None if reason is None else f"may not fit the parameter {parameter!r}: {reason}"
    if len(fits) >= _MAX_FITS:
        fits.clear()
    fits[key] = problem
    return problem


def refusal_result(pipeline: Stages, state: CallState, refusal: Refusal) -> ToolResult:
    """The result of a refused plan: ``invalid_arguments`` (or the raise of ``invalid_args="fail"``), or a denial."""
    call, name, start = state.call, state.plan.name, state.start
    details = {"pointer": refusal.pointer, "keyword": refusal.keyword}
    if refusal.step is not None:
        details["step"] = refusal.step
    if refusal.rule is not None:
        pipeline.note_denied(state, refusal.rule, refusal.reason)
        return failed(call, name, "policy_denied", refusal.message(), start, {"rule": refusal.rule, **details})
    error = ArgumentsError(refusal.reason, pointer=refusal.pointer, keyword=refusal.keyword, tool=name)
    error.parameter = "return" if refusal.pointer.startswith("/return") else "steps"
    if pipeline.sink is not None:
        recovery = "fail" if state.plan.fail_invalid else "tool_error"
        elapsed = perf_counter_ns() - start
        state.queued.append(InvalidToolArgs(call.id, name, elapsed, call.arguments, error, recovery))
    if state.plan.fail_invalid:
        raise error
    return failed(call, name, "invalid_arguments", refusal.message(), start, details)


async def run(pipeline: Stages, state: CallState, arguments: Mapping[str, Any]) -> ToolOutput:
    """Run a plan's steps (see the module): the plan tool's output."""
    import asyncio  # a plan's steps wait on each other: only a plan needs it here

    checked = state.checked_plan
    if checked is None:  # a plan resumed after its approval: checked again, by this dispatcher
        found = check(pipeline, state, arguments)
        if isinstance(found, Refusal):
            raise ToolError(found.message())
        checked = found
        check_injected(pipeline, checked, state.scope.inject)
        if not reserve(pipeline, checked):
            raise ToolError(over_budget(pipeline, checked).message())
    scope = state.scope
    driver = scope.driver if scope.driver.asynchronous else AsyncDriver(pipeline.sink)
    inner = Scope(driver, scope.inject, scope.allowed, scope.step_id, 0, scope.gate or Gate())
    # read, checked and approved whole: these calls, and only these, are not read strictly or asked again
    inner.planned = {f"{state.call.id}/{step.id}": step.tool.name for step in checked.steps}
    # from sync code, a sync step that nothing could run beside runs on this thread, as dispatch would; not
    # where a hook or a sink may be async: under the sync driver inside this loop it would run on another thread
    here = None
    if not scope.driver.asynchronous and pipeline.sink is None and not pipeline.before and not pipeline.after:
        here = Scope(SyncDriver(pipeline.sink), scope.inject, scope.allowed, scope.step_id, 0)
        here.planned = inner.planned
    ends: dict[str, asyncio.Future[ToolResult]] = {}
    room = asyncio.Semaphore(pipeline.max_concurrency)
    loop = asyncio.get_running_loop()
    for step in checked.steps:
        ends[step.id] = loop.create_future()

    async def one(step: Step, alone: set[str]) -> None:
        chosen = here if here is not None and step.id in alone and not step.tool.is_async else inner
        try:
            ends[step.id].set_result(await _step(pipeline, state, chosen, step, ends, room))
        except BaseException:
            ends[step.id].cancel()  # its dependents end with it; the exception is the plan's
            raise

    for group in _groups(checked.steps):
        alone = _alone(group) if here is not None else set()
        await asyncio.gather(*(one(step, alone) for step in group))
    ordered = [ends[step.id].result() for step in checked.steps]
    return ToolOutput(
        {"steps": {step.id: msgspec.to_builtins(result) for step, result in zip(checked.steps, ordered, strict=True)}},
        content=_read(checked, ordered, pipeline.boundary.limit),
    )


def check_injected(pipeline: Stages, checked: Checked, inject: Mapping[str, Any] | None) -> None:
    """Make sure every step can bind its injected values, before any step runs.

    Raises:
        InjectionError: The application did not supply one (as a call of that tool would raise).
    """
    for step in checked.steps:
        pipeline.plan_for(step.tool).check_injected(inject)


def reserve(pipeline: Stages, checked: Checked) -> bool:
    """Count a checked plan's steps against the run's call budget now (False: no room for them all).

    Reserved at once, a plan's steps are not refused halfway by calls that came after it; each
    step's admission gives its reserved call back before counting itself (`_step`).
    """
    admission = pipeline.admission
    limit = admission.limits.max_tool_calls
    if limit is not None and admission.calls + len(checked.steps) > limit:
        return False
    admission.calls += len(checked.steps)
    return True


def over_budget(pipeline: Stages, checked: Checked) -> Refusal:
    admission = pipeline.admission
    room = max(0, (admission.limits.max_tool_calls or 0) - admission.calls)
    reason = f"the plan has {len(checked.steps)} steps and the run may make {room} more calls"
    return Refusal(None, "/steps", "maxItems", reason)


async def _step(
    pipeline: Stages, state: CallState, scope: Scope, step: Step, ends: dict[str, Any], room: Any
) -> ToolResult:
    """One step: once the steps it refers to ended, its call through the pipeline, or why it did not run."""
    call = ToolCall(f"{state.call.id}/{step.id}", step.tool.name, step.arguments)
    bound = dict(step.arguments)
    for source_id in step.depends:
        source = await ends[source_id]
        if source.status != "succeeded":
            return _not_run(call, step, f"step {source_id!r} {_ended(source)}")
    for parameter, (source_id, path) in step.references.items():
        value = _at(_output(pipeline, ends[source_id].result()), path)
        if value is _MISSING:
            where = f"no {shorten(path)!r}" if path else "no output"
            return _not_run(call, step, f"the output of step {source_id!r} has {where} for its argument {parameter!r}")
        bound[parameter] = value
    call = ToolCall(call.id, call.name, bound)
    async with room:
        pipeline.admission.calls -= 1  # its call was reserved with the plan: admission counts it again
        try:
            outcome = pipeline.run(call, scope)
            if isinstance(outcome, ToolResult):
                return outcome
            ended: ToolResult = drive(outcome) if not scope.driver.asynchronous else await outcome
            return ended
        except ArgumentsError as exc:  # invalid_args="fail" raises for the application's calls, not a step's
            return argument_failure(call, step.tool, kept(exc), perf_counter_ns())


def _not_run(call: ToolCall, step: Step, reason: str) -> ToolResult:
    return failed(call, step.tool.name, "not_run", f"Step {step.id!r} did not run: {reason}.", perf_counter_ns())


def _output(pipeline: Stages, result: ToolResult) -> Any:
    """A step's output as a later step takes it: as sealed, or read back from the artifact its budget moved it to."""
    if result.output is not None or not result.artifacts:
        return result.output
    store = pipeline.boundary.store
    for ref in result.artifacts:
        if store is not None and ref.media_type == "application/json" and ref.metadata.get("call_id") == result.call_id:
            try:
                return msgspec.json.decode(store.get(ref.key))
            except (KeyError, ValueError):
                return _MISSING
    return _MISSING


def _alone(group: list[Step]) -> set[str]:
    """The steps of a group that no other step of it could run beside: each of the others is before or after it.

    Another step runs before it when it refers to it, directly or not, and after it when it
    refers to it in turn; a step of which that holds for every other step of its group never has
    company. Sets of step numbers are bits of an int, so a long chain costs linear time.
    """
    index = {step.id: number for number, step in enumerate(group)}
    before = [0] * len(group)
    for number, step in enumerate(group):
        for source in step.depends:
            if source in index:
                before[number] |= before[index[source]] | (1 << index[source])
    after = [0] * len(group)
    for number in reversed(range(len(group))):
        for source in group[number].depends:
            if source in index:
                after[index[source]] |= after[number] | (1 << number)
    everyone = (1 << len(group)) - 1
    return {step.id for number, step in enumerate(group) if before[number] | after[number] | (1 << number) == everyone}


def _groups(steps: list[Step]) -> list[list[Step]]:
    """The steps in turns: consecutive parallel-safe steps together, each serial step alone."""
    groups: list[list[Step]] = []
    together: list[Step] = []
    for step in steps:
        if step.tool.parallel_safe:
            together.append(step)
            continue
        if together:
            groups.append(together)
            together = []
        groups.append([step])
    if together:
        groups.append(together)
    return groups


def _ended(result: ToolResult) -> str:
    if result.status == "pending":
        return "is pending"
    if result.status == "outcome_unknown":
        return "may have acted, but its outcome is unknown"
    code = result.error.code if result.error is not None else "failed"
    return "did not run" if code == "not_run" else f"failed ({code})"


_MISSING = object()


def _at(value: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or `_MISSING`."""
    if not pointer:
        return value
    for token in pointer[1:].split("/"):
        token = unescape(token)
        if value.__class__ is dict:
            if token not in value:
                return _MISSING
            value = value[token]
        elif value.__class__ is list:
            if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) >= len(value):
                return _MISSING
            value = value[int(token)]
        else:
            return _MISSING
    return value


def _read(checked: Checked, results: list[ToolResult], limit: int | None) -> str:
    """What the model reads of a plan: each step's id and status (and error), the outputs it returns.

    Within ``limit`` bytes where it can be: the largest returned outputs give way to a note first,
    then the succeeded steps to their count (the application has them all, in the plan's output).
    """
    shown: list[dict[str, Any]] = []
    for step, result in zip(checked.steps, results, strict=True):
        entry: dict[str, Any] = {"id": step.id, "status": result.status}
        if result.error is not None:
            entry["error"] = result.error.message
        elif result.pending is not None:
            entry["pending"] = result.pending.request.message
        shown.append(entry)
    returned: dict[str, Any] = {}
    by_id = {step.id: result for step, result in zip(checked.steps, results, strict=True)}
    for step_id in checked.returns:
        result = by_id[step_id]
        if result.status == "succeeded":
            structured = result.structured()
            returned[step_id] = structured if structured is not None else result.text()
    read: dict[str, Any] = {"steps": shown, "return": returned}
    text = msgspec.json.encode(read)
    if limit is None or len(text) <= limit:
        return text.decode()
    sizes = sorted(((len(msgspec.json.encode(value)), key) for key, value in returned.items()), reverse=True)
    for size, key in sizes:
        returned[key] = f"[{size} bytes: more than this result may hold; the application has it]"
        text = msgspec.json.encode(read)
        if len(text) <= limit:
            return text.decode()
    read["steps"] = [entry for entry in shown if entry["status"] != "succeeded"]
    read["succeeded"] = len(shown) - len(read["steps"])
    return msgspec.json.encode(read).decode()  # still too long: the boundary stores or refuses it


def plan_steps(result: ToolResult) -> dict[str, ToolResult]:
    """Every step's `ToolResult` of a plan tool's result, by step id, in plan order (empty if it ran none).

    The model read only each step's status and the outputs the plan returned; the application
    reads them all here. Each step's result is as its own call ended: sealed at the boundary.
    """
    output = result.output
    if not isinstance(output, dict) or not isinstance(output.get("steps"), dict):
        return {}
    return {step_id: msgspec.convert(value, ToolResult) for step_id, value in output["steps"].items()}


publish("tinytools", plan_steps)
