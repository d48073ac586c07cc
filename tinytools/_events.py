"""Typed lifecycle events of a call, and how they reach a sink.

Every event carries the call's id, the tool's name and ``elapsed`` (ns since the call began).
A sink is a callable (sync or async) or an ``asyncio.Queue``; with no sink, the dispatcher
builds no events at all. A sink that raises is logged and ignored: it never costs a call its
result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from tinytools._errors import ArgumentsError
from tinytools._public import publish
from tinytools._results import StructuredError, ToolResult

__all__ = [
    "EventSink",
    "InvalidToolArgs",
    "ToolCompleted",
    "ToolDenied",
    "ToolEvent",
    "ToolFailed",
    "ToolOutputChunk",
    "ToolPending",
    "ToolProgress",
    "ToolStarted",
    "UnknownToolCall",
]


class ToolEvent(msgspec.Struct, frozen=True):
    """What every event says: which call, which tool, how long since the call began."""

    call_id: str
    """The call's id."""
    name: str
    """The tool's canonical name (the requested name when none matched)."""
    elapsed: int
    """Nanoseconds since the dispatcher took the call."""


class ToolStarted(ToolEvent, frozen=True):
    """The tool's function is about to run with validated arguments."""

    arguments: dict[str, Any]
    """The validated arguments as the model sent them (before conversion)."""
    attempt: int = 1
    """1 for the first try; more on retries."""


class ToolCompleted(ToolEvent, frozen=True):
    """A call ended with a result (any status)."""

    result: ToolResult
    """The result returned for the call."""


class ToolPending(ToolEvent, frozen=True):
    """A call ended its turn unfinished: ``result.pending`` says what it waits for."""

    result: ToolResult
    """The pending result returned for the call; its final one comes later, as `ToolCompleted`."""


class ToolFailed(ToolEvent, frozen=True):
    """The tool raised, timed out or returned what cannot be encoded."""

    error: StructuredError
    """The error the model sees."""
    exception: BaseException | None
    """The exception, with its full text and traceback: for logs, never for the model."""


class UnknownToolCall(ToolEvent, frozen=True):
    """A call named a tool that is not in the toolbox."""

    requested_name: str
    """The name exactly as the model sent it."""
    arguments: Any
    """The arguments exactly as the model sent them."""
    recovery: str
    """What happened: ``"tool_error"``, ``"rewrite:<name>"`` or ``"fail"``."""


class InvalidToolArgs(ToolEvent, frozen=True):
    """A call's arguments were malformed or failed the schema."""

    arguments: Any
    """The arguments exactly as the model sent them."""
    error: ArgumentsError
    """What was wrong, with pointer and keyword."""
    recovery: str
    """What happened: ``"tool_error"`` or ``"fail"``."""


class ToolDenied(ToolEvent, frozen=True):
    """A call was not executed because a rule refused it."""

    rule: str
    """The rule that refused it (``"not_allowed"``, ``"budget"``, a policy rule, ...)."""
    reason: str
    """Why, as told to the model."""


class ToolProgress(ToolEvent, frozen=True):
    """A running tool reported how far it got (through its `Progress`)."""

    done: float
    """Units of work done."""
    total: float | None
    """Units of work in all, when known."""
    message: str | None
    """What it is doing."""


class ToolOutputChunk(ToolEvent, frozen=True):
    """A running tool reported a piece of partial output."""

    kind: str
    """What kind of piece (the tool's own word: ``"row"``, ``"log"``, ...)."""
    data: Any
    """The piece."""


EventSink = Callable[[ToolEvent], Awaitable[None] | None] | Any
"""A callable taking an event (sync or async), or an ``asyncio.Queue``."""


publish(
    "tinytools",
    ToolEvent,
    ToolStarted,
    ToolCompleted,
    ToolPending,
    ToolFailed,
    UnknownToolCall,
    InvalidToolArgs,
    ToolDenied,
    ToolProgress,
    ToolOutputChunk,
)
