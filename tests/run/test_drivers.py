"""The drivers: which thread a tool runs on, what ends a wait, and what a call leaves behind."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import anyio
import pytest

from tinytools import (
    Dispatcher,
    Progress,
    Toolbox,
    ToolCall,
    ToolCompleted,
    ToolEvent,
    ToolResult,
    adispatch,
    strays,
    tool,
)

from .paths import DISPATCHER_ENTRIES, ENTRIES, GENEROUS, RELEASE, VARIANTS, options, run_call, run_in_thread, summary

# A timed-out sync tool gives its concurrency slot back


@pytest.mark.parametrize("later", ["quick_batch", "quick_tool_with_timeout"])
@pytest.mark.parametrize("hung_as", ["one_batch", "one_after_the_other"])
def test_timed_out_sync_tools_do_not_keep_their_concurrency_slots(hung_as: str, later: str) -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hangs() -> str:
        """Blocks until the test ends."""
        release.wait(RELEASE)
        return "late"

    @tool
    def quick(n: int) -> int:
        """Answers at once."""
        return n

    @tool(timeout=3)
    def quick_bounded(n: int) -> int:
        """Answers at once, under a timeout (so it runs in a thread)."""
        return n

    dispatcher = Dispatcher([hangs, quick, quick_bounded], max_concurrency=2)
    try:
        hung = [ToolCall("h1", "hangs", {}), ToolCall("h2", "hangs", {})]
        if hung_as == "one_batch":
            hung_results = dispatcher.dispatch_many(hung)
        else:
            hung_results = [dispatcher.dispatch(call) for call in hung]
        assert summary(hung_results) == [("h1", "outcome_unknown", "timeout"), ("h2", "outcome_unknown", "timeout")]

        if later == "quick_batch":
            calls = [ToolCall("q1", "quick", {"n": 1}), ToolCall("q2", "quick", {"n": 2})]
            watched = run_in_thread(lambda: dispatcher.dispatch_many(calls))
        else:
            watched = run_in_thread(lambda: [dispatcher.dispatch(ToolCall("q1", "quick_bounded", {"n": 1}))])
        assert watched.finished, "a later threaded call blocked: the hung calls still hold the slots"
        results = watched.value()
        assert [(r.call_id, r.status, r.output) for r in results] == [
            ("q1", "succeeded", 1),
            *([("q2", "succeeded", 2)] if later == "quick_batch" else []),
        ]
    finally:
        release.set()


# An async tool that swallows cancellation still times out


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_async_tool_that_swallows_cancellation_still_ends_in_a_timeout(entry: str) -> None:
    release = threading.Event()
    ended = threading.Event()
    arrived = threading.Event()
    got: dict[str, Any] = {}

    @tool(timeout=0.2)
    async def stubborn() -> str:
        """Ignores cancellation until the test lets it go."""
        try:
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):  # swallowed: it keeps running
                    await asyncio.sleep(0.01)
            return "finished late"
        finally:
            ended.set()

    call = ToolCall("c1", "stubborn", {})

    def arrive(result: ToolResult) -> None:
        got["result"], got["tool_had_ended"] = result, ended.is_set()
        arrived.set()

    def sync_entry() -> None:
        arrive(run_call(entry, [stubborn], call))

    async def async_entry() -> None:  # recorded inside the loop: asyncio.run may wait for leftovers
        if entry == "adispatch":
            arrive(await adispatch(call, [stubborn]))
        elif entry == "Dispatcher.adispatch":
            arrive(await Dispatcher([stubborn]).adispatch(call))
        else:
            (result,) = await Dispatcher([stubborn]).adispatch_many([call])
            arrive(result)

    is_async = entry in ("adispatch", "Dispatcher.adispatch", "Dispatcher.adispatch_many")
    watched = run_in_thread(lambda: asyncio.run(async_entry()) if is_async else sync_entry(), timeout=0)
    try:
        assert arrived.wait(GENEROUS), "no result came back while the tool was still running"
        result = got["result"]
        assert got["tool_had_ended"] is False, "the result waited for the tool to end"
        assert summary([result]) == [("c1", "outcome_unknown", "timeout")]
    finally:
        release.set()
        if is_async:  # from sync code the left task waits on the calling thread's loop, which has stopped
            ended.wait(RELEASE)
        watched.join()


@pytest.mark.parametrize("entry", ["dispatch", "Dispatcher.dispatch"])
def test_from_sync_code_a_stubborn_async_tool_is_left_after_the_grace_as_a_counted_stray(
    entry: str, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    async def deaf() -> str:
        """Ignores cancellation until the test lets it go."""
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.01)
        return "finished late"

    try:
        with caplog.at_level("WARNING", logger="tinytools"):
            result = run_call(entry, [deaf], ToolCall("c1", "deaf", {}))
        assert summary([result]) == [("c1", "outcome_unknown", "timeout")]
        assert strays().tasks >= 1  # this one at least (an earlier one ends when its loop runs again)
        messages = [record.getMessage() for record in caplog.records]
        assert any("'deaf' is still running in a task after its call ended" in text for text in messages)
        assert not any("left pending" in text for text in messages)  # not waited for a second time
    finally:
        release.set()


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_sync_tool_left_running_past_its_timeout_is_a_counted_stray_thread_until_it_returns(entry: str) -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        """Blocks until the test lets it go."""
        release.wait(GENEROUS)
        return "finished late"

    before = strays()
    try:
        result = run_call(entry, [stuck], ToolCall("c1", "stuck", {}))
        assert summary([result]) == [("c1", "outcome_unknown", "timeout")]
        during = strays()
        assert during.threads == before.threads + 1 and during.busy_threads >= during.threads
    finally:
        release.set()
    deadline = time.monotonic() + GENEROUS
    while strays().threads > before.threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert strays().threads == before.threads


# No event of a call arrives after its ToolCompleted


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_no_event_of_a_timed_out_call_arrives_after_its_tool_completed(entry: str) -> None:
    release = threading.Event()
    ended = threading.Event()
    events: list[ToolEvent] = []

    @tool(timeout=0.2)
    def reports(progress: Progress) -> str:
        """Reports progress before and after it times out."""
        progress.progress(1, 3, "started")
        release.wait(RELEASE)
        progress.progress(2, 3, "after the timeout")
        progress.emit("log", "still going")
        ended.set()
        return "late"

    @tool
    def quick(progress: Progress) -> str:
        """A later call, which gives the event loop a turn."""
        return "quick"

    dispatcher = Dispatcher([reports, quick], on_event=events.append)
    call = ToolCall("c1", "reports", {})
    try:
        if entry in ("Dispatcher.dispatch", "Dispatcher.dispatch_many"):
            result = run_call(entry, [], call, dispatcher=dispatcher)
            release.set()
            assert ended.wait(RELEASE), "the tool's thread did not finish"
            dispatcher.dispatch(ToolCall("later", "quick", {}))  # runs this thread's loop again
        else:

            async def main() -> ToolResult:
                if entry == "Dispatcher.adispatch":
                    result = await dispatcher.adispatch(call)
                else:
                    (result,) = await dispatcher.adispatch_many([call])
                release.set()
                assert await asyncio.to_thread(ended.wait, RELEASE), "the tool's thread did not finish"
                await dispatcher.adispatch(ToolCall("later", "quick", {}))
                await asyncio.sleep(0.1)  # let anything scheduled from the tool's thread be delivered
                return result

            result = asyncio.run(main())
    finally:
        release.set()
    assert summary([result]) == [("c1", "outcome_unknown", "timeout")]
    completed: set[str] = set()
    late = []
    for event in events:
        if event.call_id in completed:
            late.append(type(event).__name__)
        if isinstance(event, ToolCompleted):
            completed.add(event.call_id)
    assert late == [], f"events after the call's ToolCompleted: {late}"


# From async entry points a sync tool never runs on the loop's thread


ASYNC_PATHS = [
    ("adispatch", "plain"),
    *(("Dispatcher.adispatch", variant) for variant in VARIANTS),
    ("Dispatcher.adispatch_many", "plain"),
]


@pytest.mark.parametrize(("entry", "variant"), ASYNC_PATHS)
def test_sync_tools_called_from_async_code_run_off_the_loop_and_concurrently(entry: str, variant: str) -> None:
    barrier = threading.Barrier(3, timeout=5)
    threads: list[int] = []

    @tool
    def meet() -> str:
        """Waits until three calls have arrived."""
        threads.append(threading.get_ident())
        barrier.wait()
        return "met"

    async def main() -> tuple[int, list[ToolResult]]:
        calls = [ToolCall(f"c{n}", "meet", {}) for n in range(3)]
        dispatcher = Dispatcher([meet], **options(variant))
        if entry == "adispatch":
            results = await asyncio.gather(*(adispatch(call, [meet]) for call in calls))
        elif entry == "Dispatcher.adispatch":
            results = await asyncio.gather(*(dispatcher.adispatch(call) for call in calls))
        else:  # three batches of one call each, at the same time
            batches = await asyncio.gather(*(dispatcher.adispatch_many([call]) for call in calls))
            results = [result for batch in batches for result in batch]
        return threading.get_ident(), list(results)

    watched = run_in_thread(lambda: asyncio.run(main()), timeout=RELEASE)
    try:
        assert watched.finished, "the calls deadlocked"
        loop_thread, results = watched.value()
        assert [(r.call_id, r.status, r.output) for r in results] == [(f"c{n}", "succeeded", "met") for n in range(3)]
        assert loop_thread not in threads, "a sync tool ran on the event loop's thread"
    finally:
        barrier.abort()


def test_mcp_server_runs_sync_tools_off_the_loop_and_concurrently() -> None:
    from mcp import Client

    from tinytools.providers import mcp as mcp_provider

    barrier = threading.Barrier(3, timeout=5)
    threads: list[int] = []

    @tool
    def meet() -> str:
        """Waits until three calls have arrived."""
        threads.append(threading.get_ident())
        barrier.wait()
        return "met"

    async def main() -> tuple[int, list[Any]]:
        async with Client(mcp_provider.build_server(Toolbox([meet])), read_timeout_seconds=20) as client:
            results: list[Any] = [None] * 3

            async def one(index: int) -> None:
                results[index] = await client.call_tool("meet", {})

            async with anyio.create_task_group() as group:
                for index in range(3):
                    group.start_soon(one, index)
            return threading.get_ident(), results

    watched = run_in_thread(lambda: anyio.run(main), timeout=30)
    try:
        assert watched.finished, "the MCP calls deadlocked"
        loop_thread, results = watched.value()
        assert [(r.is_error, r.content[0].text) for r in results] == [(False, "met")] * 3
        assert loop_thread not in threads, "a sync tool ran on the server's event loop thread"
    finally:
        barrier.abort()
