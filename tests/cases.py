"""Tool definitions the schema tests read twice: as written, and under future annotations.

`conftest.load_cases` executes this file's source into a fresh module, once plain and once
with ``from __future__ import annotations`` prepended, so every case runs both ways.
Each ``EXPECTED_<name>`` is the exact input schema of the tool ``<name>``.
"""

import dataclasses
import datetime
import decimal
import enum
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
from typing_extensions import NotRequired, Required, TypedDict

from tinytools import Injected, Param, ToolCall, tool
from tinytools._schema.hints import DECIMAL_PATTERN


class Unit(enum.Enum):
    C = "c"
    F = "f"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Tree:
    label: str
    children: "list[Tree]" = dataclasses.field(default_factory=list)


class Address(TypedDict):
    street: str
    zip: NotRequired[str]


class Loose(TypedDict, total=False):
    a: Required[int]
    b: str


class Pair(NamedTuple):
    left: int
    right: str


class Item(msgspec.Struct):
    sku: str
    count: int = 1


class Session:
    """Something the model must never see."""


@tool
def scalars(s: str, i: int, f: float, b: bool, n: None, a: Any, u) -> None:
    """Every scalar."""


EXPECTED_scalars = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "null"},
        "a": {},
        "u": {},
    },
    "required": ["s", "i", "f", "b", "n", "a", "u"],
    "additionalProperties": False,
}


@tool
def choices(unit: Literal["c", "f"], level: Level, color: Unit = Unit.C, mixed: Literal[1, "a"] = 1) -> None:
    """Literals and enums."""


EXPECTED_choices = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "enum": ["c", "f"]},
        "level": {"type": "integer", "enum": [1, 2]},
        "color": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "mixed": {"enum": [1, "a"], "default": 1},
    },
    "required": ["unit", "level"],
    "additionalProperties": False,
}


@tool
def containers(
    names: list[str],
    seq: Sequence[int],
    unique: set[str],
    frozen: frozenset[int],
    many: tuple[float, ...],
    pair: tuple[int, str],
    table: dict[str, int],
    mapping: Mapping[str, Any],
    bare: list,  # type: ignore[type-arg]
) -> None:
    """Collections."""


EXPECTED_containers = {
    "type": "object",
    "properties": {
        "names": {"type": "array", "items": {"type": "string"}},
        "seq": {"type": "array", "items": {"type": "integer"}},
        "unique": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "frozen": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "many": {"type": "array", "items": {"type": "number"}},
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "items": False,
            "minItems": 2,
        },
        "table": {"type": "object", "additionalProperties": {"type": "integer"}},
        "mapping": {"type": "object"},
        "bare": {"type": "array", "items": {}},
    },
    "required": ["names", "seq", "unique", "frozen", "many", "pair", "table", "mapping", "bare"],
    "additionalProperties": False,
}


@tool
def optionals(
    a: int | None = None,
    b: int | str = 0,
    c: "str | None" = None,
    d: Literal["x", "y"] | None = None,
    e: Point | None = None,
) -> None:
    """Unions."""


EXPECTED_optionals = {
    "type": "object",
    "properties": {
        "a": {"type": ["integer", "null"], "default": None},
        "b": {"type": ["integer", "string"], "default": 0},
        "c": {"type": ["string", "null"], "default": None},
        "d": {"type": ["string", "null"], "enum": ["x", "y", None], "default": None},
        "e": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
    },
    "additionalProperties": False,
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
            "required": ["x"],
            "additionalProperties": False,
        }
    },
}


@tool
def structured(tree: Tree, address: Address, loose: Loose, pair: Pair, item: Item) -> None:
    """Named types go to $defs."""


EXPECTED_structured = {
    "type": "object",
    "properties": {
        "tree": {"$ref": "#/$defs/Tree"},
        "address": {"$ref": "#/$defs/Address"},
        "loose": {"$ref": "#/$defs/Loose"},
        "pair": {"$ref": "#/$defs/Pair"},
        "item": {"$ref": "#/$defs/Item"},
    },
    "required": ["tree", "address", "loose", "pair", "item"],
    "additionalProperties": False,
    "$defs": {
        "Tree": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            },
            "required": ["label"],
            "additionalProperties": False,
        },
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["street"],
            "additionalProperties": False,
        },
        "Loose": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        "Pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "items": False,
            "minItems": 2,
        },
        "Item": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "count": {"type": "integer", "default": 1}},
            "required": ["sku"],
            "additionalProperties": False,
        },
    },
}


@tool
def formats(
    when: datetime.datetime,
    day: datetime.date,
    at: datetime.time,
    span: datetime.timedelta,
    key: uuid.UUID,
    price: decimal.Decimal,
) -> None:
    """String formats."""


EXPECTED_formats = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "time"},
        "span": {"type": "string", "format": "duration"},
        "key": {"type": "string", "format": "uuid"},
        "price": {"type": "string", "format": "decimal", "pattern": DECIMAL_PATTERN},
    },
    "required": ["when", "day", "at", "span", "key", "price"],
    "additionalProperties": False,
}


@tool
def constrained(
    query: Annotated[str, "What to search for.", Param(min_length=1, max_length=200, pattern="^[a-z ]+$")],
    limit: Annotated[int, Param(ge=1, le=100, description="Page size.")] = 10,
    ratio: Annotated[float, Param(gt=0, lt=1, multiple_of=0.25)] = 0.5,
    tags: Annotated[list[str], Param(min_items=1, max_items=3, examples=[["a"]])] = ["x"],  # noqa: B006
    page: Annotated[int | None, Param(ge=0)] = None,
) -> None:
    """Search.

    Args:
        query: The docstring loses to Annotated.
        limit: So does this one.
        ratio: Share of results.
    """


EXPECTED_constrained = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What to search for.",
            "minLength": 1,
            "maxLength": 200,
            "pattern": "^[a-z ]+$",
        },
        "limit": {
            "type": "integer",
            "description": "Page size.",
            "minimum": 1,
            "maximum": 100,
            "default": 10,
        },
        "ratio": {
            "type": "number",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1,
            "multipleOf": 0.25,
            "description": "Share of results.",
            "default": 0.5,
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 3,
            "examples": [["a"]],
            "default": ["x"],
        },
        "page": {"type": ["integer", "null"], "minimum": 0, "default": None},
    },
    "required": ["query"],
    "additionalProperties": False,
}


@tool
def hidden(
    city: str,
    session: Annotated[Session, Injected],
    key: Annotated[str, Injected("api_key", secret=True)],
    call: ToolCall,
) -> dict:  # type: ignore[type-arg]
    """Injected parameters never reach the schema."""
    return {
        "city": city,
        "session": type(session).__name__,
        "key_length": len(key),
        "call": call.id,
    }


EXPECTED_hidden = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@tool
def nested_meta(
    points: list[Annotated[int, Param(ge=0)]],
    label: Annotated[str, Param(max_length=3)] | None = None,
) -> None:
    """Metadata inside containers."""


EXPECTED_nested_meta = {
    "type": "object",
    "properties": {
        "points": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "label": {"type": ["string", "null"], "maxLength": 3, "default": None},
    },
    "required": ["points"],
    "additionalProperties": False,
}
