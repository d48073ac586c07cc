"""Tools that stream their output: a generator's pieces become events, and its end the result.

A tool written as a generator (``def``, run on the caller's or a worker thread) or an async
generator (``async def``, run on the loop) yields pieces of its output. Each piece becomes a
`ToolOutputChunk` event (kind ``"text"`` for a string, ``"value"`` otherwise), in order, between
`ToolStarted` and `ToolCompleted`. The call's output is what the generator returns, if it returns
something (a `ToolOutput` says exactly what); else the pieces joined, when every piece is text;
else the last piece. That output then meets the output checks, the budget, the artifact store and
redaction as any tool's does.

The run's stop reaches a stream between two pieces: once the call's token is cancelled (a
timeout, the run's or the caller's cancellation) the generator is closed at its next ``yield``.
What the pipeline makes of the stop is its usual rule (``outcome_unknown`` for a tool that is
not idempotent), never a half result marked succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from tinytools.context import CancellationToken
from tinytools.events import ToolEvent, ToolOutputChunk

__all__ = ["async_stream", "final_output", "sync_stream"]

Send = Callable[[ToolEvent], None] | None


class Stopped(Exception):
    """The call's token was cancelled while its generator ran; the generator was closed."""


def _chunk(call_id: str, name: str, start: int, piece: Any) -> ToolOutputChunk:
    kind = "text" if isinstance(piece, str) else "value"
    return ToolOutputChunk(call_id, name, perf_counter_ns() - start, kind, piece)


def final_output(pieces: list[Any], returned: Any) -> Any:
    """The call's output: what the generator returned, else the text joined, else the last piece."""
    if returned is not None:
        return returned
    if pieces and all(isinstance(piece, str) for piece in pieces):
        return "".join(pieces)
    return pieces[-1] if pieces else None


def sync_stream(
    fn: Callable[..., Any], call_id: str, name: str, start: int, send: Send, token: CancellationToken
) -> Callable[..., Any]:
    """A function that runs the generator ``fn`` to its end, sending each piece, and returns the output."""

    def streamed(*args: Any, **kwargs: Any) -> Any:
        generator = fn(*args, **kwargs)
        pieces: list[Any] = []
        try:
            while True:
                if token.cancelled:
                    raise Stopped(token.reason or "cancelled")
                try:
                    piece = next(generator)
                except StopIteration as end:
                    return final_output(pieces, end.value)
                pieces.append(piece)
                if send is not None:
                    send(_chunk(call_id, name, start, piece))
        finally:
            generator.close()

    return streamed


def async_stream(
    fn: Callable[..., Any], call_id: str, name: str, start: int, send: Send, token: CancellationToken
) -> Callable[..., Any]:
    """A coroutine function that runs the async generator ``fn`` to its end, sending each piece."""

    async def streamed(*args: Any, **kwargs: Any) -> Any:
        generator = fn(*args, **kwargs)
        pieces: list[Any] = []
        try:
            async for piece in generator:
                pieces.append(piece)
                if send is not None:
                    send(_chunk(call_id, name, start, piece))
                if token.cancelled:
                    raise Stopped(token.reason or "cancelled")
            return final_output(pieces, None)
        finally:
            await generator.aclose()

    return streamed
