"""Tools whose exports must be the same bytes in every process (tests/providers/test_stable.py).

They reach the parts of schema generation where order could come from a hash: sets, frozensets,
enums, literals, unions, nested models with ``$defs``, dataclasses, TypedDicts, tuples; defaults
that are sets (of a parameter, a dataclass field, a pydantic field); and a hand-written schema
whose keywords are inserted in the order a set of them iterates in.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, Field

from tinytools import Param, Tool, Toolbox, tool

DESCRIPTION = os.environ.get("STABLE_DESCRIPTION", "Plan a trip.")


class Mode(enum.Enum):
    TRAIN = "train"
    PLANE = "plane"
    BOAT = "boat"


class Stop(BaseModel):
    """A place on the way."""

    city: str = Field(description="Where.")
    nights: int = Field(ge=0, le=30)
    tags: frozenset[str] = frozenset({"window", "aisle", "quiet", "lounge"})


@dataclasses.dataclass
class Budget:
    """How much may be spent."""

    amount: float
    currency: Literal["EUR", "USD", "JPY"] = "EUR"
    cards: frozenset[str] = frozenset({"visa", "amex", "diners", "jcb"})


class Traveller(TypedDict):
    name: str
    age: int


@tool
def plan_trip(
    stops: list[Stop],
    travellers: list[Traveller],
    modes: set[Mode] = {Mode.TRAIN, Mode.PLANE, Mode.BOAT},  # noqa: B006 - a set default is what is tested
    labels: frozenset[str] = frozenset({"cheap", "fast", "green", "late", "direct"}),
    rooms: list[set[int]] = [{5, 1 << 40, 3}, {-2, 8}],  # noqa: B006
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


def in_hash_order(schema: object) -> object:
    """``schema`` with each node's keywords inserted in the order a set of them iterates in (the hash seed's)."""
    if not isinstance(schema, dict):
        return [in_hash_order(item) for item in schema] if isinstance(schema, list) else schema
    keywords = set(schema)
    return {
        key: {name: in_hash_order(sub) for name, sub in schema[key].items()}
        if key in ("properties", "$defs")
        else schema[key]
        if key in ("default", "enum", "required")
        else in_hash_order(schema[key])
        for key in keywords
    }


LOOKUP_INPUT = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "minLength": 3, "maxLength": 3, "pattern": "^[A-Z]+$", "description": "IATA."},
        "near": {"anyOf": [{"$ref": "#/$defs/point"}, {"type": "null"}], "default": None},
    },
    "required": ["code"],
    "additionalProperties": False,
    "$defs": {
        "point": {
            "type": "object",
            "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
            "additionalProperties": False,
        }
    },
}
LOOKUP_OUTPUT = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

lookup = Tool.from_schema(
    "lookup",
    "Look an airport up.",
    in_hash_order(LOOKUP_INPUT),  # type: ignore[arg-type]
    lambda code, near=None: {"name": code},
    output_schema=in_hash_order(LOOKUP_OUTPUT),
)


@dataclasses.dataclass(frozen=True)
class Options:
    """Choices a search takes."""

    tags: frozenset[str] = frozenset({"alpha", "beta", "gamma", "delta", "epsilon"})


@tool
def search_with(query: str, options: Options = Options()) -> list[str]:
    """Search with options whose default holds a set."""
    return []


def toolbox() -> Toolbox:
    return Toolbox([plan_trip, convert, lookup, search_with], deferred=["convert"])
