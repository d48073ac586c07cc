"""Execution hooks and context: ``around_tool`` wraps the one place a tool runs, on every path.

A hook records each attempt and sets a context variable that the tool reads back, so a hook that
did not wrap the run, or a context that did not reach the thread or task the tool ran on, shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tinytools import Dispatcher, RetryableError, Tool, ToolCall, tool
from tinytools.policy import Approval, PolicyMiddleware, ToolPolicy, require_approval

from .paths import DISPATCHER_ENTRIES, run_call

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")
SEEN: list[tuple[str, str, int, str]] = []


class Recorder:
    """An execution hook: notes each run, and sets the request id for the tool to read."""

    def __init__(self, label: str = "r"):
        self.label = label

    @contextlib.contextmanager
    def around_tool(self, call: ToolCall, tool: Tool[..., Any], attempt: int) -> Iterator[None]:
        token = REQUEST.set(f"{self.label}:{call.id}")
        SEEN.append(("enter", call.id, attempt, tool.name))
        try:
            yield
        finally:
            SEEN.append(("exit", call.id, attempt, tool.name))
            REQUEST.reset(token)


@tool
def sync_read() -> str:
    """Read the request id, on whatever thread this runs."""
    return REQUEST.get()


@tool
async def async_read() -> str:
    """Read the request id on the loop."""
    return REQUEST.get()


ATTEMPTS: list[int] = []


@tool(idempotent=True, retries=2)
def flaky() -> str:
    """Fail twice, then read the request id."""
    ATTEMPTS.append(1)
    if len(ATTEMPTS) < 3:
        raise RetryableError("not yet")
    return REQUEST.get()


@pytest.fixture(autouse=True)
def _reset() -> None:
    SEEN.clear()
    ATTEMPTS.clear()


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
@pytest.mark.parametrize("name", ["sync_read", "async_read"])
def test_a_hook_wraps_the_run_and_its_context_reaches_the_tool(entry: str, name: str) -> None:
    result = run_call(entry, [sync_read, async_read], ToolCall("c1", name, {}), middleware=[Recorder()])
    assert result.output == "r:c1"
    assert [("enter", "c1", 1, name), ("exit", "c1", 1, name)] == SEEN


def test_each_attempt_is_wrapped_with_its_number() -> None:
    result = Dispatcher([flaky], middleware=[Recorder()]).dispatch(ToolCall("c1", "flaky", {}))
    assert result.output == "r:c1"
    assert [(kind, attempt) for kind, _, attempt, _ in SEEN] == [
        ("enter", 1),
        ("exit", 1),
        ("enter", 2),
        ("exit", 2),
        ("enter", 3),
        ("exit", 3),
    ]


def test_hooks_nest_in_order_and_a_thread_pool_executor_gets_the_context() -> None:
    with ThreadPoolExecutor(2) as pool:
        dispatcher = Dispatcher([sync_read], executor=pool, middleware=[Recorder("outer"), Recorder("inner")])
        assert dispatcher.dispatch(ToolCall("c1", "sync_read", {})).output == "inner:c1"
    assert [kind for kind, *_ in SEEN] == ["enter", "enter", "exit", "exit"]


def test_a_hook_that_fails_going_in_stops_the_call_before_the_tool_and_one_failing_going_out_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    @tool
    def act() -> str:
        """Act."""
        ran.append("acted")
        return "done"

    class Broken:
        def around_tool(self, call: ToolCall, tool: Tool[..., Any], attempt: int) -> Any:
            raise RuntimeError("the hook is broken")

    class LeavesBadly:
        @contextlib.contextmanager
        def around_tool(self, call: ToolCall, tool: Tool[..., Any], attempt: int) -> Iterator[None]:
            yield
            raise RuntimeError("the hook fails on its way out")

    refused = Dispatcher([act], middleware=[Broken()]).dispatch(ToolCall("c1", "act", {}))
    assert refused.error is not None and refused.error.code == "middleware_error" and ran == []
    kept = Dispatcher([act], middleware=[LeavesBadly()]).dispatch(ToolCall("c2", "act", {}))
    assert kept.output == "done" and ran == ["acted"]
    assert any("on its way out" in record.getMessage() for record in caplog.records)


def test_background_and_resumed_calls_are_wrapped_too() -> None:
    release = threading.Event()

    @tool(background=True)
    def slow() -> str:
        """Work in the background."""
        release.wait(10)
        return REQUEST.get()

    @tool(policy=ToolPolicy().with_access(approval_required=True))
    def approved() -> str:
        """Act once approved."""
        return REQUEST.get()

    later = PolicyMiddleware([require_approval(lambda request: Approval.defer("later"))])
    dispatcher = Dispatcher([slow, approved], middleware=[Recorder(), later])
    waiting = dispatcher.dispatch(ToolCall("b1", "slow", {}))
    assert waiting.pending is not None
    release.set()
    assert dispatcher.resume(waiting.pending.handle).output == "r:b1"
    parked = dispatcher.dispatch(ToolCall("a1", "approved", {}))
    assert parked.pending is not None
    assert dispatcher.resume(parked.pending.handle, {"approved": True}).output == "r:a1"
    assert {(call_id, name) for _, call_id, _, name in SEEN} == {("b1", "slow"), ("a1", "approved")}


def test_without_hooks_the_callers_context_reaches_a_pool_thread() -> None:
    async def main() -> str:
        REQUEST.set("from the caller")
        result = await Dispatcher([sync_read]).adispatch(ToolCall("c1", "sync_read", {}))
        return str(result.output)

    assert asyncio.run(main()) == "from the caller"
    assert SEEN == []
