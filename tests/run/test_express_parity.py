"""The express path and the pipeline answer a plain tool's call alike.

A plain tool's first call on a `Dispatcher` goes through the pipeline (it makes the plan); every
later call takes the express path, a shortcut written apart. Whatever the tool returns or raises
and whatever arguments the model sends, the two must give the same result: same status, output,
content, error and artifacts (the time taken and a logged failure's random error id aside).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import decimal
import math
import random
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tinytools import (
    Dispatcher,
    Injected,
    Limits,
    MemoryArtifactStore,
    Param,
    RetryableError,
    Toolbox,
    ToolCall,
    ToolError,
    ToolResult,
    TransferError,
    dispatch,
    tool,
)
from tinytools.executors import ExecutorError

_ANSWER: list[Any] = [None]
"""What the tools below return or raise on their next call."""


def _answer() -> Any:
    answer = _ANSWER[0]
    if isinstance(answer, BaseException):
        raise answer
    return answer


@tool(description="Answer with what the test set.")
def answer(key: str, count: int = 1) -> Any:
    return _answer()


@tool(description="Answer with what the test set, as a coroutine.")
async def aanswer(key: str, count: int = 1) -> Any:
    return _answer()


@tool(description="Answer with what the test set, every argument required.")
def exact(key: str, count: int) -> Any:  # read in one decode: the express path writes its reading out
    return _answer()


@tool(description="Answer with what the test set, every argument required, as a coroutine.")
async def aexact(key: str, count: int) -> Any:
    return _answer()


@tool(description="Answer with what the test set, given bounded arguments.")
def bounded(n: Annotated[int, Param(ge=1, le=5)] = 2, tags: list[str] | None = None, *, mode: str = "a") -> Any:
    return _answer()


@tool(description="Answer with what the test set, for a user the application names.")
def injected(key: str, user: Annotated[str, Injected("user")]) -> Any:
    return _answer()


_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from([datetime.date(2026, 1, 2), decimal.Decimal("1.5"), b"raw", (1, 2), {3}])
)
_outputs = st.recursive(
    _leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(0, 9), inner, max_size=4)
    ),
    max_leaves=12,
) | st.text(min_size=150, max_size=400)
_raised = st.builds(ToolError, st.text(max_size=300)) | st.sampled_from(
    [
        ValueError("a plain bug"),
        RetryableError("try again"),
        ToolError("x" * 500),
        KeyError("k"),
        asyncio.CancelledError("the tool's own"),
        ExecutorError("worker_lost", "a nested call's worker died", may_have_acted=True),  # the executor's failure
        TransferError(  # the application's configuration: it reaches the caller
            tool="nested", parameter="conn", executor="process", reason="cannot pickle", injected=True
        ),
    ]
)
_arguments = st.sampled_from(
    [
        '{"key": "k"}',
        '{"key": "k", "count": 3}',
        '{"key": 1}',
        '{"key": "k", "count": 1.5}',
        '{"key": "k", "key": "j"}',
        '{"count": 2}',
        '{"key": "k", "extra": true}',
        '{"key": "a:b", "count": 2}',
        "{not json",
        "[]",
        '{"key": "\\ud800"}',
    ]
)
_exact_arguments = st.sampled_from(
    [
        '{"key": "k", "count": 3}',
        '{"key": "a:b", "count": 3}',  # a colon in a string: the count differs, no key repeats
        '{"key": "k", "key": "j", "count": 3}',
        '{"key": "k:", "count": 3, "count": 4}',
        '{"key": "k"}',
        '{"key": "k", "count": 3, "extra": 1}',
        '{"key": 1, "count": "3"}',
        '{"key": "k", "count": 1.0}',  # the schema takes it, the typed decoder does not: the general way
        '{"key": "k", "count": 3',
        "[1, 2]",
        '{"key": "\\ud800", "count": 1}',
        '{"key": "%s", "count": 2}' % ("x" * 1100),  # long, but it cannot nest: still read by the typed decoder
        '{"key": "%s", "count": 2}' % ("[" * 600),  # long, and enough brackets to nest too deep: the general way
        '{"key": "%s", "count": 2, "key": "j"}' % ("y:" * 600),
    ]
)
"""Arguments of `exact`, through each branch of its reading (sent as text and as bytes)."""
_bounded_arguments = st.sampled_from(
    [
        "{}",
        '{"n": 5, "tags": ["a"], "mode": "b"}',
        '{"n": 9}',
        '{"n": 0, "tags": [1, "b", 2]}',
        '{"tags": null}',
        '{"mode": 3, "n": "2"}',
        '{"n": 2, "n": 3}',
    ]
)
_budgets = st.sampled_from([None, 64, 300])
_limits = st.sampled_from([None, Limits(max_tool_calls=0), Limits(max_argument_bytes=12)])
"""No limit, or one that refuses the call before its tool (its long message held to the budget too)."""
_ERROR_ID = re.compile(r"[0-9a-f]{12}")


def _comparable(result: Any) -> Any:
    """The result without what differs from call to call: the time taken, a logged failure's error id.

    An exception that escaped the call compares by its class and text (a ``CancelledError`` by
    its class: asyncio before 3.11 drops its text as it leaves a task).
    """
    if isinstance(result, BaseException):
        return ("raised", type(result).__name__, "" if isinstance(result, asyncio.CancelledError) else str(result))
    result = msgspec.structs.replace(result, elapsed=0)
    if result.error is not None and (result.error.details or {}).get("error_id"):
        error = msgspec.structs.replace(
            result.error, message=_ERROR_ID.sub("<id>", result.error.message), details={"error_id": "<id>"}
        )
        result = msgspec.structs.replace(result, error=error)
    return result


def _both(
    name: str, arguments: str | bytes, budget: int | None, is_async: bool, **options: Any
) -> tuple[ToolResult | BaseException, ToolResult | BaseException]:
    """The call on a fresh dispatcher (the pipeline, as a first call) and on a warmed one (express):
    each one's result, or what it raised."""

    def made() -> Dispatcher:
        return Dispatcher(
            [answer, aanswer, exact, aexact, bounded, injected],
            max_inline_output_bytes=budget,
            artifacts=MemoryArtifactStore(),
            **options,
        )

    warmed = made()
    for each in warmed.toolbox:
        warmed.plan(each)
    assert name in (warmed._aexpress if is_async else warmed._express)  # the shortcut is really taken
    results: list[ToolResult | BaseException] = []
    for dispatcher in (made(), warmed):
        call = ToolCall("c1", name, arguments)
        try:
            results.append(asyncio.run(dispatcher.adispatch(call)) if is_async else dispatcher.dispatch(call))
        except (Exception, asyncio.CancelledError) as exc:
            results.append(exc)
    return results[0], results[1]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(_outputs, _raised),
    st.one_of(
        _arguments.map(lambda text: ("answer", text)),
        _bounded_arguments.map(lambda text: ("bounded", text)),
        _arguments.map(lambda text: ("injected", text)),  # no value injected: InjectionError, every call
        st.tuples(st.just("exact"), _exact_arguments | _exact_arguments.map(str.encode)),
    ),
    _budgets,
    st.sampled_from([("", False), ("", True), ("a", True)]),
    st.sampled_from(["return_error", "fail"]),
    _limits,
)
def test_a_later_call_gets_the_result_a_first_call_gets(
    returned: Any,
    call: tuple[str, str | bytes],
    budget: int | None,
    route: tuple[str, bool],
    invalid_args: str,
    limits: Limits | None,
) -> None:
    (name, arguments), (prefix, is_async) = call, route
    if prefix and name not in ("answer", "exact"):
        assume(False)  # only `answer` and `exact` have coroutine twins
    _ANSWER[0] = returned
    first, later = _both(prefix + name, arguments, budget, is_async, invalid_args=invalid_args, limits=limits)
    assert _comparable(later) == _comparable(first)
    if budget is not None and isinstance(later, ToolResult) and later.error is not None:
        assert len(later.text().encode()) <= budget  # a failure's text is cut to the budget (an output moves)


@pytest.mark.parametrize("value", [math.nan, [1, math.inf], {"a": None}, None, "x" * 200])
def test_outputs_the_shortcut_hands_on_are_read_as_the_pipeline_reads_them(value: Any) -> None:
    _ANSWER[0] = value
    for name, is_async in (("answer", False), ("aanswer", True)):
        first, later = _both(name, '{"key": "k"}', 100, is_async)
        assert _comparable(later) == _comparable(first)


@tool(description="Say what it was called with.")
def echo(key: str, count: int = 1, tags: list[str] | None = None, flag: bool = False) -> Any:
    return [key, count, tags, flag]


_echo_values = {
    "key": st.text(alphabet=st.sampled_from('ab:"{}[],\\ \u00e9'), max_size=8) | st.integers(0, 3),
    "count": st.integers(-3, 3) | st.just(1.0) | st.text(max_size=2),
    "tags": st.none() | st.lists(st.text(alphabet="x:y", max_size=3), max_size=3),
    "flag": st.booleans() | st.none(),
}


@st.composite
def _echo_texts(draw: st.DrawFn) -> str | bytes:
    """Arguments for `echo`: any subset of its names in any order, perhaps one twice or one unknown."""
    names = draw(st.lists(st.sampled_from([*_echo_values, "extra"]), max_size=6))
    members = [
        f"{msgspec.json.encode(name).decode()}: {msgspec.json.encode(draw(_echo_values.get(name, st.none()))).decode()}"
        for name in names
    ]
    text = "{" + ", ".join(members) + "}"
    return text.encode() if draw(st.booleans()) else text


@settings(max_examples=300, deadline=None)
@given(_echo_texts())
def test_a_later_call_reads_its_arguments_as_a_first_call_does(text: str | bytes) -> None:
    # the tool says what it got: an argument left out, a key named twice, a colon in a string, a
    # value the typed decoder refuses read the same on the express path (sync and async) as on the pipeline
    made = [echo]
    first = Dispatcher(made).dispatch(ToolCall("c1", "echo", text))
    warmed = Dispatcher(made)
    warmed.plan(echo)
    assert "echo" in warmed._express
    later = warmed.dispatch(ToolCall("c1", "echo", text))
    awaited = asyncio.run(warmed.adispatch(ToolCall("c1", "echo", text)))
    box = Toolbox(made)  # module `dispatch`: its toolbox's second call takes the express path from its own frame
    dispatch(ToolCall("c1", "echo", text), box)
    assert "echo" in box._dispatcher._express
    shortcut = dispatch(ToolCall("c1", "echo", text), box)
    assert _comparable(later) == _comparable(first) == _comparable(awaited) == _comparable(shortcut)


@tool(description="Say how deep the data goes.")
def depth(data: list) -> int:  # type: ignore[type-arg]
    level = 0
    while isinstance(data, list) and data:
        data, level = data[0], level + 1
    return level


@pytest.mark.parametrize("levels", [10, 511, 512, 600])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_arguments_nested_past_the_limit_are_refused_on_both_paths(levels: int, as_bytes: bool) -> None:
    text = '{"data": ' + "[" * levels + "]" * levels + "}"
    call = ToolCall("c1", "depth", text.encode() if as_bytes else text)
    first = Dispatcher([depth]).dispatch(call)
    warmed = Dispatcher([depth])
    warmed.plan(depth)
    later = warmed.dispatch(call)
    assert _comparable(later) == _comparable(first)
    assert (later.status == "succeeded") == (levels < 512)


class _Watching:
    """A pass-through middleware: the sync entry point then runs the pipeline's stages in one frame."""

    def before_tool(self, call: ToolCall, tool: object) -> None:
        return None

    def after_tool(self, call: ToolCall, tool: object, result: ToolResult) -> None:
        return None


def _event_facts(events: list[Any]) -> list[tuple[Any, ...]]:
    """What an event says, less the time taken and a logged failure's error id."""
    facts = []
    for event in events:
        fields = {
            field: getattr(event, field) for field in event.__struct_fields__ if field not in ("elapsed", "exception")
        }
        if "result" in fields:
            fields["result"] = _comparable(fields["result"])
        if "error" in fields and fields["error"] is not None:
            fields["error"] = _ERROR_ID.sub("<id>", repr(fields["error"]))
        facts.append((type(event).__name__, sorted(fields.items(), key=lambda item: item[0])))
    return facts


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(_outputs, _raised),
    st.one_of(_arguments.map(lambda text: ("answer", text)), _bounded_arguments.map(lambda text: ("bounded", text))),
    _budgets,
)
def test_the_watched_path_answers_and_reports_as_the_pipeline_does(
    returned: Any, call: tuple[str, str], budget: int | None
) -> None:
    # from sync code, middleware and a sink run the stages in one frame; from async code, as coroutines
    name, arguments = call
    _ANSWER[0] = returned
    seen: dict[str, list[Any]] = {"sync": [], "async": []}
    results: dict[str, ToolResult | BaseException] = {}
    for route in seen:
        dispatcher = Dispatcher(
            [answer, bounded],
            middleware=[_Watching()],
            on_event=seen[route].append,
            max_inline_output_bytes=budget,
            artifacts=MemoryArtifactStore(),
        )
        for each in dispatcher.toolbox:
            dispatcher.plan(each)
        request = ToolCall("c1", name, arguments)
        try:
            results[route] = (
                dispatcher.dispatch(request) if route == "sync" else asyncio.run(dispatcher.adispatch(request))
            )
        except (Exception, asyncio.CancelledError) as exc:
            results[route] = exc
    assert _comparable(results["sync"]) == _comparable(results["async"])
    assert _event_facts(seen["sync"]) == _event_facts(seen["async"])


class _CancelsItsRun:
    """Raised by a tool as ``_answer``'s value: the tool cancels its own run, then raises ``raised``."""

    def __init__(self, raised: BaseException):
        self.raised = raised


_RUNS: list[Dispatcher] = []


def _first_then_later(tools: list[Any], **options: Any) -> Iterator[Dispatcher]:
    """A dispatcher whose call is a first call (the pipeline), then one with its tools planned (the
    express path); each is the run `_RUNS` names while its call is made."""
    for warm in (False, True):
        dispatcher = Dispatcher(tools, **options)
        if warm:
            for each in dispatcher.toolbox:
                dispatcher.plan(each)
        _RUNS.append(dispatcher)
        yield dispatcher


@tool(description="Cancel the run this call belongs to, then raise what the test set.")
def cancels(key: str) -> Any:
    _RUNS[-1].cancel()
    raise _ANSWER[0]


@tool(description="Cancel the run this call belongs to, then raise what the test set, as a coroutine.")
async def acancels(key: str) -> Any:
    _RUNS[-1].cancel()
    raise _ANSWER[0]


@pytest.mark.parametrize("raised", [asyncio.CancelledError("stopped"), SystemExit(3), ValueError("a plain bug")])
@pytest.mark.parametrize("route", ["sync", "async", "hop"])
def test_a_call_whose_run_is_cancelled_as_it_raises_ends_alike_on_both_paths(raised: BaseException, route: str) -> None:
    # what must propagate (CancelledError, SystemExit) ends the call `cancelled` when the run itself
    # was cancelled while the tool ran; on the express path that is decided by the path's own code
    name = "acancels" if route == "async" else "cancels"
    _ANSWER[0] = raised
    outcomes: list[Any] = []
    for warm in (False, True):
        dispatcher = Dispatcher([cancels, acancels])
        if warm:
            for each in dispatcher.toolbox:
                dispatcher.plan(each)
            assert name in (dispatcher._express if route == "sync" else dispatcher._aexpress)
        _RUNS.append(dispatcher)
        call = ToolCall("c1", name, '{"key": "k"}')
        try:
            outcomes.append(dispatcher.dispatch(call) if route == "sync" else asyncio.run(dispatcher.adispatch(call)))
        except (Exception, asyncio.CancelledError, SystemExit) as exc:
            outcomes.append(exc)
    first, later = outcomes
    assert _comparable(later) == _comparable(first)
    if isinstance(raised, SystemExit):  # an exit reaches the caller, whatever the run's state
        assert isinstance(later, SystemExit)
    elif route == "async" and isinstance(raised, asyncio.CancelledError):
        # awaited in the caller's task, which the run's cancellation did not cancel (the tool
        # cancelled its own run): the error is the task's own, and goes on up it
        assert isinstance(later, asyncio.CancelledError)
    else:  # on a thread, the run was cancelled, so its CancelledError ends the call cancelled
        code = "tool_error" if isinstance(raised, ValueError) else "cancelled"
        assert isinstance(later, ToolResult) and later.error is not None and later.error.code == code


# --- the run's cancellation reaches an async tool's call, and only it, on both paths ----------

_STEPS: dict[str, Any] = {}


@tool(description="Block the loop (no await) while another thread cancels the run, then end as the test set.")
async def blocks(key: str) -> str:
    _STEPS["started"].set()
    _STEPS["cancelled"].wait(5)  # CPU work or a blocking call: the cancellation cannot reach the task here
    if key == "raise":
        raise asyncio.CancelledError("the tool's own")
    return "done"


@tool(description="Cancel the run from a thread or a sub-task of this call, then finish.")
async def cancels_from_inside(key: str) -> str:
    if key == "thread":
        await asyncio.to_thread(_RUNS[-1].cancel)
    else:
        await asyncio.gather(asyncio.ensure_future(_cancel_soon()))
    await asyncio.sleep(0.01)
    return "finished"


async def _cancel_soon() -> None:
    _RUNS[-1].cancel()


@tool(description="Wait; when the run is cancelled, say so and return.")
async def handles_cancellation(key: str) -> str:
    _STEPS["started"].set()
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        return "handled"
    return "slept"


@tool(description="Wait until the run is cancelled.")
async def waits(key: str) -> str:
    _STEPS["started"].set()
    await asyncio.sleep(5)
    return "slept"


_CANCELLING = [blocks, cancels_from_inside, handles_cancellation, waits]


def _first_and_later(
    name: str, key: str, cancel_from_thread: bool, *, cancelled_before: bool = False
) -> list[tuple[Any, ...]]:
    """(outcome, whether the caller's next await was cancelled, its task's `cancelling()`) on each path.

    ``cancelled_before``: the caller's task was cancelled once before the call, and caught it
    without taking it back (its `cancelling()` is 1 as the call starts).
    """
    seen = []
    for dispatcher in _first_then_later(_CANCELLING):
        _STEPS.update(started=threading.Event(), cancelled=threading.Event())

        def cancel(dispatcher: Dispatcher = dispatcher) -> None:
            if _STEPS["started"].wait(5):
                dispatcher.cancel()
            _STEPS["cancelled"].set()

        canceller = threading.Thread(target=cancel)
        if cancel_from_thread:
            canceller.start()

        async def caller(dispatcher: Dispatcher = dispatcher) -> tuple[Any, ...]:
            if cancelled_before:
                asyncio.current_task().cancel()  # type: ignore[union-attr]
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(1)
            try:
                result = await dispatcher.adispatch(ToolCall("c1", name, msgspec.json.encode({"key": key})))
                outcome: Any = (result.status, result.output, result.error.code if result.error else None)
            except asyncio.CancelledError:
                outcome = "raised CancelledError"
            task = asyncio.current_task()
            cancelling = task.cancelling() if task is not None and hasattr(task, "cancelling") else 0
            try:
                await asyncio.sleep(0.05)  # the caller's own work: nobody cancelled it
                interrupted = False
            except asyncio.CancelledError:
                interrupted = True
            return outcome, interrupted, cancelling

        seen.append(asyncio.run(caller()))
        if cancel_from_thread:
            canceller.join(5)
    return seen


@pytest.mark.parametrize("key", ["return", "raise"])
def test_a_cancellation_that_finds_the_call_ended_leaves_the_callers_task_alone(key: str) -> None:
    first, later = _first_and_later("blocks", key, cancel_from_thread=True)
    assert later == first
    expected = ("succeeded", "done", None) if key == "return" else "raised CancelledError"
    assert first == (expected, False, 0)


@pytest.mark.parametrize("where", ["thread", "task"])
def test_a_tool_that_cancels_its_run_from_its_thread_or_sub_task_finishes_its_call(where: str) -> None:
    first, later = _first_and_later("cancels_from_inside", where, cancel_from_thread=False)
    assert later == first == (("succeeded", "finished", None), False, 0)


def test_a_tool_that_handles_the_runs_cancellation_returns_and_the_task_is_not_left_cancelling() -> None:
    first, later = _first_and_later("handles_cancellation", "k", cancel_from_thread=True)
    assert later == first == (("succeeded", "handled", None), False, 0)


def test_a_cancellation_the_callers_task_had_before_the_call_is_not_taken_for_one_from_outside() -> None:
    first, later = _first_and_later("waits", "k", cancel_from_thread=True, cancelled_before=True)
    counted = 1 if sys.version_info >= (3, 11) else 0  # a task counts its cancellations from Python 3.11
    assert later == first == (("outcome_unknown", None, "cancelled"), False, counted)  # its count left as it was


def test_the_callers_own_cancellation_in_the_same_turn_as_the_runs_still_reaches_it() -> None:
    # the run's cancellation and the caller's task's own (a shutdown, a TaskGroup, a timeout) land
    # in one turn of the loop: the call must not take the caller's for the run's and swallow it
    seen = []
    for dispatcher in _first_then_later(_CANCELLING):
        _STEPS.update(started=threading.Event(), cancelled=threading.Event())

        async def outer(dispatcher: Dispatcher = dispatcher) -> str:
            task = asyncio.ensure_future(dispatcher.adispatch(ToolCall("c1", "waits", '{"key": "k"}')))
            while not _STEPS["started"].is_set():
                await asyncio.sleep(0.001)
            dispatcher.cancel()
            task.cancel()
            try:
                result = await task
            except asyncio.CancelledError:
                return "the caller was cancelled"
            return f"the caller got {result.status}"

        seen.append(asyncio.run(outer()))
    # Python 3.10's tasks do not count their cancellations: there the two cannot be told apart,
    # and the call ends as the run's cancellation says
    told_apart = sys.version_info >= (3, 11)
    assert seen == ["the caller was cancelled" if told_apart else "the caller got outcome_unknown"] * 2


def test_a_retry_the_run_stops_before_it_starts_still_says_the_tool_ran_before() -> None:
    ran: list[int] = []

    @tool(idempotent=True, retries=1, timeout=0.1)
    def slow_charge() -> str:
        """Charge, slowly: the first attempt outlives its timeout."""
        ran.append(1)
        time.sleep(0.3)
        return "charged"

    class StopsTheSecondAttempt:
        def __init__(self) -> None:
            self.dispatcher: Dispatcher | None = None

        @contextlib.contextmanager
        def around_tool(self, call: ToolCall, tool: Any, attempt: int) -> Iterator[None]:
            if attempt == 2 and self.dispatcher is not None:
                self.dispatcher.cancel()  # as the retry is handed to a thread
            yield

    hook = StopsTheSecondAttempt()
    hook.dispatcher = dispatcher = Dispatcher([slow_charge], middleware=[hook])
    result = asyncio.run(dispatcher.adispatch(ToolCall("c1", "slow_charge", "{}")))
    assert ran == [1] and result.error is not None and result.error.code == "cancelled"
    assert result.error.message == "The run was cancelled while the tool ran."  # not "the call was not made"


_CANCEL_RETURNED = threading.Event()
_STARTED_AFTER: list[bool] = []


@tool(description="Note whether the run's cancel had returned when this started.")
def notes_start(key: str) -> str:
    _STARTED_AFTER.append(_CANCEL_RETURNED.is_set())
    return "ran"


@tool(description="The same, with a timeout: from sync code it runs on a pool thread too.", timeout=5)
def notes_start_timed(key: str) -> str:
    return notes_start.fn(key)


@pytest.mark.parametrize("route", ["adispatch", "dispatch, timeout"])
def test_a_sync_tool_whose_run_is_cancelled_before_a_thread_takes_it_never_starts(route: str) -> None:
    # a sync tool's work is handed to a pool thread (from async code always, from sync code when it
    # has a timeout); a cancel that comes between the hand-off and a thread taking the work must
    # keep the tool from starting (its caller may not have heard of the cancel yet). A race: a
    # cancel at random moments, many times, on a first call (the pipeline) and a later one.
    name = "notes_start" if route == "adispatch" else "notes_start_timed"
    rng = random.Random(7)
    seen: set[tuple[Any, ...]] = set()
    for n in range(300):
        _STARTED_AFTER.clear()
        _CANCEL_RETURNED.clear()
        dispatcher = Dispatcher([notes_start, notes_start_timed])  # a cancelled run stays cancelled: one each
        if n % 2:
            dispatcher.plan(dispatcher.toolbox.get(name))  # the express path, where the tool has one
        ready = threading.Event()

        def cancel(dispatcher: Dispatcher = dispatcher, ready: threading.Event = ready) -> None:
            ready.wait(5)
            until = time.perf_counter() + rng.random() * 0.0003
            while time.perf_counter() < until:
                pass
            dispatcher.cancel()
            _CANCEL_RETURNED.set()

        async def caller(dispatcher: Dispatcher = dispatcher, ready: threading.Event = ready, n: int = n) -> Any:
            ready.set()
            return await dispatcher.adispatch(ToolCall(f"c{n}", name, '{"key": "k"}'))

        canceller = threading.Thread(target=cancel)
        canceller.start()
        if route == "adispatch":
            result = asyncio.run(caller())
        else:
            ready.set()
            result = dispatcher.dispatch(ToolCall(f"c{n}", name, '{"key": "k"}'))
        canceller.join(5)
        assert result.call_id == f"c{n}"
        assert _STARTED_AFTER in ([], [False]), "the tool started after the run's cancel returned"
        ran = bool(_STARTED_AFTER)
        seen.add((result.status, ran))
        if result.status == "succeeded":
            assert ran
        if result.status == "failed":  # "the call was not made": it was not
            assert not ran
    assert ("succeeded", True) in seen and any(status != "succeeded" for status, _ in seen)


_LATER: dict[str, Any] = {}


async def _cancel_when_told() -> None:
    await _LATER["go"].wait()
    _RUNS[-1].cancel()  # from a task an earlier call started, which outlived that call


@tool(description="Start a background task that cancels the run when told.")
async def spawns(key: str) -> str:
    _LATER["helper"] = asyncio.ensure_future(_cancel_when_told())
    return "spawned"


@tool(description="Tell the background task to cancel the run, then sleep.")
async def sleeps_on(key: str) -> str:
    _LATER["go"].set()
    await asyncio.sleep(5)
    return "slept to the end"


def test_a_task_an_earlier_call_started_is_not_part_of_a_later_call() -> None:
    # the cancellation comes from code the first call left behind: the second call is not its
    # canceller, so it ends cancelled, on the pipeline and on the express path alike
    ended = []
    for dispatcher in _first_then_later([spawns, sleeps_on]):

        async def caller(dispatcher: Dispatcher = dispatcher) -> tuple[Any, ...]:
            _LATER["go"] = asyncio.Event()
            first = await dispatcher.adispatch(ToolCall("c1", "spawns", '{"key": "k"}'))
            second = await dispatcher.adispatch(ToolCall("c2", "sleeps_on", '{"key": "k"}'))
            await _LATER["helper"]
            return first.status, second.status, second.error.code if second.error else second.output

        ended.append(asyncio.run(caller()))
    assert ended[0] == ended[1] == ("succeeded", "outcome_unknown", "cancelled")


_STOPS: list[str] = ["cancel"]
"""How reading the next call's argument stops its run: ``cancel`` it, or outlast its ``deadline``."""


@dataclasses.dataclass
class _Stops:
    """An argument whose making stops the run (the application's code runs as the call is read)."""

    n: int

    def __post_init__(self) -> None:
        if _STOPS[0] == "cancel":
            _RUNS[-1].cancel()
        else:
            time.sleep(0.3)


_MADE: list[str] = []


@tool(description="Note that it ran.")
def takes_stops(value: _Stops) -> str:
    _MADE.append("sync")
    return "ran"


@tool(description="Note that it ran, as a coroutine.")
async def atakes_stops(value: _Stops) -> str:
    _MADE.append("async")
    return "ran"


@pytest.mark.parametrize(("how", "code"), [("cancel", "cancelled"), ("deadline", "deadline_exceeded")])
@pytest.mark.parametrize("route", ["sync", "async", "hop"])
def test_a_call_whose_run_stops_as_its_arguments_are_read_is_not_made(how: str, code: str, route: str) -> None:
    _STOPS[0] = how
    _MADE.clear()
    name = "atakes_stops" if route == "async" else "takes_stops"
    ended = []
    limits = Limits(deadline=0.15) if how == "deadline" else None  # else no check is pending until the cancel
    for dispatcher in _first_then_later([takes_stops, atakes_stops], limits=limits):
        call = ToolCall("c1", name, '{"value": {"n": 1}}')
        result = dispatcher.dispatch(call) if route == "sync" else asyncio.run(dispatcher.adispatch(call))
        ended.append((result.status, result.error.code if result.error else None))
    assert ended == [("failed", code)] * 2
    assert _MADE == []


@tool(description="Count the numbers.")
def counts(xs: list[int]) -> int:
    _MADE.append("sync")
    return len(xs)


@tool(description="Count the numbers, as a coroutine.")
async def acounts(xs: list[int]) -> int:
    _MADE.append("async")
    return len(xs)


@pytest.mark.parametrize(("how", "code"), [("cancel", "cancelled"), ("deadline", "deadline_exceeded")])
@pytest.mark.parametrize("route", ["sync", "async", "hop"])
def test_a_call_whose_run_stops_while_its_typed_reader_decodes_it_is_not_made(how: str, code: str, route: str) -> None:
    # no application code runs as the typed reader decodes, but a long text takes time: a deadline
    # passes, or another thread cancels the run, meanwhile; the call is not made on either path
    text = '{"xs": [' + ",".join(["1"] * 1_000_000) + "]}"
    reader = Dispatcher([counts]).plan(counts).reader()
    assert reader is not None  # the express path reads this tool's calls with it
    took = []
    for _ in range(2):
        began = time.perf_counter()
        reader(ToolCall("c0", "counts", text))
        took.append(time.perf_counter() - began)
    stop_after = min(took) / 4  # well inside the read (tens of milliseconds)
    name = "acounts" if route == "async" else "counts"
    ended = []
    _MADE.clear()
    limits = Limits(deadline=stop_after) if how == "deadline" else None
    for dispatcher in _first_then_later([counts, acounts], limits=limits):
        if dispatcher._express:  # the later call: the express path takes it
            assert name in (dispatcher._express if route == "sync" else dispatcher._aexpress)
        if how == "cancel":
            threading.Timer(stop_after, dispatcher.cancel).start()
        call = ToolCall("c1", name, text)
        result = dispatcher.dispatch(call) if route == "sync" else asyncio.run(dispatcher.adispatch(call))
        ended.append((result.status, result.error.code if result.error else None))
    assert ended == [("failed", code)] * 2
    assert _MADE == []


@tool(description="Cancel the run from a plain thread this call starts, then finish.")
async def cancels_from_a_plain_thread(key: str) -> str:
    canceller = threading.Thread(target=_RUNS[-1].cancel)  # an empty context: not this call's own code
    canceller.start()
    canceller.join()
    await asyncio.sleep(0.05)
    return "finished"


def test_a_cancel_from_a_plain_thread_the_tool_started_is_any_other_codes_and_ends_the_call() -> None:
    # only code that carries the call's context (its task, a sub-task, `asyncio.to_thread`) is its own
    ended = []
    for dispatcher in _first_then_later([cancels_from_a_plain_thread]):
        result = asyncio.run(dispatcher.adispatch(ToolCall("c1", "cancels_from_a_plain_thread", '{"key": "k"}')))
        ended.append((result.status, result.error.code if result.error else result.output))
    assert ended == [("outcome_unknown", "cancelled")] * 2


@tool(description="Await the inner tool (the key names it) through the same dispatcher.")
async def outer(key: str) -> str:
    await _RUNS[-1].adispatch(ToolCall("inner-call", key, '{"key": "k"}'))
    await asyncio.sleep(5)
    return "outer finished"


@tool(description="Cancel the run, then wait.")
async def inner(key: str) -> str:
    _RUNS[-1].cancel()
    await asyncio.sleep(5)
    return "inner finished"


@tool(description="Cancel the run, then finish (on a pool thread).")
def sync_inner(key: str) -> str:
    _RUNS[-1].cancel()
    return "inner finished"


@pytest.mark.parametrize("inner_name", ["inner", "sync_inner"])
@pytest.mark.parametrize("planned", [(), ("outer",), ("inner",), ("outer", "inner")])
def test_a_nested_call_that_cancels_the_run_ends_the_call_around_it_whichever_path_each_takes(
    planned: tuple[str, ...], inner_name: str
) -> None:
    # the inner call is the canceller's own; the outer one is not, and ends cancelled (its task's
    # cancellation reaches the inner call too, which never finishes): one answer for every mix of
    # first calls (the pipeline) and later ones (the express path)
    dispatcher = Dispatcher([outer, inner, sync_inner])
    for name in planned:
        dispatcher.plan(dispatcher.toolbox[inner_name if name == "inner" else name])
    _RUNS.append(dispatcher)

    async def caller() -> tuple[Any, ...]:
        result = await dispatcher.adispatch(ToolCall("c1", "outer", msgspec.json.encode({"key": inner_name})))
        task = asyncio.current_task()
        cancelling = task.cancelling() if task is not None and hasattr(task, "cancelling") else 0  # 3.11 and later
        return result.status, result.error.code if result.error else None, cancelling

    assert asyncio.run(caller()) == ("outcome_unknown", "cancelled", 0)
