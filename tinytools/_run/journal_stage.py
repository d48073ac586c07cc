"""The journal stage: every call claimed before it runs, and its end recorded.

A call is its run and its call id. With a journal, every call is claimed before policy and
execution (`JournalStage.claim`) under the key of its run and call id. A call already journaled is
answered from its entry and never runs again (the same call id sent with other content is
``duplicate_call_id``, compared as the tool receives the arguments, not as they were spelled); a
call another live worker is running is waited for; a call whose worker died is reconciled
(``@tool(reconcile=fn)``), run again (idempotent tools) or ended ``outcome_unknown``. Every call's
end is recorded (`JournalStage.record`): a pending call's record, or the final result. The act a
tool may declare is claimed later, just before it runs (`tinytools._run.acts`).

A pending call (an approver's `Approval.defer`, an external tool, `NeedsInput`, a background
task) is parked in the journal (in memory when the dispatcher has none, where calls of tools
that outlive their turn or declare their act are remembered too) and named by a signed handle
(`tinytools._run.handles`). Every change of an entry is a compare-and-set on its step, so two
workers resuming, expiring or cancelling the same call make one change between them: each call
id ends in exactly one final result.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._errors import SchemaError
from tinytools._results import ToolCall, ToolResult
from tinytools._run.acts import Acts
from tinytools._run.background import BackgroundTasks
from tinytools._run.entries import Entries, Parked
from tinytools._run.failures import as_unknown, failed
from tinytools._run.handles import Handles, signing_key
from tinytools._run.journals import (
    LEASE_SECONDS,
    AsyncJournal,
    Journal,
    JournalEntry,
    JournalFaces,
    MemoryJournal,
    canonical,
    holds,
    this_owner,
)
from tinytools._run.leases import Leases
from tinytools._run.output_checks import finish
from tinytools._run.reading import call_arguments
from tinytools._run.result_cache import ResultCache
from tinytools._run.secrets import Secrets
from tinytools._run.tracing import traceparent_of

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._run.boundary import Boundary
    from tinytools._run.call_state import CallState
    from tinytools._run.plans import Plan, Read
    from tinytools._tool import Tool

__all__ = ["NOT_RUN", "JournalStage"]


class _NotRun:
    def __repr__(self) -> str:
        return "NOT_RUN"


NOT_RUN: Any = _NotRun()
"""What a ``reconcile`` function returns when the call it was asked about never happened."""


class JournalStage:
    """One dispatcher's journal stage (see the module)."""

    def __init__(
        self,
        journal: Journal | None,
        key: bytes | str | None,
        ttl: float,
        run_id: str,
        token: CancellationToken,
        boundary: Boundary,
        lease_seconds: float | None = None,
    ):
        self.journal = journal
        """The application's journal, or None (pending calls are then kept in memory)."""
        self.store: Journal = journal if journal is not None else MemoryJournal()
        self.faces = JournalFaces(self.store)
        """The store as the pipeline awaits it: its async face on async entry points, where it has one."""
        self.ttl = ttl
        self.run_id = run_id
        self._run = run_id.encode()
        self.token = token
        self.boundary = boundary
        """Scrubs the arguments an inbox shows."""
        self.owner = this_owner()
        self.leases = Leases(self.store, self.owner, LEASE_SECONDS if lease_seconds is None else lease_seconds)
        """The leases this process holds on the calls it runs (`tinytools._run.leases`)."""
        self.remember = True
        """Whether, without a journal, calls that outlive their turn are remembered (not for a toolbox's
        default dispatcher, which serves unrelated one-line calls)."""
        self.handles = Handles(signing_key(key))
        """Names pending calls (`tinytools._run.handles`)."""
        self.entries = Entries(self.handles)
        """Reads what entries say (`tinytools._run.entries`)."""
        self.cache = ResultCache(self.faces if journal is not None else None)
        """Read-only tools' reused results (`tinytools._run.result_cache`)."""
        self.tasks = BackgroundTasks(self.record)
        """Background calls running in this process (`tinytools._run.background`)."""
        self.acts = Acts(self)
        """The calls' declared acts (`tinytools._run.acts`)."""

    def hold(self, key: str, step: int) -> None:
        """Renew this process's lease on an entry it runs while it stays at ``step`` (a real journal's only)."""
        if self.journal is not None:
            self.leases.hold(key, step)

    def call_key(self, call_id: str) -> str:
        """The key of a call by its identity: its run and its call id (stable across re-sends)."""
        return hashlib.sha256(b"call\0%b\0%b" % (self._run, call_id.encode("utf-8", "surrogatepass"))).hexdigest()[:40]

    def wait_bound(self, tool: Tool[..., Any]) -> float:
        """How long a call waits for another live worker making the same call (or act)."""
        if tool.timeout is None:
            return 600.0
        return float(tool.timeout) * (1 + tool.retries) + 30.0

    async def claim(self, state: CallState, read: Read) -> ToolResult | None:
        """Claim the call before it runs; None to run it, else its answer from the journal.

        A call is its run and its call id: the same id again is answered from its entry (or
        refused as ``duplicate_call_id`` when its content differs), another id is another call
        (the act a tool may declare is claimed later, just before it runs: `tinytools._run.acts`).
        """
        plan, call = state.plan, state.call
        state.key = self.call_key(call.id)
        if self.journal is None and not (self.remember and _remembered(plan)):
            return None  # no journal: the key is for the tool, nothing is recorded
        mine = JournalEntry(
            key=state.key or "", run_id=self.run_id, call_id=call.id, tool=plan.name,
            arguments=canonical(state.arguments), owner=self.owner, lease=self.leases.until(),
        )  # fmt: skip
        waited_until = time.monotonic() + self.wait_bound(plan.tool)
        io = self.faces.on(state.scope.driver.asynchronous)
        while True:
            found = await io.claim(mine)
            if found is None:
                state.step = 0
                self.hold(mine.key, 0)
                return None
            if found.call_id == call.id and found.run_id == self.run_id and not _same_call(state, read, found, mine):
                message = f"Call id {call.id!r} was already used for another call in this run."
                return failed(call, plan.name, "duplicate_call_id", message, state.start)
            answer = await self._existing(state, io, found, waited_until)
            if answer is not _AGAIN:
                state.answered = answer is not None  # an answer from the journal was sealed when it was made
                return answer  # type: ignore[return-value]

    async def _existing(
        self, state: CallState, io: AsyncJournal, entry: JournalEntry, waited_until: float
    ) -> ToolResult | object:
        """A call found in the journal: answered from it, waited for, recovered, or claimed afresh."""
        call, driver = state.call, state.scope.driver
        delay = 0.002
        while entry.state == "started" and holds(entry):
            if self.token.cancelled or time.monotonic() > waited_until:
                message = f"Tool {entry.tool!r} is still running this call in another worker; its outcome is unknown."
                return as_unknown(failed(call, entry.tool, "in_progress", message, state.start))
            await driver.pause(delay, self.token)
            delay = min(delay * 2, 0.05)
            again = await io.get(entry.key)
            if again is None:
                return _AGAIN
            entry = again
        if entry.state == "done":
            return self.entries.stored(entry, call.id)
        if entry.state == "pending":
            return self.entries.pending_result(entry, call.id)
        return await self._recover(state, io, entry)

    async def _recover(self, state: CallState, io: AsyncJournal, entry: JournalEntry) -> ToolResult | object:
        """A call whose worker died mid-call: ask ``reconcile``, run it again if idempotent, or unknown."""
        tool, call = state.plan.tool, state.call
        reconcile = tool.options.reconcile
        outcome: Any = NOT_RUN if tool.idempotent and reconcile is None else None
        if reconcile is not None:
            try:
                outcome = reconcile(self.entries.arguments(entry), entry.key)
                if isinstance(outcome, Awaitable):
                    outcome = await state.scope.driver.wait_for(outcome)
            except Exception as exc:
                message = f"Tool {tool.name!r} stopped mid-call in a worker that died, and reconciling it failed."
                result = as_unknown(failed(call, tool.name, "outcome_unknown", message, state.start))
                logging.getLogger("tinytools.journal").error("reconcile of %r failed: %r", tool.name, exc)
                return await self._end_at(io, entry, result, call.id)
        if outcome is NOT_RUN:
            if not await io.advance(entry.key, entry.step, owner=self.owner, lease=self.leases.until()):
                return _AGAIN
            state.step = entry.step + 1
            self.hold(entry.key, state.step)
            return None
        if outcome is None and reconcile is None:
            message = f"Tool {tool.name!r} was running this call in a worker that stopped; it may have acted."
            result = as_unknown(failed(call, tool.name, "outcome_unknown", message, state.start))
        else:
            result = finish(call, tool, outcome, state.start, None, state.plan.encoder)
            secrets = Secrets.of(state.plan.secrets(state.scope.inject))
            result = self.boundary.seal(result, secrets, state.start)  # recorded as the model will read it
        return await self._end_at(io, entry, result, call.id)

    async def _end_at(
        self, io: AsyncJournal, entry: JournalEntry, result: ToolResult, call_id: str
    ) -> ToolResult | object:
        """End an entry at its step with ``result``; `_AGAIN` when another worker changed it first."""
        if not await io.advance(entry.key, entry.step, state="done", result=result.to_json(), pending=None, lease=0.0):
            return _AGAIN
        self.leases.drop(entry.key)
        return result if result.call_id == call_id else msgspec.structs.replace(result, call_id=call_id)

    async def record(self, state: CallState, result: ToolResult) -> ToolResult:
        """The call's end in the journal: park a pending result, or store the final one.

        Returns what the call ends in: another worker may have ended it first (an expiry, a
        cancellation), and then that is its one final result.
        """
        io = self.faces.on(state.scope.driver.asynchronous)
        await self.acts.record(state, io, result)
        if result.status == "pending":
            return await self.park(state, io, result)
        if state.step is None:
            return result
        self.leases.drop(state.key or "")
        if await io.advance(
            state.key or "", state.step, state="done", result=result.to_json(), pending=None, lease=0.0
        ):
            state.step += 1
            return result
        current = await io.get(state.key or "")
        if current is not None and current.state == "done":
            state.superseded = True  # an expiry or a cancellation ended it first, and told its sink
            return self.entries.stored(current, state.call.id)
        return result

    async def park(self, state: CallState, io: AsyncJournal, result: ToolResult) -> ToolResult:
        """Record a call that waits: its request, its expiry, and what resuming needs."""
        assert result.pending is not None
        request = result.pending.request
        if request.schema is not None:
            try:
                self.entries.checker(request.schema)
            except SchemaError as exc:
                message = f"Tool {state.plan.name!r} asked for an answer whose schema cannot be enforced."
                logging.getLogger("tinytools.journal").error("%s (%s)", message, exc)
                return await self.record(state, failed(state.call, state.plan.name, "tool_error", message, state.start))
        expires_at = result.pending.expires_at or time.time() + self.ttl
        now = call_arguments(state.call)  # an approver's edit included
        shown = self.boundary.shown(now, state.secrets)
        parked = Parked(
            result.pending.kind, request.message, request.schema, expires_at, state.answers or [], now, shown,
            traceparent_of(state.span), state.asked_state, request.name,
        )  # fmt: skip
        encoded = msgspec.json.encode(parked)
        if state.step is None:  # no journal: parked in memory, under a key of its own
            entry = JournalEntry(
                key=state.key or self.call_key(state.call.id), run_id=self.run_id, call_id=state.call.id,
                tool=state.plan.name,
                arguments=canonical(call_arguments(state.call) if state.arguments is None else state.arguments),
                state="pending", owner=self.owner, pending=encoded,
            )  # fmt: skip
            known = await io.claim(entry)
            if known is not None:  # the same call id waited before in this run: that is its one outcome
                return (
                    self.entries.stored(known, state.call.id)
                    if known.state == "done"
                    else self.entries.pending_result(known, state.call.id)
                )
            state.key, state.step = entry.key, 0
            return self.entries.pending_result(entry, state.call.id)
        runs = result.pending.kind == "task"  # a background call runs on in this process: its lease is renewed
        self.leases.drop(state.key or "")
        lease = self.leases.until() if runs else 0.0
        if not await io.advance(state.key or "", state.step, state="pending", pending=encoded, lease=lease):
            current = await io.get(state.key or "")
            assert current is not None
            return self.entries.stored(current, state.call.id) if current.state == "done" else result
        state.step += 1
        if runs:
            self.hold(state.key or "", state.step)
        moved = JournalEntry(
            key=state.key or "", run_id=self.run_id, call_id=state.call.id, tool=state.plan.name,
            arguments=b"", state="pending", step=state.step, pending=encoded,
        )  # fmt: skip
        return self.entries.pending_result(moved, state.call.id)

    async def interrupted(self, state: CallState) -> None:
        """A claimed call an exception cut short, while its entry still says it runs.

        A call whose tool never started is forgotten (sent again, it runs) or, resumed from
        pending, waits again under the same handle; one whose tool started may have acted:
        ``outcome_unknown``.
        """
        io = self.faces.on(state.scope.driver.asynchronous)
        if not state.acted:
            await self.acts.record(state, io, _NOT_ACTED)
        self.leases.drop(state.key or "")
        current = await io.get(state.key or "")
        if current is None or current.state != "started" or current.step != state.step:
            return  # it ended, or moved on, before the exception
        waited = state.waited
        if state.acted:
            message = f"Tool {state.plan.name!r} was interrupted mid-call; it may have acted."
            unknown = as_unknown(failed(state.call, state.plan.name, "outcome_unknown", message, state.start))
            await self.record(state, unknown)
        elif waited is not None:
            await io.advance(
                current.key, current.step, state="pending", owner=waited.owner, pending=waited.pending, lease=0.0
            )
        else:
            await io.release(current.key, current.step)

    async def record_entry(self, io: AsyncJournal, entry: JournalEntry, result: ToolResult) -> ToolResult | None:
        """End an entry at its step with ``result``: the one final result, whoever recorded it.

        None when another worker moved the entry on and has not ended it (it resumed the call).
        """
        ended = await self._end_at(io, entry, result, entry.call_id)
        if ended is _AGAIN:
            current = await io.get(entry.key)
            return (
                self.entries.stored(current, entry.call_id) if current is not None and current.state == "done" else None
            )
        return ended  # type: ignore[return-value]

    async def ended(
        self, io: AsyncJournal, entry: JournalEntry, tool: Tool[..., Any] | None, why: str
    ) -> ToolResult | None:
        """The final result of a pending call that expired or was cancelled, recorded once.

        None when another worker resumed it first: it is no longer waiting, and ends as it runs.

        An approval never started: ``cancelled``. Anything else may have acted: ``outcome_unknown``,
        unless the tool is idempotent.
        """
        parked = self.entries.parked(entry)
        call = ToolCall(entry.call_id, entry.tool, {})
        start = perf_counter_ns()
        code = "cancelled" if why == "cancelled" else "expired"
        done = "was cancelled" if why == "cancelled" else "expired"
        if parked.kind == "approval":
            result = failed(call, entry.tool, code, f"The call waited for approval and {done}; it was not made.", start)
        else:
            result = failed(call, entry.tool, code, f"The pending call {done}; it may have acted.", start)
            if tool is None or not tool.idempotent:
                result = as_unknown(result)
        return await self.record_entry(io, entry, result)


_AGAIN = object()
_NOT_ACTED = ToolResult(call_id="-", name="-", status="outcome_unknown")
"""What an act is given back with when its call stopped before the tool started."""


def _remembered(plan: Plan) -> bool:
    """Whether a dispatcher without a journal still remembers a tool's calls (in memory, for its run).

    A call that may outlive its turn (an external or background tool's, one asking the user, one
    an approver may defer) or that names an act: sent again, it is answered, never made twice.
    """
    options = plan.tool.options
    if options.external or options.background or options.idempotency_key is not None:
        return True
    return plan.approval is not None or "ask" in plan.tool.wants


def _same_call(state: CallState, read: Read, found: JournalEntry, mine: JournalEntry) -> bool:
    """Whether a journaled entry of this call id holds this very call: the same tool and content.

    Content is compared as the tool receives it (converted, defaults in place) and written as
    canonical JSON, not as the model spelled it: ``100`` and ``100.0`` for a float are one
    value, ``1`` and ``true`` for an untyped argument are two.
    """
    if found.tool != mine.tool:
        return False
    if found.arguments == mine.arguments:
        return True
    plan = state.plan
    try:
        earlier = plan.normalised(None, msgspec.json.decode(found.arguments))
        now = plan.normalised(read, state.arguments)
        return _written(plan, earlier) == _written(plan, now)
    except Exception:  # not this tool's arguments any more, or not writable: another call
        return False


def _written(plan: Plan, values: dict[str, Any]) -> bytes:
    return canonical(plan.encoder.to_builtins(values))
