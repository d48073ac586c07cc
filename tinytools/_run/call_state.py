"""The records of one call inside the pipeline: what its entry point brought, and where it stands.

`Scope` is what an entry point brings (injected values, the allowlist, its step, its driver);
`CallState` is one admitted call on its way through the stages: what each stage learnt of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tinytools._events import ToolEvent
from tinytools._results import ToolCall, ToolResult
from tinytools._run.plans import Plan

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._run.drivers import Driver
    from tinytools._run.gate import Gate
    from tinytools._run.jobs import Channel
    from tinytools._run.journals import JournalEntry
    from tinytools._run.secrets import Secrets
    from tinytools._run.stream_boundary import StreamBoundary

__all__ = ["CallState", "Scope"]


class Scope:
    """What one entry point's call (or batch) brings: injected values, the allowlist, its step, its driver."""

    __slots__ = ("_step", "_step_id", "allowed", "driver", "gate", "inject", "planned")

    def __init__(
        self,
        driver: Driver,
        inject: Mapping[str, Any] | None,
        allowed: frozenset[str] | set[str] | None,
        step_id: str | None,
        step: int,
        gate: Gate | None = None,
    ):
        self.driver = driver
        self.inject = inject
        self.allowed = allowed
        self._step_id = step_id
        self._step = step
        self.gate = gate
        """Keeps a serial tool alone within a batch."""
        self.planned: dict[str, str] | None = None
        """The steps of a plan already checked whole, when its calls are those (`tinytools._run.call_plans`).

        Call id -> tool name. Such a call, to that tool, is read against the tool's canonical
        schema (in strict mode, the plan was read strictly, and restored, as a whole) and not put
        to the approver again (the plan was, if any step needs it). A call a middleware moved to
        another tool is read and approved as any call."""

    def is_step(self, call: ToolCall, name: str) -> bool:
        """Whether ``call``, to the tool ``name``, is one of the checked steps of the plan this scope runs."""
        planned = self.planned
        return planned is not None and planned.get(call.id) == name

    @property
    def step_id(self) -> str:
        """The step this call (or batch) belongs to: the one given, or ``step-N`` (made when asked for)."""
        return self._step_id if self._step_id is not None else f"step-{self._step}"


class CallState:
    """One admitted call on its way through the stages."""

    __slots__ = (
        "act",
        "act_step",
        "acted",
        "answered",
        "answered_by",
        "answers",
        "arguments",
        "asked_state",
        "attempts",
        "call",
        "channel",
        "checked_plan",
        "exception",
        "failure",
        "key",
        "pieces",
        "plan",
        "queued",
        "resumed",
        "scope",
        "secrets",
        "span",
        "start",
        "step",
        "superseded",
        "token",
        "waited",
    )

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
        self.pieces: StreamBoundary | None = None
        """The boundary of the pieces the call streamed to a sink, once it sent one."""
        self.failure: ToolResult | None = None
        """The tool's own failure, for the `ToolFailed` event."""
        self.exception: BaseException | None = None
        """The exception behind `failure`, for logs."""
        self.queued: list[ToolEvent] = []
        """Events a sync stage made, delivered first by `Pipeline.complete`."""
        self.key: str | None = None
        """The call's journal key (its run and call id), once the journal stage made it."""
        self.act: str | None = None
        """The key of the act the call's tool declares it makes, once claimed (`tinytools._run.acts`)."""
        self.act_step: int | None = None
        """The step of the act's entry while this call holds it."""
        self.step: int | None = None
        """The step of the call's journal entry, once it has one."""
        self.arguments: Any = None
        """The validated arguments the journal keeps (its key's input)."""
        self.answers: list[Any] | None = None
        """A resumed input call's answers so far (for its `Ask`)."""
        self.asked_state: str | None = None
        """What the tool kept with its question (`NeedsInput.state`): parked with it, and given back."""
        self.resumed = False
        """Whether the call was resumed from pending (it then runs, never waits again)."""
        self.waited: JournalEntry | None = None
        """A resumed call's entry as it waited: if the call stops before its tool starts, it waits again."""
        self.answered = False
        """Whether the journal answered the call: its result is already sealed."""
        self.acted = False
        """Whether the tool was started (what a call interrupted before then may do again)."""
        self.superseded = False
        """Whether another worker ended the call first (an expiry): its end was told already."""
        self.span: Any = None
        """The call's trace span, when the dispatcher traces (`tinytools._run.tracing`)."""
        self.attempts = 0
        """How many times the tool was started."""
        self.checked_plan: Any = None
        """A plan tool's call: its plan, once checked whole (`tinytools._run.call_plans.Checked`)."""
        self.answered_by: str | None = None
        """What answered the call instead of its tool: ``journal``, ``cache`` or ``act``."""
