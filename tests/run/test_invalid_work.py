"""What a call costs the validator, counted (never timed): passes of the compiled check, raises, compiles.

A valid call of a plain tool is read by the typed decoder and never meets the compiled check. An
invalid one runs the check once over the whole object, then once over the arguments after each
failing one (`Collector`), to list every failing argument (and, for a failing list, once per item,
to list every bad item); a failure the root function meets
outside any trial is returned, not raised; and nothing is compiled again for the next bad call.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Param, Toolbox, ToolCall, dispatch, tool

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
    """Counts, while watched: frames entered by code name, and exceptions raised in generated checks."""

    def __init__(self) -> None:
        self.entered: Counter[str] = Counter()
        self.raised = 0

    @property
    def passes(self) -> int:
        """Runs of a compiled check (the generated functions are named ``validate...``)."""
        return sum(count for name, count in self.entered.items() if name.startswith("validate"))

    def trace(self, frame: Any, event: str, arg: Any) -> Callable[..., Any] | None:
        if event != "call":
            return None
        name = frame.f_code.co_name
        self.entered[name] += 1
        return self.local if frame.f_code.co_filename == "<string>" and name.startswith("validate") else None

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


def test_a_valid_call_never_meets_the_compiled_check() -> None:
    box, name = _box()
    dispatch(ToolCall("c0", name, {**GOOD, "limit": 1000}), box)  # compiled now
    with watched() as work:
        result = dispatch(ToolCall("c1", name, msgspec_text(GOOD)), box)
    assert result.status == "succeeded"
    assert work.passes == 0


def msgspec_text(arguments: dict[str, Any]) -> bytes:
    return msgspec.json.encode(arguments)


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from(NAMES), min_size=1))
def test_an_invalid_call_checks_once_and_once_more_per_failing_argument(bad: set[str]) -> None:
    box, name = _box()
    arguments = {key: BAD[key] if key in bad else value for key, value in GOOD.items()}
    call = ToolCall("c1", name, msgspec_text(arguments))
    dispatch(call, box)  # the first bad call compiles what the listing needs
    with watched() as work:
        result = dispatch(call, box)
    assert result.error is not None and result.error.code == "invalid_arguments"
    listed = result.error.details["errors"] if len(bad) > 1 else [result.error.details]
    assert [each["parameter"] for each in listed] == [key for key in NAMES if key in bad]
    # the root check, then the check of the arguments after each failing one (none after the last),
    # and for a failing list, each of its items checked alone for the listing of every bad item
    inside = len(BAD["tags"]) if "tags" in bad else 0
    assert work.passes == 1 + len(bad) - (NAMES[-1] in bad) + inside
    assert work.raised == 0  # each failure is returned by the root function it is met in
    assert work.entered["compile_document"] == 0
