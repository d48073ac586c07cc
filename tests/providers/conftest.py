"""Helpers for the provider tests: a shared toolbox and checks against the SDKs' own types."""

from __future__ import annotations

import typing
from typing import Any

import pydantic
import pytest
import typing_extensions

from tinytools import Toolbox, tool

from .mcp_server_tools import get_weather

_REQUIRED = tuple(x for x in (typing_extensions.Required, getattr(typing, "Required", None)) if x)


def assert_typed_dict(typed_dict: Any, value: dict[str, Any]) -> None:
    """An SDK's TypedDict accepts ``value``: no undeclared key, every required key, right types."""
    hints = typing_extensions.get_type_hints(typed_dict, include_extras=True)
    assert set(value) <= set(hints), f"{typed_dict.__name__} has no {sorted(set(value) - set(hints))}"
    required = {key for key, hint in hints.items() if typing_extensions.get_origin(hint) in _REQUIRED}
    assert required <= set(value), f"{typed_dict.__name__} needs {sorted(required - set(value))}"
    pydantic.TypeAdapter(typed_dict).validate_python(value)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.fixture
def toolbox() -> Toolbox:
    return Toolbox([add, get_weather, ping])
