"""The boundary of a running call: what it sends before it ends, made model-facing as one text.

A tool's pieces (a generator's yields, `Progress.emit`) and its progress messages
(`Progress.progress`) reach the event sink, and through it a client (the MCP server,
``tinytools call``), before the call ends. Each is text as a reader sees it: a string is itself
(a lone surrogate, which no JSON can carry, becomes U+FFFD); any other piece is the JSON its value
encodes to through the dispatcher's output encoder, as an output would (a tuple, a dataclass, and
bytes as base64, matched by the text they decode to).

They are scrubbed as one stream, not one by one: a secret split across pieces is caught. A piece
is held back until `WINDOW` characters of the stream follow it (or the stream ends), which is all
that any match touching it can depend on; then the runs of a secret inside it are replaced (a
bytes piece that holds any is withheld whole), and the application's redaction hook sees it.
Everything forwarded counts against the output budget, each event at least `EVENT_COST` bytes:
once the next would pass it, nothing more is forwarded but one progress note saying how much was
not, and the call's result says it too. Events leave in the order they came, whichever thread
sent them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._events import ToolEvent, ToolOutputChunk, ToolProgress
from tinytools._run.secrets import REDACTED, WINDOW, Secrets

if TYPE_CHECKING:
    from tinytools._encoding import OutputEncoder

__all__ = ["EVENT_COST", "StreamBoundary"]

EVENT_COST = 32
"""Bytes each forwarded event counts for at least: a budget bounds how many events go out, too."""
_CONTEXT = 2 * WINDOW
"""Characters of the stream kept from before the held pieces: what a match reaching back needs."""
_SURROGATE = "[\ud800-\udfff]"


class _Held:
    """One event waiting to go out: its data as plain data, as forwarded text, and as matched text."""

    __slots__ = ("event", "forward", "match", "plain")

    def __init__(self, event: ToolEvent, plain: Any, forward: str, match: str):
        self.event = event
        self.plain = plain
        self.forward = forward
        self.match = match


class StreamBoundary:
    """One call's stream of events on its way out (see the module)."""

    __slots__ = (
        "_context",
        "_held",
        "_held_chars",
        "_lock",
        "call_id",
        "encoder",
        "events",
        "hook",
        "limit",
        "name",
        "secrets",
        "sent",
        "started",
        "stopped",
        "withheld",
    )

    def __init__(
        self,
        secrets: Secrets | None,
        hook: Callable[[str], str] | None,
        limit: int | None,
        encoder: OutputEncoder,
        call: tuple[str, str, int],
    ):
        self.call_id, self.name, self.started = call
        """The call's id, its tool's name and when it started (for the note at the end)."""
        self.secrets = secrets if secrets else None
        self.hook = hook
        self.limit = limit
        self.encoder = encoder
        self.sent = 0
        """Bytes forwarded so far (each event at least `EVENT_COST`)."""
        self.events = 0
        """Events forwarded so far."""
        self.withheld = 0
        """Bytes not forwarded: the pieces past the budget."""
        self.stopped = False
        """Whether forwarding stopped at the budget."""
        self._held: list[_Held] = []
        self._held_chars = 0
        self._context = ""
        self._lock = threading.Lock()

    def take(self, event: ToolEvent) -> list[ToolEvent]:
        """Take the call's next piece or progress event; the events that may be forwarded now, in order."""
        held = self._read(event)
        with self._lock:
            if held is None:
                return []
            self._held.append(held)
            self._held_chars += len(held.match)
            return self._release(final=False)

    def end(self) -> list[ToolEvent]:
        """The stream ended: the events still held, and a note if forwarding stopped at the budget."""
        with self._lock:
            released = self._release(final=True)
            note = self.note()
            if note is not None:
                elapsed = perf_counter_ns() - self.started
                released.append(ToolProgress(self.call_id, self.name, elapsed, float(self.events), None, note))
            return released

    def note(self) -> str | None:
        """What the result says when forwarding stopped at the budget, or None."""
        if not self.stopped:
            return None
        return (
            f"[The streamed pieces passed the {self.limit}-byte budget: {self.withheld} bytes of them were not "
            "forwarded.]"
        )

    def _read(self, event: ToolEvent) -> _Held | None:
        """An event as text to forward and text to match; None for a piece with nothing to say."""
        if isinstance(event, ToolProgress):
            message = None if event.message is None else _unicode(event.message)
            return _Held(event, message, message or "", message or "")
        if not isinstance(event, ToolOutputChunk):
            return _Held(event, None, "", "")
        value = event.data
        if value.__class__ is str:
            text = _unicode(value)
            return _Held(event, text, text, text) if text else None
        try:
            plain = self.encoder.to_builtins(value)
            forward = msgspec.json.encode(plain).decode("utf-8", "surrogatepass")
        except Exception:  # what cannot be encoded is not forwarded as it is
            note = f"[a piece of type {type(value).__name__} that cannot be encoded as JSON]"
            return _Held(event, note, note, note)
        match = bytes(value).decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else forward
        return _Held(event, plain, forward, match)

    def _release(self, *, final: bool) -> list[ToolEvent]:
        held = self._held
        count = len(held) if final else self._ready()
        if count == 0:
            return []
        buffer = self._context + "".join(item.match for item in held)
        spans = self.secrets.spans(buffer) if self.secrets is not None else []
        released: list[ToolEvent] = []
        start = len(self._context)
        for item in held[:count]:
            end = start + len(item.match)
            forwarded = self._forward(item, _masked(buffer, start, end, spans))
            if forwarded is not None:
                released.append(forwarded)
            self._held_chars -= len(item.match)
            start = end
        self._context = buffer[:start][-_CONTEXT:]
        self._held = held[count:]
        return released

    def _ready(self) -> int:
        """How many held events, from the first, have `WINDOW` characters of the stream after them."""
        if self.secrets is None:
            return len(self._held)  # nothing to find across pieces: each goes as soon as it comes
        after, count = self._held_chars, 0
        for item in self._held:
            after -= len(item.match)
            if after < WINDOW:
                break
            count += 1
        return count

    def _forward(self, item: _Held, masked: str) -> ToolEvent | None:
        """One event after scrubbing: through the hook, within the budget, or None when not forwarded."""
        event = item.event
        text = item.forward if masked == item.match else _scrubbed_form(item, masked)
        if self.hook is not None and text:
            try:
                text = self.hook(text)
            except Exception:  # a hook that fails shows nothing of the piece
                text = REDACTED
        size = len(text.encode("utf-8", "surrogatepass")) + EVENT_COST
        if self.stopped or (self.limit is not None and self.sent + size > self.limit):
            self.stopped = True
            self.withheld += size - EVENT_COST
            return None
        self.sent += size
        self.events += 1
        if isinstance(event, ToolProgress):
            return msgspec.structs.replace(event, message=text if item.plain is not None else None)
        if not isinstance(event, ToolOutputChunk):
            return event
        return msgspec.structs.replace(event, data=_data(item, text))


def _scrubbed_form(item: _Held, masked: str) -> str:
    """The forwarded text of an event whose matched text held part of a secret."""
    if isinstance(item.event, ToolOutputChunk) and isinstance(item.event.data, (bytes, bytearray)):
        return REDACTED  # base64 cannot be cut where the decoded text was: withheld whole
    return masked


def _data(item: _Held, text: str) -> Any:
    """What a forwarded piece carries: its plain data when nothing changed, else its scrubbed text or JSON."""
    if text == item.forward:
        return item.plain
    if item.plain.__class__ is str or text == REDACTED:
        return text
    try:
        return msgspec.json.decode(text)  # a value whose text held a secret: its scrubbed JSON
    except msgspec.DecodeError:
        return text


def _unicode(text: str) -> str:
    """Text JSON can carry: each lone surrogate becomes U+FFFD."""
    try:
        text.encode("utf-8")  # the common case: no lone surrogate, and no pattern compiled
    except UnicodeEncodeError:
        return re.sub(_SURROGATE, "\ufffd", text)
    return text


def _masked(buffer: str, start: int, end: int, spans: list[list[int]]) -> str:
    """``buffer[start:end]`` with every run of a secret inside it replaced."""
    pieces: list[str] = []
    last = start
    for span_start, span_end in spans:
        if span_end <= start or span_start >= end:
            continue
        cut_start, cut_end = max(span_start, start), min(span_end, end)
        pieces += (buffer[last:cut_start], REDACTED)
        last = cut_end
    if not pieces:
        return buffer[start:end]
    pieces.append(buffer[last:end])
    return "".join(pieces)
