"""Declared acts: calls of a run that name the same act (``@tool(idempotency_key=fn)``) act once.

A tool whose domain says what "the same act" is (a payment for an order) declares it with a
function of the validated, converted arguments. Every call is still a call of its own, with its
own journal entry and its own final result. Just before such a tool would run (after policy and
approval, on the final arguments: an approver's edit included), the call claims its act, an entry
of its own keyed by the run, the tool and the declared key. The first call to claim it runs the
tool and records what the act came to; a later call of the same act, under another call id, is
answered with that (under its own id) and never runs the tool; one that arrives while the act
runs waits for it. A call that ends without its tool having acted (it asked the user first, its
arguments failed to bind, it was cut short before it started) gives the act back, so a later call
may make it. A function that returns None names no act: the call is an act of its own.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import TYPE_CHECKING, Any, Protocol

from tinytools._errors import ArgumentsError, kept
from tinytools._results import ToolResult
from tinytools._run.failures import failed, tool_failure
from tinytools._run.journals import AsyncJournal, Journal, JournalEntry, JournalFaces, canonical, holds
from tinytools._run.reading import started_arguments

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._run.call_state import CallState
    from tinytools._run.entries import Entries
    from tinytools._run.leases import Leases
    from tinytools._run.plans import Read
    from tinytools._tool import Tool

__all__ = ["Acts"]


class _Stage(Protocol):
    """What acts need of the journal stage that keeps them."""

    journal: Journal | None
    faces: JournalFaces
    remember: bool
    run_id: str
    owner: str
    token: CancellationToken
    entries: Entries
    leases: Leases

    def wait_bound(self, tool: Tool[..., Any]) -> float: ...

    def hold(self, key: str, step: int) -> None: ...


class Acts:
    """One dispatcher's declared acts, kept in its journal (in memory without one)."""

    def __init__(self, stage: _Stage):
        self.stage = stage

    def key(self, state: CallState, read: Read) -> str | ToolResult | None:
        """The key of the act the call names, None when it names none, or the call's failure."""
        tool = state.plan.tool
        declared = tool.options.idempotency_key
        if declared is None:
            return None
        try:
            value = declared(state.plan.normalised(read, started_arguments(read, state.call)))
        except ArgumentsError as exc:
            return state.plan.invalid(state.call, kept(exc), state.start)
        except Exception as exc:  # the application's function failed: the call cannot be made safely
            return tool_failure(state.call, tool.name, exc, state.start)
        if value is None:
            return None
        if isinstance(value, float) and not math.isfinite(value):
            message = f"Tool {tool.name!r} could not name this call's act (its idempotency_key gave {value!r})."
            return failed(state.call, tool.name, "tool_error", message, state.start)
        try:
            written = canonical(value)
        except Exception as exc:
            return tool_failure(state.call, tool.name, exc, state.start)
        run, name = self.stage.run_id.encode(), tool.name.encode()
        return hashlib.sha256(b"act\0%b\0%b\0%b" % (run, name, written)).hexdigest()[:40]

    async def claim(self, state: CallState, read: Read) -> ToolResult | None:
        """Claim the call's act before its tool runs: None to run it, else what the act came to."""
        key = self.key(state, read)
        if key is None or key.__class__ is not str:
            return key  # type: ignore[return-value]
        stage, plan = self.stage, state.plan
        state.act = key
        if stage.journal is None and not stage.remember:
            return None  # a toolbox's default dispatcher: one-line calls of no run, each its own act
        mine = JournalEntry(
            key=key, run_id=stage.run_id, call_id=f"act:{key}", tool=plan.name,
            arguments=canonical(started_arguments(read, state.call)), owner=stage.owner, lease=stage.leases.until(),
        )  # fmt: skip
        waited_until = time.monotonic() + stage.wait_bound(plan.tool)
        delay = 0.002
        io = stage.faces.on(state.scope.driver.asynchronous)
        while True:
            found = await io.claim(mine)
            if found is None:
                state.act_step = 0
                stage.hold(key, 0)
                return None
            if found.state == "done":
                state.answered = True  # recorded as the model reads it
                return stage.entries.stored(found, state.call.id)
            if not holds(found):
                return await self._orphan(state, io, found)
            if stage.token.cancelled or time.monotonic() > waited_until:
                message = f"Tool {plan.name!r} is still making this act in another call; its outcome is unknown."
                result = failed(state.call, plan.name, "in_progress", message, state.start)
                result.status = "outcome_unknown"
                return result
            await state.scope.driver.pause(delay, stage.token)
            delay = min(delay * 2, 0.05)

    async def _orphan(self, state: CallState, io: AsyncJournal, found: JournalEntry) -> ToolResult | None:
        """An act whose worker died while making it: taken over by an idempotent tool, else unknown."""
        stage, plan = self.stage, state.plan
        if plan.tool.idempotent and await io.advance(
            found.key, found.step, owner=stage.owner, lease=stage.leases.until()
        ):
            state.act_step = found.step + 1
            stage.hold(found.key, state.act_step)
            return None
        message = f"Tool {plan.name!r} was making this act in a worker that stopped; it may have acted."
        result = failed(state.call, plan.name, "outcome_unknown", message, state.start)
        result.status = "outcome_unknown"
        return result

    async def record(self, state: CallState, io: AsyncJournal, result: ToolResult) -> None:
        """The call that claimed its act ended: the act's outcome recorded, or the act given back."""
        step = state.act_step
        if step is None or state.act is None:
            return
        state.act_step = None
        self.stage.leases.drop(state.act)
        if result.status == "pending" or not state.acted:  # nothing was done: another call may do it
            await io.release(state.act, step)
        else:
            await io.advance(state.act, step, state="done", result=result.to_json())
