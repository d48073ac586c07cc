"""What a journal entry says: its final result, a waiting call's record and request, its arguments.

Every field of an entry is read here, and only here: a field this version of tinytools cannot read
(another version's, another program's, a corrupt row) is a `JournalError` naming the call, never a
decoder's exception. A waiting call's `Parked` record keeps what it asks for and what resuming it
needs; the answer it takes is checked against the schema it asked with.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError, JournalError, PendingError
from tinytools._results import Pending, PendingCall, PendingKind, PendingRequest, ToolResult
from tinytools._run.handles import Handles
from tinytools._run.journals import JournalEntry, canonical
from tinytools._schema.input_schema import compile_validator

__all__ = ["Entries", "Parked"]


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
    trace: str | None = None
    """The W3C ``traceparent`` of the span of the call that parked, which its resumption links to."""
    state: str | None = None
    """What the tool kept with its question (`NeedsInput.state`), given back to it on resume."""
    name: str | None = None
    """What the tool calls its question (`PendingRequest.name`)."""


_RESULT = msgspec.json.Decoder(ToolResult).decode
_ARGUMENTS = msgspec.json.Decoder(dict[str, Any]).decode
_PARKED = msgspec.json.Decoder(Parked).decode


class Entries:
    """Reads one dispatcher's journal entries, and checks the answers its pending calls take."""

    __slots__ = ("_checks", "handles")

    def __init__(self, handles: Handles):
        self.handles = handles
        """Names a pending entry's current step."""
        self._checks: dict[str, Callable[[object], None]] = {}

    def stored(self, entry: JournalEntry, call_id: str) -> ToolResult:
        """An ended entry's final result, as the answer to the call ``call_id``."""
        result: ToolResult = _decoded(_RESULT, entry.result, entry, "final result")
        return result if result.call_id == call_id else msgspec.structs.replace(result, call_id=call_id)

    def parked(self, entry: JournalEntry) -> Parked:
        """What a pending entry keeps."""
        parked: Parked = _decoded(_PARKED, entry.pending, entry, "pending record")
        return parked

    def arguments(self, entry: JournalEntry) -> dict[str, Any]:
        """The validated arguments an entry keeps."""
        read: dict[str, Any] = _decoded(_ARGUMENTS, entry.arguments, entry, "set of arguments")
        return read

    def pending_result(self, entry: JournalEntry, call_id: str) -> ToolResult:
        """The pending result of a parked entry, with the handle of its current step."""
        parked = self.parked(entry)
        request = PendingRequest(parked.message, parked.schema, parked.name)
        pending = Pending(self.handles.handle(entry.key, entry.step), parked.kind, request, parked.expires_at)
        return ToolResult(call_id=call_id, name=entry.tool, status="pending", pending=pending)

    def running_result(self, entry: JournalEntry) -> ToolResult:
        """The pending result of a call that was resumed and runs: a task, until it ends."""
        parked = self.parked(entry)
        request = PendingRequest("The call is running; poll again for its result.")
        pending = Pending(self.handles.handle(entry.key, entry.step), "task", request, parked.expires_at)
        return ToolResult(call_id=entry.call_id, name=entry.tool, status="pending", pending=pending)

    def listed(self, entry: JournalEntry) -> PendingCall:
        """A waiting entry as an inbox shows it: its call, scrubbed arguments, request and handle."""
        parked = self.parked(entry)
        pending = self.pending_result(entry, entry.call_id).pending
        assert pending is not None
        return PendingCall(entry.call_id, entry.run_id, entry.tool, parked.shown, pending)

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
        key = canonical(schema).decode()
        check = self._checks.get(key)
        if check is None:
            check = self._checks[key] = compile_validator(schema)
        return check


def _decoded(decode: Callable[[bytes], Any], data: bytes | None, entry: JournalEntry, what: str) -> Any:
    """One field of an entry, decoded.

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


_NOT_JSON = object()


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
