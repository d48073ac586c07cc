"""10,000 calls under load: every call id answered exactly once, in order, with the right status.

Batches mix parallel-safe and serial tools, sync and async, through the sync and the async API,
with random failures (exceptions, `ToolError`, bad, malformed and unknown calls, repeated ids),
timeouts and cancellations (before a call starts and while it runs). Every call's outcome is
decided when the batch is built, so each result is checked against what it must be. Afterwards
no thread or task of tinytools is left running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
import time
from typing import Any

from tinytools import Dispatcher, Toolbox, ToolCall, ToolError, ToolEvent, ToolResult, tool
from tinytools._run.threads import IDLE_NAME, tool_threads

TOTAL_CALLS = 10_000
MAX_CONCURRENCY = 8


class Load:
    """State the stress tools share with the test: the run to cancel, and what ran when."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.dispatcher: Dispatcher | None = None
        self.release = threading.Event()  # lets abandoned sync tools finish after their batch
        self.active = 0
        self.serial_log: list[int] = []
        self.violations: list[str] = []

    def enter(self, serial: bool, n: int) -> None:
        with self.lock:
            if serial:
                if self.active:
                    self.violations.append(f"serial call {n} ran beside {self.active} other(s)")
                self.serial_log.append(n)
            self.active += 1

    def leave(self) -> None:
        with self.lock:
            self.active -= 1


LOAD = Load()


def behave(mode: str, n: int) -> int:
    if mode == "raise":
        raise ValueError(f"stress-detail-{n}")
    if mode == "refuse":
        raise ToolError(f"refused {n}", code="refused")
    return n * 2


@tool
def par_sync(n: int, mode: str = "ok") -> int:
    """Parallel-safe sync work."""
    LOAD.enter(False, n)
    try:
        return behave(mode, n)
    finally:
        LOAD.leave()


@tool
async def par_async(n: int, mode: str = "ok") -> int:
    """Parallel-safe async work."""
    LOAD.enter(False, n)
    try:
        await asyncio.sleep(0)
        return behave(mode, n)
    finally:
        LOAD.leave()


@tool(parallel_safe=False)
def ser_sync(n: int, mode: str = "ok") -> int:
    """Serial sync work."""
    LOAD.enter(True, n)
    try:
        return behave(mode, n)
    finally:
        LOAD.leave()


@tool(parallel_safe=False)
async def ser_async(n: int, mode: str = "ok") -> int:
    """Serial async work."""
    LOAD.enter(True, n)
    try:
        await asyncio.sleep(0)
        return behave(mode, n)
    finally:
        LOAD.leave()


@tool(timeout=0.01)
def hang_sync(n: int) -> int:
    """Outlives its timeout, then finishes when the batch is over."""
    LOAD.release.wait(5)
    return n


@tool(timeout=0.01, idempotent=True)
async def hang_async(n: int) -> int:
    """Outlives its timeout (idempotent, no retries: plainly failed)."""
    await asyncio.sleep(5)
    return n


@tool
async def sleep_async(n: int) -> int:
    """Runs until the run is cancelled."""
    await asyncio.sleep(5)
    return n


@tool
def sleep_sync(n: int) -> int:
    """Runs in a thread until the batch is over."""
    LOAD.release.wait(5)
    return n


@tool
async def cancel_now(n: int) -> int:
    """Cancel the run once the calls started before it are running."""
    await asyncio.sleep(0.005)
    assert LOAD.dispatcher is not None
    LOAD.dispatcher.cancel()
    return n


@tool(parallel_safe=False)
def cancel_serial(n: int) -> int:
    """Cancel the run between two calls."""
    assert LOAD.dispatcher is not None
    LOAD.dispatcher.cancel()
    return n


TOOLS = Toolbox(
    [
        par_sync,
        par_async,
        ser_sync,
        ser_async,
        hang_sync,
        hang_async,
        sleep_async,
        sleep_sync,
        cancel_now,
        cancel_serial,
    ],
)
SERIAL = {"ser_sync", "ser_async", "cancel_serial"}


@dataclasses.dataclass
class Planned:
    call: ToolCall
    status: str
    code: str | None
    output: Any = None


class Plan:
    """Builds one batch and what each of its calls must end in."""

    def __init__(self, rng: random.Random, first_id: int) -> None:
        self.rng = rng
        self.next_id = first_id
        self.calls: list[Planned] = []
        self.cancelled = False

    def new_id(self) -> str:
        self.next_id += 1
        return f"call-{self.next_id}"

    def add(self, name: str, arguments: Any, status: str, code: str | None, output: Any = None) -> None:
        call = ToolCall(self.new_id(), name, arguments)
        if self.cancelled:
            status, code, output = "failed", "cancelled", None
        self.calls.append(Planned(call, status, code, output))

    def random_call(self) -> None:
        n = self.next_id + 1
        roll = self.rng.random()
        name = self.rng.choice(["par_sync", "par_async", "ser_sync", "ser_async"])
        if roll < 0.70:
            self.add(name, {"n": n} if self.rng.random() < 0.5 else f'{{"n": {n}}}', "succeeded", None, n * 2)
        elif roll < 0.78:
            self.add(name, {"n": n, "mode": "raise"}, "failed", "tool_error")
        elif roll < 0.84:
            self.add(name, {"n": n, "mode": "refuse"}, "failed", "refused")
        elif roll < 0.87:
            self.add(name, '{"n": "not a number"}', "failed", "invalid_arguments")
        elif roll < 0.90:
            self.add(name, '{"n": 1,', "failed", "malformed_arguments")
        elif roll < 0.92:
            self.add("no_such_tool", "{}", "failed", "unknown_tool")
        elif roll < 0.94 and self.calls:
            earlier = self.rng.choice(self.calls).call
            call = ToolCall(earlier.id, name, {"n": n})
            self.calls.append(Planned(call, "failed", "duplicate_call_id"))
        elif roll < 0.96:
            self.add("hang_sync", {"n": n}, "outcome_unknown", "timeout")
        elif roll < 0.98:
            self.add("hang_async", {"n": n}, "failed", "timeout")
        else:
            self.add(name, {"n": n}, "succeeded", None, n * 2)

    def cancel_between(self) -> None:
        """A serial call cancels the run: it succeeds, and nothing after it starts."""
        n = self.next_id + 1
        self.add("cancel_serial", {"n": n}, "succeeded", None, n)
        self.cancelled = True

    def cancel_while_running(self) -> None:
        """Calls running when the run is cancelled may have acted: outcome_unknown."""
        for _ in range(self.rng.randint(1, MAX_CONCURRENCY - 1)):
            name = self.rng.choice(["sleep_async", "sleep_sync"])
            self.add(name, {"n": self.next_id + 1}, "outcome_unknown", "cancelled")
        n = self.next_id + 1
        self.add("cancel_now", {"n": n}, "succeeded", None, n)
        self.cancelled = True
        self.add("ser_async", {"n": self.next_id + 1}, "failed", "cancelled")  # ends the group


def plan_batch(rng: random.Random, first_id: int, size: int) -> Plan:
    plan = Plan(rng, first_id)
    roll = rng.random()
    if roll < 0.06:
        plan.add("ser_sync", {"n": first_id + 1}, "succeeded", None, (first_id + 1) * 2)  # a group boundary
        plan.cancel_while_running()
    for _ in range(size):
        plan.random_call()
        if 0.06 <= roll < 0.10 and not plan.cancelled and rng.random() < 0.1:
            plan.cancel_between()
    return plan


def run_batch(plan: Plan, use_async: bool, events: list[ToolEvent] | None) -> list[ToolResult]:
    sink = events.append if events is not None else None
    dispatcher = Dispatcher(TOOLS, max_concurrency=MAX_CONCURRENCY, on_event=sink)
    LOAD.dispatcher = dispatcher
    LOAD.release.clear()
    calls = [planned.call for planned in plan.calls]
    try:
        if use_async:
            return asyncio.run(dispatcher.adispatch_many(calls))
        return dispatcher.dispatch_many(calls)
    finally:
        LOAD.release.set()


def check_batch(plan: Plan, results: list[ToolResult], events: list[ToolEvent] | None) -> None:
    assert len(results) == len(plan.calls)
    for planned, result in zip(plan.calls, results, strict=True):
        got = (result.call_id, result.status, result.error.code if result.error else None)
        assert got == (planned.call.id, planned.status, planned.code), (planned, result)
        if planned.status == "succeeded":
            assert result.output == planned.output
        result.validate()
        if result.error is not None:
            assert "stress-detail" not in result.error.message
    if events is not None:
        completed = [event.call_id for event in events if type(event).__name__ == "ToolCompleted"]
        unique = [p.call.id for p in plan.calls if p.code != "duplicate_call_id"]
        assert sorted(completed) == sorted(unique)


def tinytools_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("tinytools:")]  # running a tool


def test_ten_thousand_calls_each_answered_once_in_order_with_the_right_status() -> None:
    rng = random.Random(20240521)
    LOAD.serial_log.clear()
    threads_before = set(threading.enumerate())
    made = 0
    serial_expected: list[int] = []
    outcomes: dict[str, int] = {}
    while made < TOTAL_CALLS:
        plan = plan_batch(rng, made, min(rng.randint(1, 40), TOTAL_CALLS - made))
        plan.calls = plan.calls[: TOTAL_CALLS - made]
        serial_expected += [
            p.call.arguments["n"] if isinstance(p.call.arguments, dict) else int(p.call.arguments[6:-1])
            for p in plan.calls
            if p.call.name in ("ser_sync", "ser_async") and p.code in (None, "tool_error", "refused")
        ]
        events: list[ToolEvent] | None = [] if rng.random() < 0.3 else None
        results = run_batch(plan, use_async=rng.random() < 0.5, events=events)
        check_batch(plan, results, events)
        for planned in plan.calls:
            outcomes[planned.code or "succeeded"] = outcomes.get(planned.code or "succeeded", 0) + 1
        made += len(plan.calls)
    assert made == TOTAL_CALLS
    assert LOAD.violations == []
    assert LOAD.serial_log == serial_expected  # serial calls ran alone, in call order
    expected_kinds = {"succeeded", "tool_error", "refused", "invalid_arguments", "malformed_arguments"}
    expected_kinds |= {"unknown_tool", "duplicate_call_id", "timeout", "cancelled"}
    assert set(outcomes) == expected_kinds, outcomes
    deadline = time.monotonic() + 5
    while tinytools_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tinytools_threads() == [] and tool_threads().busy == 0
    assert {thread for thread in threading.enumerate() if thread.name != IDLE_NAME} <= threads_before  # idle: reused


def test_no_task_is_left_after_batches_on_one_loop() -> None:
    rng = random.Random(7)

    async def main() -> set[asyncio.Task[Any]]:
        for batch in range(20):
            plan = plan_batch(rng, batch * 100, 30)
            dispatcher = Dispatcher(TOOLS, max_concurrency=MAX_CONCURRENCY)
            LOAD.dispatcher = dispatcher
            LOAD.release.clear()
            try:
                results = await dispatcher.adispatch_many([p.call for p in plan.calls])
            finally:
                LOAD.release.set()
            check_batch(plan, results, None)
        await asyncio.sleep(0)
        return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}

    assert asyncio.run(main()) == set()
