"""Definitions that need no pydantic, read in a process where pydantic cannot be imported."""

import dataclasses
import enum
import functools
from typing import Annotated, Literal, NamedTuple, TypedDict

import annotated_types
import msgspec

from tinytools import Param


class Mode(enum.Enum):
    """How to search."""

    FAST = "fast"
    DEEP = "deep"


@dataclasses.dataclass
class Window:
    """A time window."""

    start: int
    end: int = 10


class Filter(TypedDict, total=False):
    tag: str
    limit: int


class Pair(NamedTuple):
    left: int
    right: str = ""


class Box(msgspec.Struct, frozen=True):
    width: float
    height: float = 1.0


def search(
    query: Annotated[str, Param(min_length=1, description="What to look for")],
    mode: Mode = Mode.FAST,
    window: Window | None = None,
    filters: Filter | None = None,
    pairs: list[Pair] = [],  # noqa: B006 - the default is shown, never shared: arguments are decoded afresh
    boxes: frozenset[Box] = frozenset(),
    level: Literal[1, 2, 3] | float = 1,
    size: Annotated[int, annotated_types.Interval(ge=1, le=50)] = 10,
    /,
) -> dict[str, object]:
    """Search the archive.

    Args:
        query: Overridden by the Annotated description.
        mode: How hard to look.
    """
    return {"query": query, "mode": mode.value, "level": type(level).__name__, "boxes": len(boxes)}


def scale(value: float, factor: float = 2.0) -> float:
    """Scale a value."""
    return value * factor


class Scaler:
    """Scale by a fixed factor."""

    def __call__(self, value: float) -> float:
        return value * 3


DEFINITIONS = {
    "search": search,
    "half": functools.partial(scale, factor=0.5),
    "scaler": Scaler(),
}

CALLS = {
    "search": {"query": "x", "mode": "deep", "level": 2, "boxes": [{"width": 1.0}, {"width": 2.0}]},
    "half": {"value": 3},
    "scaler": {"value": 2},
}
