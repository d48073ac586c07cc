"""Durable calls: the journal stage of the pipeline, pending calls and their signed handles.

A call is its run and its call id. With a journal, every call is claimed before policy and
execution (`Durable.claim`) under its key: by default one made from the run and the call id, or,
for a tool that declares what "the same act" is (``@tool(idempotency_key=fn)``), one made from the
run, the tool and ``fn`` of the validated, converted arguments. A call already journaled is
answered from its entry and never runs again (the same call id sent with other content is
``duplicate_call_id``, compared as the tool receives the arguments, not as they were spelled); a
call another live worker is running is waited for; a call whose worker died is reconciled
(``@tool(reconcile=fn)``), run again (idempotent tools) or ended ``outcome_unknown``. Every call's
end is recorded (`Durable.record`): a pending call's `Pending` record, or the final result.

A pending call (an approver's `Approval.defer`, an external tool, `NeedsInput`, a background
task) is parked in the journal (in memory when the dispatcher has none, where calls of tools
that outlive their turn or declare their act are remembered too) and named by a handle signed
with the dispatcher's key: ``<key>.<step>.<signature>``. A handle names one step of its entry;
once the entry moved on, the handle reads what the call is now. Every change of an entry is a
compare-and-set on its step, so two workers resuming, expiring or cancelling the same call make
one change between them: each call id ends in exactly one final result.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._errors import ArgumentsError, JournalError, PendingError, SchemaError
from tinytools._results import Pending, PendingCall, PendingKind, PendingRequest, ToolCall, ToolResult
from tinytools._run.acts import Acts
from tinytools._run.call_state import call_arguments
from tinytools._run.failures import failed
from tinytools._run.journals import Entry, Journal, MemoryJournal, owner_alive, this_owner
from tinytools._run.output_checks import finish
from tinytools._run.secrets import Secrets
from tinytools._schema.input_schema import compile_validator

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._run.boundary import Boundary
    from tinytools._run.call_state import Flight
    from tinytools._run.plans import Plan, Read
    from tinytools._tool import Tool

__all__ = ["APPROVAL_SCHEMA", "NOT_RUN", "Durable", "Parked", "canonical"]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}
"""The answer a deferred approval takes: ``{"approved": true}``, or false with a reason."""


class _NotRun:
    def __repr__(self) -> str:
        return "NOT_RUN"


NOT_RUN: Any = _NotRun()
"""What a ``reconcile`` function returns when the call it was asked about never happened."""

_ENCODE = msgspec.json.Encoder(order="sorted").encode
_RESULT = msgspec.json.Decoder(ToolResult).decode
_ARGUMENTS = msgspec.json.Decoder(dict[str, Any]).decode


def _decoded(decode: Callable[[bytes], Any], data: bytes | None, entry: Entry, what: str) -> Any:
    """One field of an entry, decoded; a field this dispatcher cannot read is the journal's fault.

    Raises:
        JournalError: The field is missing or is not what tinytools writes there.
    """
    try:
        return decode(data if data is not None else b"")
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise JournalError(
            f"the journal's entry for call {entry.call_id!r} of run {entry.run_id!r} holds a {what} "
            f"this version of tinytools cannot read ({exc})"
        ) from None


class Parked(msgspec.Struct):
    """What a pending entry keeps beside its arguments: the request, and what resuming needs."""

    kind: PendingKind
    message: str
    schema: dict[str, Any] | None
    expires_at: float
    answers: list[Any] = []
    """A call waiting for input: the answers given so far, in order."""
    arguments: Any = None
    """The call's arguments as they stand when it waits (an approver's edit included)."""
    shown: Any = None
    """The same arguments scrubbed of the call's secrets, as an inbox shows them."""


_PARKED = msgspec.json.Decoder(Parked).decode


def canonical(arguments: Any) -> bytes:
    """The arguments as canonical JSON: sorted keys, no spaces (the idempotency key's input)."""
    return _ENCODE(arguments)


class Durable:
    """One dispatcher's journal stage (see the module)."""

    def __init__(
        self,
        journal: Journal | None,
        signing_key: bytes | str | None,
        ttl: float,
        run_id: str,
        token: CancellationToken,
        boundary: Boundary,
    ):
        self.journal = journal
        """The application's journal, or None (pending calls are then kept in memory)."""
        self.store: Journal = journal if journal is not None else MemoryJournal()
        self.secret = _signing_key(signing_key)
        self.ttl = ttl
        self.run_id = run_id
        self._run = run_id.encode()
        self.token = token
        self.boundary = boundary
        """Scrubs the arguments an inbox shows."""
        self.owner = this_owner()
        self.tasks: dict[str, tuple[threading.Thread, Flight]] = {}
        """Background calls running in this process, by entry key."""
        self._checks: dict[str, Callable[[object], None]] = {}
        self.remember = True
        """Whether, without a journal, calls that outlive their turn are remembered (not for a toolbox's
        default dispatcher, which serves unrelated one-line calls)."""
        self.acts = Acts(self)
        """The calls' declared acts (`tinytools._run.acts`)."""

    # handles

    def handle(self, key: str, step: int) -> str:
        """The signed handle of an entry at one step."""
        body = f"{key}.{step}"
        return f"{body}.{self._sign(body)}"

    def _sign(self, body: str) -> str:
        digest = hmac.new(self.secret, body.encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(digest).decode()

    def read_handle(self, handle: object) -> tuple[str, int]:
        """The entry key and step a handle names.

        Raises:
            TypeError: ``handle`` is not text (a pending result's ``pending.handle``).
            PendingError: The handle is not one this dispatcher's key signed (``bad_handle``).
        """
        if not isinstance(handle, str):
            raise TypeError(f"handle must be a pending result's handle (text), not {type(handle).__name__}")
        parts = handle.rsplit(".", 2) if handle.isascii() else []  # every handle made here is ASCII
        if (
            len(parts) != 3
            or not parts[1].isdigit()
            or not hmac.compare_digest(self._sign(f"{parts[0]}.{parts[1]}"), parts[2])
        ):
            raise PendingError("the handle is not one this dispatcher's signing key made", code="bad_handle")
        return parts[0], int(parts[1])

    # keys

    def call_key(self, call_id: str) -> str:
        """The key of a call by its identity: its run and its call id (stable across re-sends)."""
        return hashlib.sha256(b"call\0%b\0%b" % (self._run, call_id.encode("utf-8", "surrogatepass"))).hexdigest()[:40]

    def canonical(self, value: Any) -> bytes:
        """A value as canonical JSON (sorted keys, no spaces): what keys and comparisons read."""
        return canonical(value)

    def wait_bound(self, tool: Tool[..., Any]) -> float:
        """How long a call waits for another live worker making the same call (or act)."""
        return _wait_bound(tool)

    # the journal stage

    async def claim(self, flight: Flight, read: Read) -> ToolResult | None:
        """Claim the call before it runs; None to run it, else its answer from the journal.

        A call is its run and its call id: the same id again is answered from its entry (or
        refused as ``duplicate_call_id`` when its content differs), another id is another call
        (the act a tool may declare is claimed later, just before it runs: `tinytools._run.acts`).
        """
        plan, call = flight.plan, flight.call
        flight.key = self.call_key(call.id)
        if self.journal is None and not (self.remember and _remembered(plan)):
            return None  # no journal: the key is for the tool, nothing is recorded
        mine = Entry(
            key=flight.key or "", run_id=self.run_id, call_id=call.id, tool=plan.name,
            arguments=canonical(flight.arguments), owner=self.owner,
        )  # fmt: skip
        waited_until = time.monotonic() + _wait_bound(plan.tool)
        while True:
            found = self.store.claim(mine)
            if found is None:
                flight.step = 0
                return None
            if found.call_id == call.id and found.run_id == self.run_id and not _same_call(flight, read, found, mine):
                message = f"Call id {call.id!r} was already used for another call in this run."
                return failed(call, plan.name, "duplicate_call_id", message, flight.start)
            answer = await self._existing(flight, found, waited_until)
            if answer is not _AGAIN:
                flight.answered = answer is not None  # an answer from the journal was sealed when it was made
                return answer  # type: ignore[return-value]

    async def _existing(self, flight: Flight, entry: Entry, waited_until: float) -> ToolResult | object:
        """A call found in the journal: answered from it, waited for, recovered, or claimed afresh."""
        call, driver = flight.call, flight.scope.driver
        delay = 0.002
        while entry.state == "started" and owner_alive(entry.owner):
            if self.token.cancelled or time.monotonic() > waited_until:
                message = f"Tool {entry.tool!r} is still running this call in another worker; its outcome is unknown."
                return _as_unknown(failed(call, entry.tool, "in_progress", message, flight.start))
            await driver.pause(delay, self.token)
            delay = min(delay * 2, 0.05)
            again = self.store.get(entry.key)
            if again is None:
                return _AGAIN
            entry = again
        if entry.state == "done":
            return self.stored(entry, call.id)
        if entry.state == "pending":
            return self.pending_result(entry, call.id)
        return await self._recover(flight, entry)

    async def _recover(self, flight: Flight, entry: Entry) -> ToolResult | object:
        """A call whose worker died mid-call: ask ``reconcile``, run it again if idempotent, or unknown."""
        tool, call = flight.plan.tool, flight.call
        reconcile = tool.durable.reconcile if tool.durable is not None else None
        outcome: Any = NOT_RUN if tool.idempotent and reconcile is None else None
        if reconcile is not None:
            try:
                outcome = reconcile(self.arguments(entry), entry.key)
                if isinstance(outcome, Awaitable):
                    outcome = await flight.scope.driver.settle(outcome)
            except Exception as exc:
                message = f"Tool {tool.name!r} stopped mid-call in a worker that died, and reconciling it failed."
                result = _as_unknown(failed(call, tool.name, "outcome_unknown", message, flight.start))
                logging.getLogger("tinytools.journal").error("reconcile of %r failed: %r", tool.name, exc)
                return self._settled(entry, result, call.id)
        if outcome is NOT_RUN:
            if not self.store.advance(entry.key, entry.step, owner=self.owner):
                return _AGAIN
            flight.step = entry.step + 1
            return None
        if outcome is None and reconcile is None:
            message = f"Tool {tool.name!r} was running this call in a worker that stopped; it may have acted."
            result = _as_unknown(failed(call, tool.name, "outcome_unknown", message, flight.start))
        else:
            result = finish(call, tool, outcome, flight.start, None, flight.plan.encoder)
            secrets = Secrets.of(flight.plan.secrets(flight.scope.inject))
            result = self.boundary.seal(result, secrets, flight.start)  # recorded as the model will read it
        return self._settled(entry, result, call.id)

    def _settled(self, entry: Entry, result: ToolResult, call_id: str) -> ToolResult | object:
        if not self.store.advance(entry.key, entry.step, state="done", result=result.to_json(), pending=None):
            return _AGAIN
        return result if result.call_id == call_id else msgspec.structs.replace(result, call_id=call_id)

    def record(self, flight: Flight, result: ToolResult) -> ToolResult:
        """The call's end in the journal: park a pending result, or store the final one.

        Returns what the call ends in: another worker may have ended it first (an expiry, a
        cancellation), and then that is its one final result.
        """
        self.acts.record(flight, result)
        if result.status == "pending":
            return self.park(flight, result)
        if flight.step is None:
            return result
        if self.store.advance(flight.key or "", flight.step, state="done", result=result.to_json(), pending=None):
            flight.step += 1
            return result
        current = self.store.get(flight.key or "")
        if current is not None and current.state == "done":
            flight.superseded = True  # an expiry or a cancellation ended it first, and told its sink
            return self.stored(current, flight.call.id)
        return result

    def park(self, flight: Flight, result: ToolResult) -> ToolResult:
        """Record a call that waits: its request, its expiry, and what resuming needs."""
        assert result.pending is not None
        request = result.pending.request
        if request.schema is not None:
            try:
                self.checker(request.schema)
            except SchemaError as exc:
                message = f"Tool {flight.plan.name!r} asked for an answer whose schema cannot be enforced."
                logging.getLogger("tinytools.journal").error("%s (%s)", message, exc)
                return self.record(flight, failed(flight.call, flight.plan.name, "tool_error", message, flight.start))
        expires_at = result.pending.expires_at or time.time() + self.ttl
        now = call_arguments(flight.call)  # an approver's edit included
        shown = self.boundary.shown(now, flight.secrets)
        parked = Parked(
            result.pending.kind, request.message, request.schema, expires_at, flight.answers or [], now, shown
        )
        encoded = msgspec.json.encode(parked)
        if flight.step is None:  # no journal: parked in memory, under a key of its own
            entry = Entry(
                key=flight.key or self.call_key(flight.call.id), run_id=self.run_id, call_id=flight.call.id,
                tool=flight.plan.name,
                arguments=canonical(call_arguments(flight.call) if flight.arguments is None else flight.arguments),
                state="pending", owner=self.owner, pending=encoded,
            )  # fmt: skip
            known = self.store.claim(entry)
            if known is not None:  # the same call id waited before in this run: that is its one outcome
                return (
                    self.stored(known, flight.call.id)
                    if known.state == "done"
                    else self.pending_result(known, flight.call.id)
                )
            flight.key, flight.step = entry.key, 0
            return self.pending_result(entry, flight.call.id)
        if not self.store.advance(flight.key or "", flight.step, state="pending", pending=encoded):
            current = self.store.get(flight.key or "")
            assert current is not None
            return self.stored(current, flight.call.id) if current.state == "done" else result
        flight.step += 1
        moved = Entry(
            key=flight.key or "", run_id=self.run_id, call_id=flight.call.id, tool=flight.plan.name,
            arguments=b"", state="pending", step=flight.step, pending=encoded,
        )  # fmt: skip
        return self.pending_result(moved, flight.call.id)

    # reused results

    def _cache_key(self, tool: Tool[..., Any], arguments: Any) -> str:
        prefix = _CACHE_PREFIXES.get(tool)
        if prefix is None:  # once per tool: which function's results these are
            fn = tool.fn
            where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
            local = "<locals>" in where or getattr(fn, "__closure__", None) or getattr(fn, "__self__", None) is not None
            if local or not hasattr(fn, "__qualname__"):
                where += f"@{os.urandom(12).hex()}"  # made by a factory: its results are this tool's own
            prefix = _CACHE_PREFIXES[tool] = f"{tool.name}\0{where}\0".encode()
        return hashlib.sha256(prefix + canonical(arguments)).hexdigest()

    def reused(self, flight: Flight) -> ToolResult | None:
        """A read-only tool's stored result for the same arguments, if one has not expired."""
        stored = (self.journal or _PROCESS_CACHE).cached(
            self._cache_key(flight.plan.tool, flight.arguments), time.time()
        )
        if stored is None:
            return None
        try:
            result = _RESULT(stored)
        except (msgspec.DecodeError, msgspec.ValidationError):  # unreadable: as if nothing were kept
            return None
        return msgspec.structs.replace(result, call_id=flight.call.id, elapsed=perf_counter_ns() - flight.start)

    def keep(self, flight: Flight, result: ToolResult) -> None:
        """Store a read-only tool's succeeded result for its ``cache_ttl``."""
        durable = flight.plan.tool.durable
        if result.status != "succeeded" or durable is None or durable.cache_ttl is None:
            return
        key = self._cache_key(flight.plan.tool, flight.arguments)
        (self.journal or _PROCESS_CACHE).cache(key, result.to_json(), time.time() + durable.cache_ttl)

    def interrupted(self, flight: Flight) -> None:
        """A claimed call an exception cut short, while its entry still says it runs.

        A call whose tool never started is forgotten (sent again, it runs) or, resumed from
        pending, waits again under the same handle; one whose tool started may have acted:
        ``outcome_unknown``.
        """
        if not flight.acted:
            self.acts.record(flight, _NOT_ACTED)
        current = self.store.get(flight.key or "")
        if current is None or current.state != "started" or current.step != flight.step:
            return  # it ended, or moved on, before the exception
        waited = flight.waited
        if flight.acted:
            message = f"Tool {flight.plan.name!r} was interrupted mid-call; it may have acted."
            unknown = _as_unknown(failed(flight.call, flight.plan.name, "outcome_unknown", message, flight.start))
            self.record(flight, unknown)
        elif waited is not None:
            self.store.advance(current.key, current.step, state="pending", owner=waited.owner, pending=waited.pending)
        else:
            self.store.release(current.key, current.step)

    def run_task(self, flight: Flight, run: Callable[[], Any]) -> None:
        """Run a parked background call to its end on a daemon thread of its own."""
        key = flight.key or ""

        def task() -> None:
            try:
                run()
            except BaseException as exc:  # the application's configuration: the call still ends, once
                logging.getLogger("tinytools.journal").exception("background call %s failed", key)
                self.record(flight, _stopped(flight, exc))
            finally:
                self.tasks.pop(key, None)

        thread = threading.Thread(target=task, name=f"tinytools-task-{key[:8]}", daemon=True)
        self.tasks[key] = (thread, flight)
        thread.start()

    # what an entry says

    def pending_result(self, entry: Entry, call_id: str) -> ToolResult:
        """The pending result of a parked entry, with the handle of its current step."""
        parked = self.parked(entry)
        request = PendingRequest(parked.message, parked.schema)
        pending = Pending(self.handle(entry.key, entry.step), parked.kind, request, parked.expires_at)
        return ToolResult(call_id=call_id, name=entry.tool, status="pending", pending=pending)

    def running_result(self, entry: Entry) -> ToolResult:
        """The pending result of a call that was resumed and runs: a task, until it ends."""
        parked = self.parked(entry)
        request = PendingRequest("The call is running; poll again for its result.")
        pending = Pending(self.handle(entry.key, entry.step), "task", request, parked.expires_at)
        return ToolResult(call_id=entry.call_id, name=entry.tool, status="pending", pending=pending)

    def arguments(self, entry: Entry) -> dict[str, Any]:
        """The validated arguments an entry keeps.

        Raises:
            JournalError: They cannot be read by this version of tinytools.
        """
        read: dict[str, Any] = _decoded(_ARGUMENTS, entry.arguments, entry, "set of arguments")
        return read

    def listed(self, entry: Entry) -> PendingCall:
        """A waiting entry as an inbox shows it: its call, scrubbed arguments, request and handle.

        Raises:
            JournalError: The entry cannot be read by this version of tinytools.
        """
        parked = self.parked(entry)
        pending = self.pending_result(entry, entry.call_id).pending
        assert pending is not None
        return PendingCall(entry.call_id, entry.run_id, entry.tool, parked.shown, pending)

    def stored(self, entry: Entry, call_id: str) -> ToolResult:
        """An ended entry's final result, as the answer to the call ``call_id``."""
        result: ToolResult = _decoded(_RESULT, entry.result, entry, "final result")
        return result if result.call_id == call_id else msgspec.structs.replace(result, call_id=call_id)

    def record_entry(self, entry: Entry, result: ToolResult) -> ToolResult | None:
        """End an entry at its step with ``result``: the one final result, whoever recorded it.

        None when another worker moved the entry on and has not ended it (it resumed the call).
        """
        settled = self._settled(entry, result, entry.call_id)
        if settled is _AGAIN:
            current = self.store.get(entry.key)
            return self.stored(current, entry.call_id) if current is not None and current.state == "done" else None
        return settled  # type: ignore[return-value]

    def stop_task(self, key: str) -> None:
        """Tell a background call of this process that it has ended (expired or cancelled)."""
        running = self.tasks.get(key)
        if running is not None and running[1].token is not None:
            running[1].token.cancel("cancelled")

    def parked(self, entry: Entry) -> Parked:
        """What a pending entry keeps."""
        parked: Parked = _decoded(_PARKED, entry.pending, entry, "pending record")
        return parked

    def check_answer(self, parked: Parked, answer: Any) -> Any:
        """The answer as JSON data, validated against the schema its request gave.

        Raises:
            PendingError: It is not JSON data (NaN, an object JSON cannot hold) or does not
                match the schema (``invalid_answer``, with the JSON pointer).
        """
        if parked.schema is None:
            if answer is not None:
                raise PendingError("this pending call takes no answer", code="invalid_answer", pointer="")
            return None
        try:
            data = msgspec.json.decode(msgspec.json.encode(answer))
        except (TypeError, ValueError, OverflowError, RecursionError):
            data = _NOT_JSON
        if data is _NOT_JSON or not _same(data, answer):
            raise PendingError("the answer is not JSON data", code="invalid_answer", pointer="")
        try:
            self.checker(parked.schema)(data)
        except ArgumentsError as exc:
            raise PendingError(
                f"the answer does not match the requested schema at {exc.pointer or '/'}: {exc.reason}",
                code="invalid_answer",
                pointer=exc.pointer,
            ) from None
        return data

    def checker(self, schema: dict[str, Any]) -> Callable[[object], None]:
        """The compiled validator of a request's schema (compiled once per schema).

        Raises:
            SchemaError: The schema uses something the validator cannot enforce exactly.
        """
        key = _ENCODE(schema).decode()
        check = self._checks.get(key)
        if check is None:
            check = self._checks[key] = compile_validator(schema)
        return check

    def ended(self, entry: Entry, tool: Tool[..., Any] | None, why: str) -> ToolResult | None:
        """The final result of a pending call that expired or was cancelled, recorded once.

        None when another worker resumed it first: it is no longer waiting, and ends as it runs.

        An approval never started: ``cancelled``. Anything else may have acted: ``outcome_unknown``,
        unless the tool is idempotent.
        """
        parked = self.parked(entry)
        call = ToolCall(entry.call_id, entry.tool, {})
        start = perf_counter_ns()
        code = "cancelled" if why == "cancelled" else "expired"
        done = "was cancelled" if why == "cancelled" else "expired"
        if parked.kind == "approval":
            result = failed(call, entry.tool, code, f"The call waited for approval and {done}; it was not made.", start)
        else:
            result = failed(call, entry.tool, code, f"The pending call {done}; it may have acted.", start)
            if tool is None or not tool.idempotent:
                result = _as_unknown(result)
        return self.record_entry(entry, result)


_AGAIN = object()
_NOT_JSON = object()
_NOT_ACTED = ToolResult(call_id="-", name="-", status="outcome_unknown")
"""What an act is given back with when its call stopped before the tool started."""


def _same(data: Any, answer: Any) -> bool:
    """Whether JSON data is the answer it came from (NaN and the infinities are not)."""
    if isinstance(answer, float):
        return math.isfinite(answer) and data == answer
    if isinstance(answer, dict):
        return (
            isinstance(data, dict)
            and len(data) == len(answer)
            and all(key in data and _same(data[key], value) for key, value in answer.items())
        )
    if isinstance(answer, (list, tuple)):
        return isinstance(data, list) and len(data) == len(answer) and all(map(_same, data, answer))
    return bool(data == answer)


_PROCESS_CACHE = MemoryJournal()
_CACHE_PREFIXES: weakref.WeakKeyDictionary[Tool[..., Any], bytes] = weakref.WeakKeyDictionary()
"""Each cached tool's key prefix: its name and which function's results they are."""
"""Reused results of dispatchers without a journal: shared by the whole process."""


def _as_unknown(result: ToolResult) -> ToolResult:
    result.status = "outcome_unknown"
    return result


def _stopped(flight: Flight, exc: BaseException) -> ToolResult:
    """The end of a background call that raised out of the pipeline: failed, or unknown once it acted."""
    name = flight.plan.name
    if not flight.acted:
        message = f"Tool {name!r} could not start in the background: {type(exc).__name__}."
        return failed(flight.call, name, "tool_error", message, flight.start)
    message = f"Tool {name!r} stopped in the background; it may have acted."
    return _as_unknown(failed(flight.call, name, "outcome_unknown", message, flight.start))


def _signing_key(given: bytes | str | None) -> bytes:
    """The key that signs handles: the one given, or a random one of this dispatcher.

    Raises:
        TypeError: It is neither bytes nor text.
        ValueError: It is empty (every handle would be forgeable).
    """
    if given is None:
        return os.urandom(32)
    if not isinstance(given, (bytes, bytearray, str)):
        raise TypeError(f"signing_key must be bytes or text, not {type(given).__name__}")
    if not given:
        raise ValueError("signing_key must not be empty: anyone could forge a handle; pass a secret, or None")
    return given.encode() if isinstance(given, str) else bytes(given)


def _remembered(plan: Plan) -> bool:
    """Whether a dispatcher without a journal still remembers a tool's calls (in memory, for its run).

    A call that may outlive its turn (an external or background tool's, one asking the user, one
    an approver may defer) or that names an act: sent again, it is answered, never made twice.
    """
    durable = plan.tool.durable
    if durable is not None and (durable.external or durable.background or durable.idempotency_key is not None):
        return True
    return plan.approval is not None or "ask" in plan.tool.wants


def _same_call(flight: Flight, read: Read, found: Entry, mine: Entry) -> bool:
    """Whether a journaled entry of this call id holds this very call: the same tool and content.

    Content is compared as the tool receives it (converted, defaults in place) and written as
    canonical JSON, not as the model spelled it: ``100`` and ``100.0`` for a float are one
    value, ``1`` and ``true`` for an untyped argument are two.
    """
    if found.tool != mine.tool:
        return False
    if found.arguments == mine.arguments:
        return True
    plan = flight.plan
    try:
        earlier = plan.normalised(None, msgspec.json.decode(found.arguments))
        now = plan.normalised(read, flight.arguments)
        return _written(plan, earlier) == _written(plan, now)
    except Exception:  # not this tool's arguments any more, or not writable: another call
        return False


def _written(plan: Plan, values: dict[str, Any]) -> bytes:
    return canonical(plan.encoder.to_builtins(values))


def _wait_bound(tool: Tool[..., Any]) -> float:
    """How long a call waits for another live worker running the same call."""
    if tool.timeout is None:
        return 600.0
    return tool.timeout * (1 + tool.retries) + 30.0
