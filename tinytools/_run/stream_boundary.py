"""The boundary of a streamed call: its pieces made model-facing while the tool runs, as one text.

A tool's pieces (a generator's yields, `Progress.emit`) reach the event sink, and through it a
client (the MCP server, ``tinytools call``), before the call ends. Each piece is text as a reader
sees it: a string is itself; any other piece is the JSON its value encodes to through the
dispatcher's output encoder, as an output would (a tuple, a dataclass and bytes alike).

The pieces are scrubbed as one stream, not one by one: a secret split across pieces is caught.
A piece is held back until `WINDOW` characters of the stream follow it (or the stream ends),
which is all that any match touching it can depend on; then the runs of a secret inside it are
replaced, and the application's redaction hook sees it. Forwarded pieces count against the output
budget: once the next piece would pass it, nothing more is forwarded, and the call's result says
how many bytes were not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._run.secrets import REDACTED, WINDOW, Secrets

if TYPE_CHECKING:
    from tinytools._encoding import OutputEncoder

__all__ = ["Piece", "StreamBoundary"]

_CONTEXT = 2 * WINDOW
"""Characters of the stream kept from before the held pieces: what a match reaching back needs."""


class Piece(msgspec.Struct, frozen=True):
    """One piece as it may be forwarded: its kind and its data, scrubbed."""

    kind: str
    """``text`` for a string piece, ``value`` for any other (or the kind `Progress.emit` gave)."""
    data: Any
    """The text, or the value as plain JSON data (a value whose text held a secret: its scrubbed JSON)."""


class StreamBoundary:
    """One call's stream of pieces on its way out (see the module)."""

    __slots__ = ("_context", "_held", "encoder", "hook", "limit", "secrets", "sent", "stopped", "withheld")

    def __init__(
        self,
        secrets: Secrets | None,
        hook: Callable[[str], str] | None,
        limit: int | None,
        encoder: OutputEncoder,
    ):
        self.secrets = secrets if secrets else None
        self.hook = hook
        self.limit = limit
        self.encoder = encoder
        self.sent = 0
        """Bytes forwarded so far."""
        self.withheld = 0
        """Bytes not forwarded: the pieces past the budget."""
        self.stopped = False
        """Whether forwarding stopped at the budget."""
        self._held: list[tuple[str, Any, str]] = []
        self._context = ""

    def piece(self, kind: str, value: Any) -> list[Piece]:
        """Take the next piece; the pieces that may be forwarded now, in order."""
        plain, text = self._text_of(value)
        self._held.append((kind, plain, text))
        return self._release(final=False)

    def end(self) -> list[Piece]:
        """The stream ended: the pieces still held, to forward now."""
        return self._release(final=True)

    def _text_of(self, value: Any) -> tuple[Any, str]:
        """A piece as plain data and as the text a reader sees."""
        if value.__class__ is str:
            return value, value
        try:
            plain = self.encoder.to_builtins(value)
            return plain, msgspec.json.encode(plain).decode("utf-8", "surrogatepass")
        except Exception:  # what cannot be encoded is not forwarded as it is
            note = f"[a piece of type {type(value).__name__} that cannot be encoded as JSON]"
            return note, note

    def _release(self, *, final: bool) -> list[Piece]:
        held = self._held
        if not held:
            return []
        if self.secrets is None:  # nothing to find across pieces: each goes as soon as it comes
            self._held = []
            return [piece for item in held if (piece := self._forward(item, item[2])) is not None]
        texts = [item[2] for item in held]
        buffer = self._context + "".join(texts)
        count = len(held) if final else _ready(texts)
        if count == 0:
            return []
        spans = self.secrets.spans(buffer)
        released: list[Piece] = []
        start = len(self._context)
        for item in held[:count]:
            end = start + len(item[2])
            piece = self._forward(item, _masked(buffer, start, end, spans))
            if piece is not None:
                released.append(piece)
            start = end
        self._context = buffer[:start][-_CONTEXT:]
        self._held = held[count:]
        return released

    def _forward(self, item: tuple[str, Any, str], text: str) -> Piece | None:
        """One piece after scrubbing: through the hook, within the budget, or None when not forwarded."""
        kind, plain, raw = item
        if self.hook is not None:
            try:
                text = self.hook(text)
            except Exception:  # a hook that fails shows nothing of the piece
                text = REDACTED
        size = len(text.encode("utf-8", "surrogatepass"))
        if self.stopped or (self.limit is not None and self.sent + size > self.limit):
            self.stopped = True
            self.withheld += size
            return None
        self.sent += size
        if text == raw:
            return Piece(kind, plain)
        if plain.__class__ is str:
            return Piece(kind, text)
        try:
            return Piece(kind, msgspec.json.decode(text))  # a value whose text held a secret: its scrubbed JSON
        except msgspec.DecodeError:
            return Piece(kind, text)

    def note(self) -> str | None:
        """What the result says when forwarding stopped at the budget, or None."""
        if not self.stopped:
            return None
        return (
            f"[The streamed pieces passed the {self.limit}-byte budget: {self.withheld} bytes of them were not "
            "forwarded.]"
        )


def _ready(texts: list[str]) -> int:
    """How many held pieces, from the first, have `WINDOW` characters of the stream after them."""
    after = 0
    for index in range(len(texts) - 1, -1, -1):
        if after >= WINDOW:
            return index + 1
        after += len(texts[index])
    return 0


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
