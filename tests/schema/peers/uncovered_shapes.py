"""Parameter shapes no peer test covers: recursive and nested dataclasses, unions of floats, enums
and literals, int enums, no parameters, a method returning ``Self``.

Definitions first (comments name the item of issue 17 that asked for each), then `CASES`: the
behaviour expected, and tinytools' verdict.
No ``from __future__ import annotations`` here on purpose: `test_peer_cases` also runs a copy
compiled with it.
"""

import dataclasses
import enum
from typing import Literal

from typing_extensions import Self

from tests.schema.peers import (
    FIXED,
    ISSUE,
    Case,
    got,
)


@dataclasses.dataclass
class Folder:  # issue 17, item 4: recursive dataclasses work
    name: str
    children: list["Folder"] = dataclasses.field(default_factory=list)


def rec_dataclass(root: Folder) -> int:
    got(locals())
    return len(root.children)


@dataclasses.dataclass
class Address:
    """Where a parcel goes."""

    street: str
    """Street and number."""
    city: str
    """City name."""


def nested_dataclass_descriptions(to: Address) -> None:  # issue 17, item 8
    got(locals())


class Level(enum.IntEnum):  # issue 17, item 11
    LOW = 1
    HIGH = 2


def union_float_literal(x: float | Literal[1, 2, 3]) -> None:  # issue 17, item 11
    got(locals())


def union_enum_literal(x: Level | Literal[1, 2, 3]) -> None:  # issue 17, item 11
    got(locals())


def int_enum(level: Level) -> None:  # issue 17, item 11: an int Enum refuses `true`
    got(locals())


def args_none() -> str:  # issue 17, item 7
    """Report the status.

    Args:
        None

    Returns:
        The status line.
    """
    return "ok"


@dataclasses.dataclass
class Tally:  # issue 17, item 10: a `Self` return on a bound method
    count: int = 0

    def bumped(self, by: int = 1) -> Self:
        """Count up."""
        return dataclasses.replace(self, count=self.count + by)


self_return = Tally().bumped


CASES = [
    Case(
        "rec_dataclass",
        ISSUE + "item 4 (recursive dataclasses work)",
        facts={"/$defs/Folder/properties/children/items": {"$ref": "#/$defs/Folder"}},
        call={"root": {"name": "a", "children": [{"name": "b"}]}},
        receives=lambda d: {"root": d.Folder("a", [d.Folder("b")])},
        result=1,
    ),
    Case(
        "nested_dataclass_descriptions",
        ISSUE + "item 8 (dataclass docstring and attribute docstrings)",
        FIXED,
        "item 8: a dataclass's docstring and its fields' docstrings become descriptions",
        facts={
            "/$defs/Address/description": "Where a parcel goes.",
            "/$defs/Address/properties/street/description": "Street and number.",
            "/$defs/Address/properties/city/description": "City name.",
        },
    ),
    Case(
        "union_float_literal",
        ISSUE + "item 11 (float | Literal[1, 2, 3] given 3)",
        FIXED,
        "item 11: the member a value matches exactly wins",
        call={"x": 3},
        receives={"x": 3},
    ),
    Case(
        "union_float_literal",
        ISSUE + "item 11 (float | Literal[1, 2, 3] given 2.5)",
        call={"x": 2.5},
        receives={"x": 2.5},
    ),
    Case(
        "union_enum_literal",
        ISSUE + "item 11 (Level | Literal[1, 2, 3] given 2)",
        FIXED,
        "item 11: the member a value matches exactly wins",
        call={"x": 2},
        receives={"x": 2},
    ),
    Case("int_enum", ISSUE + "item 11 (an int Enum refuses true)", call={"level": True}, refused="invalid_arguments"),
    Case(
        "int_enum",
        ISSUE + "item 11 (an int Enum member)",
        call={"level": 2},
        receives=lambda d: {"level": d.Level.HIGH},
    ),
    Case(
        "args_none",
        ISSUE + "item 7 (Args: None)",
        FIXED,
        "item 7: `Args: None` made the raw sections the description",
        description="Report the status.",
        facts={"/properties": {}},
    ),
    Case(
        "self_return",
        ISSUE + "item 10 (a Self return on a bound method)",
        FIXED,
        "item 10: a Self return gave no output schema",
        output={"/$defs/Tally/properties/count": {"type": "integer", "default": 0}},
        call={"by": 2},
        result={"count": 2},
    ),
]
