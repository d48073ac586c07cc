"""Tools that stream their output: a generator's pieces become events, and its end the result.

A tool written as a generator (``def``, run on the caller's or a worker thread) or an async
generator (``async def``, run on the loop) yields pieces of its output. Each piece becomes a
`ToolOutputChunk` event (kind ``"text"`` for a string, ``"value"`` otherwise), in order, between
`ToolStarted` and `ToolCompleted`, once the stream's boundary lets it out (scrubbed as one
stream, within the budget: `tinytools._run.stream_boundary`). The call's output is what the
generator returns, if it returns something (a `ToolOutput` says exactly what); else the pieces
joined, when every piece is text; else the last piece. That output then meets the output checks,
the budget, the artifact store and redaction as any tool's does. Only what the output can be is
kept while the stream runs: the joined text (up to the budget, when there is no artifact store to
take more; past it the call ends ``output_too_large``) and the last piece.

The run's stop reaches a stream between two pieces: once the call's token is cancelled (a
timeout, the run's or the caller's cancellation) the generator is closed at its next ``yield``.
What the pipeline makes of the stop is its usual rule (``outcome_unknown`` for a tool that is
not idempotent), never a half result marked succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tinytools._context import CancellationToken

__all__ = ["Collected", "TooLarge", "async_stream", "sync_stream", "then_end"]

Send = Callable[[str, Any], None] | None
"""Where a piece goes: ``send(kind, piece)``, or None when nobody listens."""


class Stopped(Exception):
    """The call's token was cancelled while its generator ran; the generator was closed."""


class TooLarge(Exception):
    """A text stream grew past the budget with no artifact store to take it: the output is not kept."""

    def __init__(self, size: int):
        self.size = size
        super().__init__(f"{size} bytes")


class Collected:
    """What a stream's output may be, kept as the pieces come: the text so far, and the last piece."""

    __slots__ = ("keep", "last", "size", "texts")

    def __init__(self, keep: int | None):
        self.keep = keep
        """Most bytes of text kept (None: all of it)."""
        self.texts: list[str] | None = []
        """The text pieces so far; None once a piece was not text."""
        self.size = 0
        """UTF-8 bytes of the text pieces so far (counted only under a limit)."""
        self.last: Any = None

    def add(self, piece: Any) -> None:
        """Keep what the output needs of one more piece."""
        self.last = piece
        texts = self.texts
        if texts is None:
            return
        if piece.__class__ is not str:
            self.texts = None
            return
        if self.keep is None:
            texts.append(piece)
            return
        self.size += len(piece.encode("utf-8", "surrogatepass"))
        if self.size <= self.keep:
            texts.append(piece)
        elif texts:
            texts.clear()  # past the budget with nowhere to put it: only its size matters now

    def output(self, returned: Any, count: int) -> Any:
        """The call's output: what the generator returned, else the text joined, else the last piece.

        Raises:
            TooLarge: The text is the output, and it passed the budget with nowhere to go.
        """
        if returned is not None:
            return returned
        if count and self.texts is not None:
            if self.keep is not None and self.size > self.keep:
                raise TooLarge(self.size)
            return "".join(self.texts)
        return self.last


def sync_stream(
    fn: Callable[..., Any], send: Send, end: Callable[[], None], token: CancellationToken, keep: int | None
) -> Callable[..., Any]:
    """A function that runs the generator ``fn`` to its end, sending each piece, and returns the output."""

    def streamed(*args: Any, **kwargs: Any) -> Any:
        generator = fn(*args, **kwargs)
        collected = Collected(keep)
        count = 0
        try:
            while True:
                if token.cancelled:
                    raise Stopped(token.reason or "cancelled")
                try:
                    piece = next(generator)
                except StopIteration as done:
                    end()
                    return collected.output(done.value, count)
                if token.cancelled:  # stopped while the piece was made: it is not this call's any more
                    raise Stopped(token.reason or "cancelled")
                count += 1
                collected.add(piece)
                if send is not None:
                    send("text" if piece.__class__ is str else "value", piece)
        finally:
            generator.close()

    return streamed


def async_stream(
    fn: Callable[..., Any], send: Send, end: Callable[[], None], token: CancellationToken, keep: int | None
) -> Callable[..., Any]:
    """A coroutine function that runs the async generator ``fn`` to its end, sending each piece."""

    async def streamed(*args: Any, **kwargs: Any) -> Any:
        generator = fn(*args, **kwargs)
        collected = Collected(keep)
        count = 0
        try:
            async for piece in generator:
                if token.cancelled:
                    raise Stopped(token.reason or "cancelled")
                count += 1
                collected.add(piece)
                if send is not None:
                    send("text" if piece.__class__ is str else "value", piece)
            end()
            return collected.output(None, count)
        finally:
            await generator.aclose()

    return streamed


def then_end(fn: Callable[..., Any], channel: Any, *, is_async: bool) -> Callable[..., Any]:
    """``fn``, then the end of the pieces it emitted (`Progress.emit`): the held-back ones go out.

    Called on the thread (or in the task) the tool ran on, so the driver delivers them with the call.
    """
    if is_async:

        async def emitted_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            finally:
                channel.send(None)

        return emitted_async

    def emitted(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            channel.send(None)

    return emitted
