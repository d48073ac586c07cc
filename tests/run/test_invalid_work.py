"""What a call costs the validator, counted (never timed): passes of the compiled check, raises, compiles.

A valid call of a plain tool is read by the typed decoder and never meets the compiled check. An
invalid one runs the check once: its one pass checks every argument to its first failure, so it
lists every failing argument (and, for a failing list, once more per item, to list every bad
item); a failure the root function meets outside any trial or loop is recorded or returned, not
raised (one inside a list's loop raises once, to leave the loop); and nothing is compiled again
for the next bad call.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Dispatcher, Param, Toolbox, ToolCall, ToolResult, dispatch, tool

NAMES = ["query", "language", "mode", "limit", "tags", "page", "region"]
GOOD: dict[str, Any] = {
    "query": "rust",
    "language": "en",
    "limit": 10,
    "mode": "fast",
    "page": 2,
    "tags": ["a", "b"],
    "region": "us",
}
BAD: dict[str, Any] = {
    "query": 42,
    "language": None,
    "limit": 1000,
    "mode": "slow",
    "page": "two",
    "tags": ["a", 3],
    "region": 5,
}


def seven(
    query: str,
    language: str,
    mode: Literal["fast", "thorough"],
    limit: Annotated[int, Param(ge=1, le=100)],
    tags: list[str] | None = None,
    page: int | None = None,
    region: str = "eu",
) -> dict[str, Any]:
    """Search."""
    return {"query": query}


class Work:
    """Counts, while watched: frames entered by code name, and the generated checks' runs and raises."""

    def __init__(self) -> None:
        self.entered: Counter[str] = Counter()
        self.passes = 0
        """Runs of a compiled check: frames of generated code (`exec`'d, so ``<string>``) named ``validate...``."""
        self.raised = 0

    def trace(self, frame: Any, event: str, arg: Any) -> Callable[..., Any] | None:
        if event != "call":
            return None
        code = frame.f_code
        self.entered[code.co_name] += 1
        if code.co_filename == "<string>" and code.co_name.startswith("validate"):
            self.passes += 1
            return self.local
        return None

    def local(self, frame: Any, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "exception":
            self.raised += 1
        return self.local


@contextmanager
def watched() -> Iterator[Work]:
    work, before = Work(), sys.gettrace()
    sys.settrace(work.trace)
    try:
        yield work
    finally:
        sys.settrace(before)


def _box() -> tuple[Toolbox, str]:
    made = tool(seven)
    return Toolbox([made]), made.name


class _Pass:
    def before_tool(self, call: ToolCall, tool: object) -> None:
        return None


ENTRIES: dict[str, Callable[[Toolbox], Callable[[ToolCall], ToolResult]]] = {
    "dispatch": lambda box: lambda call: dispatch(call, box),
    "Dispatcher.dispatch": lambda box: Dispatcher(box).dispatch,
    "middleware + sink": lambda box: Dispatcher(box, middleware=[_Pass()], on_event=[].append).dispatch,
    "allowlist": lambda box: lambda call: Dispatcher(box).dispatch(call, allowed=[call.name]),
    "adispatch": lambda box: lambda call: asyncio.run(Dispatcher(box).adispatch(call)),
    "strict": lambda box: Dispatcher(box, strict=True).dispatch,  # its own schema, compiled the same way
}
"""Every way in that reads a call: each runs the compiled check of the schema it enforces."""


def msgspec_text(arguments: dict[str, Any]) -> bytes:
    return msgspec.json.encode(arguments)


def test_a_valid_call_never_meets_the_compiled_check() -> None:
    box, name = _box()
    dispatch(ToolCall("c0", name, {**GOOD, "limit": 1000}), box)  # compiled now
    with watched() as work:
        result = dispatch(ToolCall("c1", name, msgspec_text(GOOD)), box)
    assert result.status == "succeeded"
    assert work.passes == 0


@pytest.mark.parametrize("entry", ENTRIES)
@settings(max_examples=25, deadline=None)
@given(bad=st.sets(st.sampled_from(NAMES), min_size=1))
def test_an_invalid_call_checks_once_whatever_the_failing_arguments(entry: str, bad: set[str]) -> None:
    box, name = _box()
    send = ENTRIES[entry](box)
    arguments = {key: BAD[key] if key in bad else value for key, value in GOOD.items()}
    call = ToolCall("c1", name, msgspec_text(arguments))
    send(call)  # the first bad call compiles what the listing needs
    with watched() as work:
        result = send(call)
    assert result.error is not None and result.error.code == "invalid_arguments"
    listed = result.error.details["errors"] if len(bad) > 1 else [result.error.details]
    assert [each["parameter"] for each in listed] == [key for key in NAMES if key in bad]
    # the root check, and for a failing list, each of its items checked alone for the listing of every bad item
    inside = len(BAD["tags"]) if "tags" in bad else 0
    assert work.passes == 1 + inside
    assert work.raised == ("tags" in bad)  # only a failure inside the list's loop raises, to leave it
    assert work.entered["compile_document"] == 0
