from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import tinytools
from tinytools import (
    ArgumentsError,
    CancellationToken,
    Dispatcher,
    InvalidToolArgs,
    Limits,
    RetryableError,
    Rewrite,
    Toolbox,
    ToolCall,
    ToolCompleted,
    ToolDenied,
    ToolEvent,
    ToolFailed,
    ToolNotFound,
    ToolResult,
    ToolStarted,
    UnknownToolCall,
    adispatch_many,
    dispatch,
    dispatch_many,
    tool,
)
from tinytools._run import threads as threads_module


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def echo_tool() -> Any:
    @tool
    def echo(text: str) -> str:
        return text

    return echo


def make(*tools: Any, **options: Any) -> tuple[Dispatcher, list[ToolEvent]]:
    events: list[ToolEvent] = []
    return Dispatcher(Toolbox(tools), on_event=events.append, **options), events


def kinds(events: list[ToolEvent]) -> list[str]:
    return [type(event).__name__ for event in events]


def test_plain_dispatcher_matches_module_dispatch() -> None:
    box = Toolbox([add])
    plain = Dispatcher(box)
    for arguments in ('{"a": 1, "b": 2}', '{"a": "x"}', "{", "{}"):
        call = ToolCall("c", "add", arguments)
        ours, theirs = plain.dispatch(call), dispatch(call, box)
        assert (ours.status, ours.output, ours.error and ours.error.code) == (
            theirs.status,
            theirs.output,
            theirs.error and theirs.error.code,
        )


def test_events_in_order_for_a_success() -> None:
    dispatcher, events = make(add)
    result = dispatcher.dispatch(ToolCall("c1", "add", '{"a": 1, "b": 2}'))
    assert result.output == 3
    assert kinds(events) == ["ToolStarted", "ToolCompleted"]
    started, completed = events
    assert isinstance(started, ToolStarted) and started.arguments == {"a": 1, "b": 2}
    assert isinstance(completed, ToolCompleted) and completed.result is result
    assert all(event.call_id == "c1" and event.name == "add" for event in events)
    assert completed.elapsed >= started.elapsed >= 0


def test_alias_maps_to_canonical_name() -> None:
    box = Toolbox([add], aliases={"sum": "add"})
    dispatcher, events = make(*box)
    dispatcher.toolbox.alias("plus", "add")
    result = dispatcher.dispatch(ToolCall("c", "plus", '{"a": 1, "b": 1}'))
    assert (result.name, result.output) == ("add", 2)
    assert events[-1].name == "add"


def test_alias_cannot_shadow_a_tool() -> None:
    from tinytools import ToolDefinitionError

    with pytest.raises(ToolDefinitionError):
        Toolbox([add, echo_tool()], aliases={"ECHO": "add"})


def test_not_allowed_this_turn() -> None:
    ran: list[int] = []

    @tool
    def counted(a: int) -> int:
        ran.append(a)
        return a

    dispatcher, events = make(counted, echo_tool())
    result = dispatcher.dispatch(ToolCall("c", "counted", '{"a": 1}'), allowed=["echo"])
    assert result.error is not None and result.error.code == "tool_not_allowed"
    assert ran == []
    assert isinstance(events[0], ToolDenied) and events[0].rule == "tool_not_allowed"
    assert dispatcher.dispatch(ToolCall("d", "echo", '{"text": "hi"}'), allowed=["echo"]).output == "hi"
    assert dispatcher.dispatch(ToolCall("e", "counted", '{"a": 2}'), allowed=["counted"]).output == 2
    assert ran == [2]


def test_select_by_state_and_names() -> None:
    @tool(enabled=lambda state: state["admin"])
    def wipe() -> None: ...

    box = Toolbox([add, wipe], aliases={"sum": "add"})
    assert box.select(state={"admin": False}).names == ["add"]
    assert box.select(state={"admin": True}).names == ["add", "wipe"]
    assert box.select(["sum"], state={"admin": True}).names == ["add"]
    assert box.select(["add"]).aliases == {"sum": "add"}
    turn = box.select(state={"admin": False})
    refused = Dispatcher(box).dispatch(ToolCall("c", "wipe", "{}"), allowed=turn.names)
    assert refused.error is not None and refused.error.code == "tool_not_allowed"


def test_unknown_tool_return_error_emits_event() -> None:
    dispatcher, events = make(add)
    result = dispatcher.dispatch(ToolCall("c", "ad", '{"a": 1}'))
    assert result.error is not None and result.error.code == "unknown_tool"
    event = events[0]
    assert isinstance(event, UnknownToolCall)
    assert (event.requested_name, event.arguments, event.recovery) == ("ad", '{"a": 1}', "tool_error")


def test_unknown_tool_fail_raises() -> None:
    dispatcher = Dispatcher([add], unknown_tool="fail")
    with pytest.raises(ToolNotFound) as info:
        dispatcher.dispatch(ToolCall("c", "nope", "{}"))
    assert info.value.name == "nope" and info.value.available == ["add"]


def test_rewrite_to_fallback_and_missing_fallback() -> None:
    @tool
    def catch_all() -> str:
        return "fallback ran"

    events: list[ToolEvent] = []
    dispatcher = Dispatcher([add, catch_all], unknown_tool=Rewrite("catch_all"), on_event=events.append)
    result = dispatcher.dispatch(ToolCall("c", "mystery", "{}"))
    assert (result.name, result.output) == ("catch_all", "fallback ran")
    assert isinstance(events[0], UnknownToolCall) and events[0].recovery == "rewrite:catch_all"
    broken = Dispatcher([add], unknown_tool=Rewrite("missing"))
    missing = broken.dispatch(ToolCall("c", "mystery", "{}"))
    assert missing.error is not None and missing.error.code == "unknown_tool"


def test_invalid_args_policies() -> None:
    dispatcher, events = make(add)
    result = dispatcher.dispatch(ToolCall("c", "add", '{"a": "one", "b": 2}'))
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert isinstance(events[0], InvalidToolArgs) and events[0].error.pointer == "/a"
    assert events[0].recovery == "tool_error"
    strict = Dispatcher([add], invalid_args="fail")
    with pytest.raises(ArgumentsError) as info:
        strict.dispatch(ToolCall("c", "add", '{"a": "one", "b": 2}'))
    assert (info.value.tool, info.value.pointer) == ("add", "/a")
    malformed = strict.dispatch(ToolCall("c", "add", '{"a": '))
    assert malformed.error is not None and malformed.error.code == "malformed_arguments"


def test_budget_counts_recoveries() -> None:
    dispatcher = Dispatcher([add], limits=Limits(max_tool_calls=3))
    codes = []
    for arguments, name in (
        ("{", "add"),
        ("{}", "nope"),
        ('{"a": 1, "b": 1}', "add"),
        ('{"a": 1, "b": 1}', "add"),
    ):
        result = dispatcher.dispatch(ToolCall("c", name, arguments))
        codes.append(result.error.code if result.error else "ok")
    assert codes == ["malformed_arguments", "unknown_tool", "ok", "budget_exhausted"]


def test_deadline() -> None:
    dispatcher, events = make(add, limits=Limits(deadline=0.0))
    result = dispatcher.dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}'))
    assert result.error is not None and result.error.code == "deadline_exceeded"
    assert isinstance(events[0], ToolDenied) and events[0].rule == "deadline_exceeded"


def test_argument_size_is_checked_before_decoding() -> None:
    dispatcher = Dispatcher([add], limits=Limits(max_argument_bytes=64))
    big = '{"a": 1, "b": 1, "pad": "' + "x" * 100 + '"'  # also malformed: size wins
    result = dispatcher.dispatch(ToolCall("c", "add", big))
    assert result.error is not None and result.error.code == "arguments_too_large"
    assert dispatcher.dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}')).output == 2
    multibyte = '{"a": 1, "b": 1, "s": "' + "é" * 30 + '"}'  # 30 chars, 60 bytes
    assert (
        Dispatcher([add], limits=Limits(max_argument_bytes=70)).dispatch(ToolCall("c", "add", multibyte)).error.code
        == "arguments_too_large"
    )  # type: ignore[union-attr]


def test_cancel_before_calls() -> None:
    dispatcher = Dispatcher([add])
    dispatcher.cancel()
    result = dispatcher.dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}'))
    assert result.error is not None and result.error.code == "cancelled"


def test_cancel_reaches_a_sync_tool_through_its_token() -> None:
    started = threading.Event()
    stopped: list[bool] = []

    @tool(timeout=30)
    def wait_for_cancel(token: CancellationToken) -> str:
        started.set()
        stopped.append(token.wait(10))
        return "stopped early"

    dispatcher = Dispatcher([wait_for_cancel])
    threading.Timer(0.05, lambda: started.wait(5) and dispatcher.cancel()).start()
    result = dispatcher.dispatch(ToolCall("c", "wait_for_cancel", "{}"))
    assert result.status == "outcome_unknown"
    assert result.error is not None and result.error.code == "cancelled"
    for _ in range(200):
        if stopped:
            break
        time.sleep(0.01)
    assert stopped == [True]


@pytest.mark.parametrize("path", ["express", "pipeline"])
def test_cancel_while_an_async_tool_runs(path: str) -> None:
    @tool
    async def slow() -> str:
        await asyncio.sleep(10)
        return "never"

    async def main() -> ToolResult:
        dispatcher = Dispatcher([slow], on_event=(lambda event: None) if path == "pipeline" else None)
        asyncio.get_running_loop().call_later(0.05, dispatcher.cancel)
        return await dispatcher.adispatch(ToolCall("c", "slow", "{}"))

    result = asyncio.run(main())
    assert result.status == "outcome_unknown"
    assert result.error is not None and result.error.code == "cancelled"


def test_an_async_tools_call_runs_in_the_callers_task_with_no_task_or_thread_of_its_own() -> None:
    seen: list[tuple[Any, int, int]] = []

    @tool
    async def look() -> int:
        seen.append((asyncio.current_task(), len(asyncio.all_tasks()), threading.active_count()))
        return 1

    async def main() -> list[ToolResult]:
        here = (asyncio.current_task(), len(asyncio.all_tasks()), threading.active_count())
        results = [await Dispatcher([look]).adispatch(ToolCall("c", "look", "{}"))]
        results.append(await tinytools.adispatch(ToolCall("d", "look", "{}"), look))
        assert seen == [here, here]
        return results

    assert [r.output for r in asyncio.run(main())] == [1, 1]


def _thread_wakeups() -> int:
    """Times this process's threads have blocked and been woken since they started (Linux's count)."""
    total = 0
    for status in Path("/proc/self/task").glob("*/status"):
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            total += sum(
                int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("voluntary")
            )
    return total


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts a Linux kernel's context switches")
def test_a_sync_tool_from_adispatch_wakes_its_thread_and_the_loop_once_each_per_call() -> None:
    # one wake-up each way: the pool thread's (its inbox) and the loop's (call_soon_threadsafe); a
    # bare run_in_executor takes two to four here, with its idle threads woken in turn
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    dispatcher = Dispatcher([add])
    calls = 300

    async def main() -> float:
        for n in range(20):  # the plan made, a pool thread started
            await dispatcher.adispatch(ToolCall(f"w{n}", "add", '{"a": 1, "b": 2}'))
        before = _thread_wakeups()
        for n in range(calls):
            result = await dispatcher.adispatch(ToolCall(f"c{n}", "add", '{"a": 1, "b": 2}'))
            assert result.output == 3
        return (_thread_wakeups() - before) / calls

    assert asyncio.run(main()) <= 3.0


def test_a_thread_that_cannot_start_refuses_the_call_and_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    # a process at its thread limit: the OS refuses a new thread, as threading reports it
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    monkeypatch.setattr(threads_module, "_THREADS", threads_module.ToolThreads())  # no idle thread to reuse
    dispatcher = Dispatcher([add])
    registered = len(dispatcher.token._callbacks)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    async def main() -> list[ToolResult]:
        with monkeypatch.context() as patched:
            patched.setattr(threading.Thread, "start", refuse)
            return [await dispatcher.adispatch(ToolCall(f"c{n}", "add", '{"a": 1, "b": 2}')) for n in range(3)]

    results = asyncio.run(main())  # the first call plans (the pipeline), the others take the express path
    assert [(r.call_id, r.status, r.error and r.error.code) for r in results] == [
        (f"c{n}", "failed", "executor_unavailable") for n in range(3)
    ]
    assert threads_module.tool_threads().busy == 0
    assert len(dispatcher.token._callbacks) == registered  # no waiter's cancellation left on the run
    dispatcher.cancel()  # nothing left to wake on the closed loop
    assert asyncio.run(dispatcher.adispatch(ToolCall("d", "add", '{"a": 1, "b": 2}'))).error.code == "cancelled"


def test_a_caller_cancelling_its_own_task_gets_cancelled_error_from_the_express_path() -> None:
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    async def main() -> None:
        call = asyncio.ensure_future(Dispatcher([wait]).adispatch(ToolCall("c", "wait", "{}")))
        await started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())


def test_timeout_of_a_non_idempotent_tool_is_outcome_unknown() -> None:
    calls: list[int] = []

    @tool(timeout=0.05, retries=3)
    async def charge() -> None:
        calls.append(1)
        await asyncio.sleep(5)

    dispatcher, events = make(charge)
    result = dispatcher.dispatch(ToolCall("c", "charge", "{}"))
    assert result.status == "outcome_unknown"
    assert result.error is not None and result.error.code == "timeout"
    assert calls == [1]  # never retried
    assert kinds(events) == ["ToolStarted", "ToolFailed", "ToolCompleted"]


@pytest.mark.parametrize("first", ["timeout", "executor"])
def test_a_call_whose_retry_succeeds_reports_no_failure(first: str) -> None:
    # an idempotent tool's first attempt fails (its timeout, a lost worker), the second succeeds:
    # the call succeeded, so no ToolFailed reaches the sink (the first attempt's was reported)
    from tinytools.executors import ExecutorError

    attempts: list[int] = []

    @tool(timeout=0.2, retries=2, idempotent=True)
    def flaky(x: int) -> int:
        """Fail once, then answer."""
        attempts.append(x)
        if len(attempts) == 1:
            if first == "timeout":
                time.sleep(0.5)
            else:
                raise ExecutorError("worker_lost", "the worker died", may_have_acted=True)
        return x

    dispatcher, events = make(flaky)
    result = dispatcher.dispatch(ToolCall("c", "flaky", '{"x": 7}'))
    assert result.status == "succeeded" and result.output == 7 and len(attempts) == 2
    assert kinds(events) == ["ToolStarted", "ToolStarted", "ToolCompleted"]


def test_sync_tool_timeout_runs_in_a_thread() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        release.wait(5)
        return "late"

    result = Dispatcher([stuck]).dispatch(ToolCall("c", "stuck", "{}"))
    release.set()
    assert result.status == "outcome_unknown"
    assert "may still have acted" in result.error.message  # type: ignore[union-attr]


def test_idempotent_tool_retries_timeouts_then_fails() -> None:
    attempts: list[int] = []

    @tool(timeout=0.02, idempotent=True, retries=2)
    async def lookup() -> None:
        attempts.append(1)
        await asyncio.sleep(5)

    dispatcher, events = make(lookup)
    result = dispatcher.dispatch(ToolCall("c", "lookup", "{}"))
    assert result.status == "failed" and result.error is not None and result.error.code == "timeout"
    assert len(attempts) == 3
    assert [e.attempt for e in events if isinstance(e, ToolStarted)] == [1, 2, 3]


def test_retryable_error() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, retries=3)
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RetryableError("busy, try again")
        return "ok"

    assert Dispatcher([flaky]).dispatch(ToolCall("c", "flaky", "{}")).output == "ok"
    assert len(attempts) == 3

    once: list[int] = []

    @tool(retries=3)
    def not_idempotent() -> None:
        once.append(1)
        raise RetryableError("busy")

    result = Dispatcher([not_idempotent]).dispatch(ToolCall("c", "not_idempotent", "{}"))
    assert result.error is not None and result.error.message == "busy"
    assert once == [1]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def before_tool(self, call: ToolCall, tool: Any) -> None:
        self.seen.append(("before", call.id))

    async def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> None:
        self.seen.append(("after", call.id))


def test_middleware_order_and_async() -> None:
    first, second = Recorder(), Recorder()
    dispatcher = Dispatcher([add], middleware=[first, second])
    assert dispatcher.dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}')).output == 2
    assert first.seen == second.seen == [("before", "c"), ("after", "c")]


def test_middleware_rewrites_call_and_it_is_validated_again() -> None:
    class Double:
        def before_tool(self, call: ToolCall, tool: Any) -> ToolCall:
            return ToolCall(call.id, call.name, {"a": "not a number", "b": 1})

    result = Dispatcher([add], middleware=[Double()]).dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}'))
    assert result.error is not None and result.error.code == "middleware_error"  # the rewrite is not the model's

    seen: list[Any] = []

    class Fix:
        def before_tool(self, call: ToolCall, tool: Any) -> ToolCall:
            seen.append(call.arguments)
            return ToolCall(call.id, call.name, {"a": 40, "b": 2})

    fixing = Dispatcher([add], middleware=[Fix()])
    assert fixing.dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}')).output == 42
    invalid = fixing.dispatch(ToolCall("c", "add", "{}"))  # middleware sees validated calls only
    assert invalid.error is not None and invalid.error.code == "invalid_arguments"
    assert seen == ['{"a": 1, "b": 1}']


def test_middleware_short_circuits_and_replaces() -> None:
    ran: list[int] = []

    @tool
    def act() -> int:
        ran.append(1)
        return 1

    class Deny:
        def before_tool(self, call: ToolCall, tool: Any) -> ToolResult:
            return ToolResult(call_id=call.id, name=tool.name, status="succeeded", output="cached")

    assert Dispatcher([act], middleware=[Deny()]).dispatch(ToolCall("c", "act", "{}")).output == "cached"
    assert ran == []

    class Replace:
        async def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> ToolResult:
            return ToolResult(call_id=call.id, name=tool.name, status="succeeded", output=result.output + 1)

    assert Dispatcher([act], middleware=[Replace()]).dispatch(ToolCall("c", "act", "{}")).output == 2


def test_middleware_that_raises_becomes_a_failed_result() -> None:
    class Broken:
        def before_tool(self, call: ToolCall, tool: Any) -> None:
            raise RuntimeError("secret internals")

    result = Dispatcher([add], middleware=[Broken()]).dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}'))
    assert result.call_id == "c"
    assert result.error is not None and result.error.code == "middleware_error"
    assert "secret" not in result.error.message


def test_event_sinks_async_queue_and_raising() -> None:
    async def main() -> tuple[list[ToolEvent], ToolResult]:
        queue: asyncio.Queue[ToolEvent] = asyncio.Queue()
        dispatcher = Dispatcher([add], on_event=queue)
        result = await dispatcher.adispatch(ToolCall("c", "add", '{"a": 1, "b": 1}'))
        return [queue.get_nowait() for _ in range(queue.qsize())], result

    events, result = asyncio.run(main())
    assert kinds(events) == ["ToolStarted", "ToolCompleted"] and result.output == 2

    received: list[ToolEvent] = []

    async def async_sink(event: ToolEvent) -> None:
        received.append(event)

    assert Dispatcher([add], on_event=async_sink).dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}')).output == 2
    assert kinds(received) == ["ToolStarted", "ToolCompleted"]

    def broken(event: ToolEvent) -> None:
        raise RuntimeError("sink down")

    assert Dispatcher([add], on_event=broken).dispatch(ToolCall("c", "add", '{"a": 1, "b": 1}')).output == 2


def test_tool_failure_event_carries_the_exception() -> None:
    @tool
    def boom() -> None:
        raise ValueError("internal detail")

    dispatcher, events = make(boom)
    result = dispatcher.dispatch(ToolCall("c", "boom", "{}"))
    failed = [e for e in events if isinstance(e, ToolFailed)]
    assert len(failed) == 1 and isinstance(failed[0].exception, ValueError)
    assert failed[0].error == result.error
    assert "internal detail" not in result.text()


class Gauge:
    """Counts tools running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.log: list[tuple[str, int]] = []

    def enter(self, name: str) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.log.append((name, self.now))

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


def batch_tools(gauge: Gauge) -> list[Any]:
    @tool
    async def fetch(n: int) -> int:
        gauge.enter("fetch")
        await asyncio.sleep(0.02)
        gauge.leave()
        return n

    @tool
    def compute(n: int) -> int:
        gauge.enter("compute")
        time.sleep(0.02)
        gauge.leave()
        return n * 10

    @tool(parallel_safe=False)
    def write(n: int) -> int:
        gauge.enter("write")
        time.sleep(0.01)
        gauge.leave()
        return -n

    return [fetch, compute, write]


def test_batch_runs_parallel_calls_concurrently_and_serial_alone() -> None:
    gauge = Gauge()
    dispatcher = Dispatcher(batch_tools(gauge), max_concurrency=4)
    names = ["fetch", "compute", "fetch", "compute", "write", "fetch", "fetch"]
    calls = [ToolCall(f"c{i}", name, {"n": i}) for i, name in enumerate(names)]
    results = dispatcher.dispatch_many(calls)
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert [r.output for r in results] == [0, 10, 2, 30, -4, 5, 6]
    assert gauge.peak > 1  # parallel-safe calls overlapped
    assert gauge.peak <= 4
    assert ("write", 1) in gauge.log  # the serial call ran alone


def test_batch_concurrency_is_bounded() -> None:
    gauge = Gauge()
    fetch = batch_tools(gauge)[0]
    calls = [ToolCall(f"c{i}", "fetch", {"n": i}) for i in range(12)]
    results = asyncio.run(adispatch_many(calls, [fetch], max_concurrency=3))
    assert [r.output for r in results] == list(range(12))
    assert gauge.peak == 3


def test_batch_refuses_duplicate_ids_per_call() -> None:
    calls = [
        ToolCall("same", "add", '{"a": 1, "b": 1}'),
        ToolCall("same", "add", '{"a": 2, "b": 2}'),
        ToolCall("other", "add", '{"a": 3, "b": 3}'),
    ]
    results = dispatch_many(calls, [add])
    assert [r.output for r in results] == [2, None, 6]
    assert results[1].error is not None and results[1].error.code == "duplicate_call_id"
    assert [r.call_id for r in results] == ["same", "same", "other"]


def test_dispatch_many_from_inside_a_running_loop() -> None:
    async def main() -> list[ToolResult]:
        return dispatch_many([ToolCall("a", "add", '{"a": 1, "b": 1}')], [add])

    assert [r.output for r in asyncio.run(main())] == [2]


def test_asyncio_cancellation_of_a_batch_propagates_and_leaves_no_task() -> None:
    @tool
    async def sleepy(n: int) -> int:
        await asyncio.sleep(10)
        return n

    async def main() -> set[asyncio.Task[Any]]:
        dispatcher = Dispatcher([sleepy], max_concurrency=4)
        batch = asyncio.ensure_future(
            dispatcher.adispatch_many([ToolCall(f"c{i}", "sleepy", {"n": i}) for i in range(6)])
        )
        await asyncio.sleep(0.05)
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        await asyncio.sleep(0)
        return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}

    assert asyncio.run(main()) == set()


@pytest.mark.parametrize("after", [False, True], ids=["first_call", "later_call"])
def test_a_call_that_raises_out_of_a_batch_leaves_no_call_of_it_running(after: bool) -> None:
    # a tool's own CancelledError (the run was not cancelled) goes up the caller's task; the calls
    # beside it in the batch are cancelled and waited for, not left to act after the batch ended
    acted: list[int] = []

    @tool
    async def sleepy(n: int) -> int:
        await asyncio.sleep(0.3)
        acted.append(n)
        return n

    @tool
    async def gives_up(n: int) -> int:
        await asyncio.sleep(0.01)
        raise asyncio.CancelledError("the tool's own")

    async def main() -> set[asyncio.Task[Any]]:
        dispatcher = Dispatcher([sleepy, gives_up], max_concurrency=4)
        if after:
            for each in dispatcher.toolbox:
                dispatcher.plan(each)
        names = ["sleepy", "gives_up", "sleepy"]
        calls = [ToolCall(f"c{n}", name, {"n": n}) for n, name in enumerate(names)]
        with pytest.raises(asyncio.CancelledError):
            await dispatcher.adispatch_many(calls)
        left = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
        await asyncio.sleep(0.4)
        return left

    assert asyncio.run(main()) == set()
    assert acted == []


def test_a_batch_call_that_ignores_its_cancellation_is_logged_even_when_the_caller_stops_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # one call raises out of the batch, the caller is cancelled while the batch waits for the others:
    # the call that ignores its cancellation is not waited for, and is logged as a stray
    release = asyncio.Event()

    @tool
    async def stubborn(n: int) -> int:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # ignores it
                await asyncio.sleep(0.05)
        return n

    @tool
    async def gives_up(n: int) -> int:
        await asyncio.sleep(0.01)
        raise asyncio.CancelledError("the tool's own")

    async def main() -> None:
        dispatcher = Dispatcher([stubborn, gives_up])
        calls = [ToolCall("c0", "stubborn", {"n": 0}), ToolCall("c1", "gives_up", {"n": 1})]
        batch = asyncio.ensure_future(dispatcher.adispatch_many(calls))
        await asyncio.sleep(0.2)  # the batch waits for `stubborn` now
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        await asyncio.sleep(threads_module.LEFTOVER_GRACE + 0.3)
        release.set()
        await asyncio.sleep(0.1)

    asyncio.run(main())
    assert "tool 'stubborn' is still running in a task after its call ended" in caplog.text


def test_tools_added_after_the_dispatcher_was_built_keep_their_settings() -> None:
    """The dispatcher's shortcut covers the tools it was built with; later ones go the long way, settings intact."""
    release = threading.Event()

    @tool(timeout=0.05)
    def slow() -> str:
        """Wait."""
        release.wait(5)
        return "late"

    @tool
    def quick() -> str:
        """Answer."""
        return "now"

    toolbox = Toolbox([])
    dispatcher = Dispatcher(toolbox)
    toolbox.add(slow)
    toolbox.add(quick)
    try:
        result = dispatcher.dispatch(ToolCall("c1", "slow", "{}"))
        assert result.status == "outcome_unknown" and result.error is not None and result.error.code == "timeout"
        assert dispatcher.dispatch(ToolCall("c2", "quick", "{}")).output == "now"
        assert dispatcher.calls == 2
    finally:
        release.set()


def test_sync_calls_reuse_one_event_loop_per_thread_and_leave_no_task() -> None:
    """Sync dispatch through the lifecycle keeps a loop per thread instead of one per call."""
    seen: list[Any] = []
    queue: asyncio.Queue[ToolEvent] = asyncio.Queue()  # bound to the first loop that uses it

    async def sink(event: ToolEvent) -> None:
        loop = asyncio.get_running_loop()
        seen.append(loop)
        await queue.put(event)

    started: list[asyncio.Task[Any]] = []

    @tool
    async def spawn() -> str:
        """Leave a task behind."""
        started.append(asyncio.ensure_future(asyncio.sleep(30)))
        return "ok"

    dispatcher = Dispatcher(Toolbox([spawn]), on_event=sink)
    for i in range(3):
        assert dispatcher.dispatch(ToolCall(f"c{i}", "spawn", "{}")).output == "ok"
        assert started[-1].cancelled()  # what a call leaves behind is cancelled when it returns
    assert len({id(loop) for loop in seen}) == 1 and queue.qsize() == len(seen)
    assert not asyncio.all_tasks(seen[0])

    other: list[Any] = []

    def in_thread() -> None:
        dispatcher.dispatch(ToolCall("t1", "spawn", "{}"))
        other.append(seen[-1])

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert other[0] is not seen[0]  # another thread, another loop
    import gc

    gc.collect()
    assert other[0].is_closed()  # closed once the thread that owned it ended


REQUEST = contextvars.ContextVar("REQUEST", default="none")


@pytest.mark.parametrize("path", ["express", "pipeline"])
def test_a_sync_tool_from_async_code_runs_off_the_loop_with_the_callers_context(path: str) -> None:
    seen: list[tuple[bool, str]] = []

    @tool
    def where() -> str:
        """Say where it runs."""
        seen.append((threading.current_thread() is threading.main_thread(), REQUEST.get()))
        return "ok"

    async def main() -> ToolResult:
        REQUEST.set("req-7")
        dispatcher = Dispatcher([where], on_event=(lambda event: None) if path == "pipeline" else None)
        return await dispatcher.adispatch(ToolCall("c", "where", "{}"))

    assert asyncio.run(main()).output == "ok"
    assert seen == [(False, "req-7")]  # a pool thread, never the loop's; the caller's contextvars


@pytest.mark.parametrize("path", ["express", "pipeline"])
def test_cancelling_the_run_while_a_sync_tool_runs_from_async_code_leaves_a_counted_stray(path: str) -> None:
    release = threading.Event()

    @tool
    def stuck() -> str:
        """Block until released."""
        release.wait(10)
        return "late"

    async def main() -> ToolResult:
        dispatcher = Dispatcher([stuck], on_event=(lambda event: None) if path == "pipeline" else None)
        asyncio.get_running_loop().call_later(0.05, dispatcher.cancel)
        return await dispatcher.adispatch(ToolCall("c", "stuck", "{}"))

    before = tinytools.strays().threads
    try:
        result = asyncio.run(main())
        assert (result.status, result.error.code if result.error else None) == ("outcome_unknown", "cancelled")
        assert tinytools.strays().threads == before + 1
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while tinytools.strays().threads > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tinytools.strays().threads == before


def test_threads_that_first_need_the_journal_stage_together_get_one() -> None:
    """The stage is made on first use; made twice, the run would forget what the first remembered."""
    for _ in range(20):
        dispatcher = Dispatcher([])
        barrier = threading.Barrier(8)
        seen: list[object] = []

        def first_need(dispatcher: Dispatcher, barrier: threading.Barrier, seen: list[object]) -> None:
            barrier.wait()
            seen.append(dispatcher.journal_stage)

        threads = [threading.Thread(target=first_need, args=(dispatcher, barrier, seen)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5.0)
        assert len(seen) == 8 and len({id(stage) for stage in seen}) == 1
