from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tinytools import (
    CancellationToken,
    Dispatcher,
    Invocation,
    Progress,
    RunContext,
    Stores,
    ToolCall,
    ToolCompleted,
    ToolEvent,
    ToolOutputChunk,
    ToolProgress,
    ToolStarted,
    dispatch,
    tool,
)

CONTEXT = RunContext(run_id="run-7", session_id="s-1", agent_id="planner", workspace_id="ws-3", actor="alice")


@tool
def whoami(invocation: Invocation) -> dict:
    return {
        "tool": invocation.tool_name,
        "call": invocation.call.id,
        "run": invocation.run_id,
        "step": invocation.step_id,
        "session": invocation.session_id,
        "agent": invocation.agent_id,
        "workspace": invocation.workspace_id,
        "actor": invocation.actor,
        "attempt": invocation.attempt,
        "budget": invocation.max_inline_output_bytes,
        "time_left": invocation.time_left,
    }


@tool
async def awhoami(invocation: Invocation) -> str | None:
    await asyncio.sleep(0)
    return invocation.actor


def test_invocation_carries_the_applications_identity() -> None:
    from tinytools import Limits

    dispatcher = Dispatcher([whoami], context=CONTEXT, limits=Limits(deadline=60), max_inline_output_bytes=4096)
    out = dispatcher.dispatch(ToolCall("c1", "whoami", "{}"), step_id="turn-2").output
    assert {k: v for k, v in out.items() if k != "time_left"} == {
        "tool": "whoami",
        "call": "c1",
        "run": "run-7",
        "step": "turn-2",
        "session": "s-1",
        "agent": "planner",
        "workspace": "ws-3",
        "actor": "alice",
        "attempt": 1,
        "budget": 4096,
    }
    assert 0 < out["time_left"] <= 60


def test_async_tool_and_batch_step_ids() -> None:
    dispatcher = Dispatcher([whoami, awhoami], context=CONTEXT)
    results = dispatcher.dispatch_many([ToolCall("a", "whoami", "{}"), ToolCall("b", "awhoami", "{}")])
    assert results[1].output == "alice"
    first_step = results[0].output["step"]
    again = dispatcher.dispatch_many([ToolCall("c", "whoami", "{}"), ToolCall("d", "whoami", "{}")])
    steps = {r.output["step"] for r in again}
    assert len(steps) == 1 and first_step not in steps


def test_model_cannot_set_identity() -> None:
    result = Dispatcher([whoami], context=CONTEXT).dispatch(ToolCall("c", "whoami", '{"run_id": "forged"}'))
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert whoami.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}


def test_without_a_dispatcher_the_values_are_stand_alone() -> None:
    out = dispatch(ToolCall("c", "whoami", "{}"), [whoami]).output
    assert (out["tool"], out["call"], out["run"], out["attempt"]) == ("whoami", "c", None, 1)


def test_attempt_counts_retries() -> None:
    seen: list[int] = []

    @tool(idempotent=True, retries=2)
    def flaky(invocation: Invocation) -> int:
        from tinytools import RetryableError

        seen.append(invocation.attempt)
        if invocation.attempt < 3:
            raise RetryableError("again")
        return invocation.attempt

    assert Dispatcher([flaky]).dispatch(ToolCall("c", "flaky", "{}")).output == 3
    assert seen == [1, 2, 3]


def test_stores_by_type() -> None:
    @tool
    def remember(fact: str, stores: Stores) -> int:
        stores["memory"].append(fact)
        return len(stores["memory"])

    memory: list[str] = []
    dispatcher = Dispatcher([remember], stores={"memory": memory})
    assert dispatcher.dispatch(ToolCall("c", "remember", '{"fact": "x"}')).output == 1
    assert memory == ["x"]

    result = dispatcher.dispatch(ToolCall("c", "remember", '{"fact": "y"}'))
    assert result.output == 2
    with pytest.raises(KeyError, match="registered: memory"):
        Stores({"memory": []})["nope"]


def test_timeout_cancels_the_calls_token() -> None:
    observed: list[str | None] = []
    done = threading.Event()

    @tool(timeout=0.05)
    def patient(token: CancellationToken) -> None:
        token.wait(5)
        observed.append(token.reason)
        done.set()

    result = Dispatcher([patient]).dispatch(ToolCall("c", "patient", "{}"))
    assert result.status == "outcome_unknown"
    assert done.wait(5)
    assert observed == ["timeout"]


def progress_tools() -> list[Any]:
    @tool
    def crunch(n: int, progress: Progress) -> int:
        for step in range(1, 4):
            time.sleep(0.002)
            progress.progress(step, total=3, message=f"{n}:{step}")
        progress.emit("row", {"n": n})
        return n

    @tool
    async def acrunch(n: int, progress: Progress) -> int:
        for step in range(1, 4):
            await asyncio.sleep(0.001)
            progress.progress(step, total=3)
        progress.emit("row", {"n": n})
        return n

    return [crunch, acrunch]


def test_progress_events_in_order_under_concurrency() -> None:
    events: list[ToolEvent] = []
    dispatcher = Dispatcher(progress_tools(), on_event=events.append, max_concurrency=6)
    calls = [ToolCall(f"c{i}", "crunch" if i % 2 else "acrunch", {"n": i}) for i in range(8)]
    results = dispatcher.dispatch_many(calls)
    assert [r.output for r in results] == list(range(8))
    for call in calls:
        mine = [e for e in events if e.call_id == call.id]
        kinds = [type(e).__name__ for e in mine]
        assert kinds == ["ToolStarted", *["ToolProgress"] * 3, "ToolOutputChunk", "ToolCompleted"]
        steps = [e.done for e in mine if isinstance(e, ToolProgress)]
        assert steps == [1, 2, 3]
        chunk = next(e for e in mine if isinstance(e, ToolOutputChunk))
        assert (chunk.kind, chunk.data) == ("row", {"n": int(call.id[1:])})
    assert isinstance(events[0], ToolStarted) and isinstance(events[-1], ToolCompleted)
    first_completed = next(i for i, e in enumerate(events) if isinstance(e, ToolCompleted))
    assert any(isinstance(e, ToolProgress) for e in events[first_completed:])  # calls interleaved


def test_progress_without_a_sink_costs_nothing() -> None:
    crunch = progress_tools()[0]
    assert Dispatcher([crunch]).dispatch(ToolCall("c", "crunch", {"n": 1})).output == 1
    assert dispatch(ToolCall("c", "crunch", {"n": 2}), [crunch]).output == 2


def test_progress_with_an_async_queue_sink() -> None:
    async def main() -> list[ToolEvent]:
        queue: asyncio.Queue[ToolEvent] = asyncio.Queue()
        await Dispatcher(progress_tools(), on_event=queue).adispatch(ToolCall("c", "crunch", {"n": 5}))
        return [queue.get_nowait() for _ in range(queue.qsize())]

    kinds = [type(e).__name__ for e in asyncio.run(main())]
    assert kinds == ["ToolStarted", *["ToolProgress"] * 3, "ToolOutputChunk", "ToolCompleted"]


def test_a_child_token_follows_its_parent_without_a_reference_cycle() -> None:
    import gc

    from tinytools import CancellationToken

    parent = CancellationToken()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(10):
            CancellationToken(parent=parent)  # never detached: the call ended without telling
        run = CancellationToken()
        CancellationToken(parent=run)
        del run  # a dispatcher dropped with its calls' tokens
        gc.collect()
        assert [item for item in gc.garbage if isinstance(item, CancellationToken)] == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    child = CancellationToken(parent=parent)
    parent.cancel("timeout")
    assert child.cancelled and child.reason == "timeout"
