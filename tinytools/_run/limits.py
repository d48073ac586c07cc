"""Run limits: `Limits`, the bounds on one run of a `Dispatcher`, counted from its creation."""

from __future__ import annotations

import msgspec

from tinytools._public import publish

__all__ = ["Limits"]


class Limits(msgspec.Struct, frozen=True):
    """Bounds on one run of a `Dispatcher`.

    A call past a bound is not executed; it gets a failed result that says which bound
    (``budget_exhausted``, ``deadline_exceeded``, ``arguments_too_large``).
    """

    max_tool_calls: int | None = None
    """Calls the run may make, recoveries (unknown tool, bad arguments) included."""
    deadline: float | None = None
    """Seconds from the dispatcher's creation after which no call starts."""
    max_argument_bytes: int | None = None
    """Largest JSON text of one call's arguments, refused before it is decoded."""


publish("tinytools", Limits)
