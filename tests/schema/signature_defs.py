"""Signatures as people write them, for `tests.schema.test_signatures`.

This module is loaded twice: as written, and compiled with ``from __future__ import
annotations`` (every annotation a string), so each case is read both ways.
"""

import dataclasses
import enum
import functools
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import Self

from tinytools import tool


def counted(
    m: int = Field(..., le=5, description="How many"),
    label: Annotated[str, Field(min_length=2, description="A label", alias="labelText")] = "ab",
    tags: list[str] = Field(default_factory=list),  # noqa: B008 - how pydantic users write it
    size: Annotated[int, Field(default=3, ge=1)] = 3,
    /,
) -> list[Any]:
    """Count things."""
    tags.append("seen")  # a fresh list per call: the factory's, never one shared between calls
    return [m, label, tags, size]


def field_in_annotated(limit: Annotated[int, Field(default=10, gt=0, lt=100, description="Page size")]) -> int:
    """A Field default inside Annotated: the function has no default of its own."""
    return limit


def field_pattern(code: str = Field(pattern=r"^[A-Z]{3}$", examples=["EUR"])) -> str:
    """A currency code."""
    return code


class Node(BaseModel):
    """A tree node."""

    value: int
    children: list["Node"] = []


def tree(root: Node) -> Node:
    """Echo a tree."""
    return root


def depth(root: Node) -> int:
    """The depth of a tree."""
    return 1 + max((depth(child) for child in root.children), default=0)


class Address(BaseModel):
    """A postal address."""

    city: str = Field(description="City name")

    @field_validator("city")
    @classmethod
    def no_placeholder(cls, value: str) -> str:
        if value.lower() == "nowhere":
            raise ValueError("city must be a real place, not a placeholder")
        return value


class Loose(BaseModel):
    """A model that allows extra keys."""

    model_config = ConfigDict(extra="allow")
    name: str


def ship(address: Address, extras: list[Loose] | None = None) -> str:
    """Ship to an address."""
    return address.city


class Level(enum.IntEnum):
    """How loud."""

    LOW = 1
    HIGH = 2


def unions(a: float | Literal[1, 2, 3], b: Level | Literal[1, 2, 3], c: int | float, d: float | int) -> list[str]:
    """Report the classes the arguments arrive as."""
    return [type(a).__name__, type(b).__name__, type(c).__name__, type(d).__name__]


def power(base: int, exponent: int, modulo: int | None = None) -> int:
    """Raise a number to a power."""
    return pow(base, exponent, modulo)


class Multiplier:
    """Multiply by a fixed factor."""

    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, x: int) -> int:
        """Multiply ``x``.

        Args:
            x: The number to multiply.
        """
        return x * self.factor


class Scaler:
    """Scale numbers by a fixed factor.

    Args:
        x: The number to scale.
    """

    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, x: int, *, round_to: int = 0) -> float:
        """Args:
        round_to: Decimal places to keep.
        """
        return round(x * self.factor, round_to)


@dataclasses.dataclass
class Undocumented:
    factor: int

    def __call__(self, x: int) -> int:
        return x * self.factor


square = functools.partial(power, exponent=2)
twice = functools.partial(power, 2)


@dataclasses.dataclass
class Counter:
    """A counter whose methods are tools."""

    start: int = 0

    def add(self, by: int) -> int:
        """Add to the counter."""
        self.start += by
        return self.start

    @tool
    def bump(self, by: int = 1) -> Self:
        """Bump the counter and return it."""
        self.start += by
        return self

    @tool
    def copy(self) -> "Counter":
        """A copy of the counter."""
        return Counter(self.start)

    @tool
    @classmethod
    def starting_at(cls, start: int) -> "Counter":
        """A counter starting at ``start``."""
        return cls(start)

    @tool
    @staticmethod
    def zero() -> int:
        """Zero."""
        return 0

    @staticmethod
    def scale(x: int, factor: int = 2) -> int:
        """A static method without @tool, made a tool from the class."""
        return x * factor


def sized(items: set[frozenset[int]], anything: set[Any]) -> int:
    """Count distinct sets."""
    return len(items) + len(anything)


class Plain:
    """A class with no JSON form."""


def with_plain_default(x: int, marker: Any = Plain()) -> int:  # noqa: B008  # noqa: B008
    """A default the model cannot be shown."""
    return x


class Point(BaseModel):
    """A point."""

    x: int = 0
    y: int = 0


def with_model_default(origin: Point = Point(x=1)) -> int:  # noqa: B008 - what people write
    """A pydantic default, shown as its JSON data."""
    return origin.x


def undocumented(x: int) -> int:
    return x


@dataclasses.dataclass
class Shipment:
    """A parcel to send.

    Attributes:
        weight: Kilograms, rounded up.
        note: Overridden by the attribute docstring.
    """

    weight: float
    note: str = ""
    """Printed on the label."""


class Recipient(BaseModel):
    """Who receives the parcel."""

    name: str
    """Full name, as on the door."""
    phone: str = Field("", description="With the country code")
    """Not used: the Field says it."""


class Slot(NamedTuple):
    """A delivery slot."""

    day: str
    """ISO weekday name."""
    hour: int = 9


def send(shipment: Shipment, to: Recipient, slot: Slot) -> str:
    """Send a parcel."""
    return to.name
