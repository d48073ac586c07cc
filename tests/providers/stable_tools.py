"""Tools whose exports must be the same bytes in every process (tests/providers/test_stable.py).

They reach the parts of schema generation where order could come from a hash: sets, frozensets,
enums, literals, unions, nested models with ``$defs``, dataclasses, TypedDicts, tuples.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, Field

from tinytools import Param, Toolbox, tool

DESCRIPTION = os.environ.get("STABLE_DESCRIPTION", "Plan a trip.")


class Mode(enum.Enum):
    TRAIN = "train"
    PLANE = "plane"
    BOAT = "boat"


class Stop(BaseModel):
    """A place on the way."""

    city: str = Field(description="Where.")
    nights: int = Field(ge=0, le=30)
    tags: frozenset[str] = frozenset()


@dataclasses.dataclass
class Budget:
    """How much may be spent."""

    amount: float
    currency: Literal["EUR", "USD", "JPY"] = "EUR"


class Traveller(TypedDict):
    name: str
    age: int


@tool
def plan_trip(
    stops: list[Stop],
    travellers: list[Traveller],
    modes: set[Mode],
    budget: Budget | None = None,
    window: tuple[str, str] | None = None,
    notes: Annotated[str, Param("Anything else.", max_length=500)] = "",
) -> dict[str, list[str]]:
    """Plan a trip."""
    return {}


plan_trip.description = DESCRIPTION


@tool
def convert(amount: float, to: Literal["EUR", "USD"], rounding: Literal[0, 1, 2] = 2) -> float:
    """Convert an amount."""
    return amount


def toolbox() -> Toolbox:
    return Toolbox([plan_trip, convert], deferred=["convert"])
