"""Argument types whose conversion raises, and the tools that take them.

Each tool takes a class whose construction raises (a conversion fault): ``__post_init__``
raising `AssertionError` or `KeyError`, or a pydantic field validator raising `TypeError`. The
exception's text is `SECRET`, which must never reach the model or an MCP client, and a tool
records its name in `RAN` only if its body runs, which a conversion fault must prevent.
The schema tests dispatch these tools in process; ``tests/providers/mcp_model_input_server.py``
serves them over stdio.
"""

from __future__ import annotations

import dataclasses

import pydantic

from tinytools import tool

SECRET = "SECRET-DETAIL-c07b"
"""Text only the conversions' exceptions carry."""

RAN: list[str] = []
"""Names of the tools whose body ran."""


@dataclasses.dataclass
class Asserted:
    x: int

    def __post_init__(self) -> None:
        raise AssertionError(SECRET)


@dataclasses.dataclass
class LookedUp:
    x: int

    def __post_init__(self) -> None:
        raise KeyError(SECRET)


class Validated(pydantic.BaseModel):
    x: int

    @pydantic.field_validator("x")
    @classmethod
    def _check(cls, value: int) -> int:
        raise TypeError(SECRET)


@tool
def asserted(point: Asserted) -> int:
    """Take a point whose __post_init__ raises AssertionError."""
    RAN.append("asserted")
    return point.x


@tool
def looked_up(point: LookedUp) -> int:
    """Take a point whose __post_init__ raises KeyError."""
    RAN.append("looked_up")
    return point.x


@tool
def validated(model: Validated) -> int:
    """Take a model whose field validator raises TypeError."""
    RAN.append("validated")
    return model.x


FAULTS = [("asserted", "point"), ("looked_up", "point"), ("validated", "model")]
"""(tool name, parameter) of each tool above."""
