"""The pipeline's promises where its stages meet: binding, admission, the serial barrier, faults of hooks."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any

import pytest

from tinytools import (
    CancellationToken,
    Dispatcher,
    Injected,
    Limits,
    NeedsInput,
    Rewrite,
    Toolbox,
    ToolCall,
    ToolEvent,
    ToolResult,
    adispatch,
    tool,
)
from tinytools.policy import Approval, ApprovalRequest, PolicyMiddleware, ToolPolicy, require_approval

from .paths import (
    BATCH_ENTRIES,
    DISPATCHER_ENTRIES,
    GENEROUS,
    PATHS,
    RELEASE,
    PassThrough,
    options,
    run_batch,
    run_call,
    run_in_thread,
    steady,
    summary,
)

# Positional-only parameters are bound by name


@tool
def annotate(
    note: str = "",
    user: Annotated[str, Injected("user")] = "nobody",
    target: str = "",
    /,
) -> dict[str, str]:
    """Return what it was called with."""
    return {"note": note, "user": user, "target": target}


@tool
def transfer(amount: int = 1, account: str = "savings", /) -> dict[str, Any]:
    """Return what it was called with."""
    return {"amount": amount, "account": account}


@pytest.mark.parametrize("form", ["dict", "json_text"])
@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_positional_only_parameters_receive_exactly_what_was_sent_by_name(entry: str, variant: str, form: str) -> None:
    sent = {"annotate": {"target": "root"}, "transfer": {"account": "checking"}}
    if variant == "strict":  # a strict model sends every key, null for an omitted optional one
        sent = {"annotate": {"note": None, "target": "root"}, "transfer": {"amount": None, "account": "checking"}}
    received = {}
    for name, arguments in sent.items():
        wire = arguments if form == "dict" else json.dumps(arguments)
        result = run_call(
            entry, [annotate, transfer], ToolCall(f"c-{name}", name, wire), inject={"user": "alice"}, **options(variant)
        )
        received[name] = result.output if result.status == "succeeded" else summary([result])
    assert received == {
        "annotate": {"note": "", "user": "alice", "target": "root"},
        "transfer": {"amount": 1, "account": "checking"},
    }


# The unknown-tool rewrite respects the per-turn allowlist


@pytest.mark.parametrize("variant", ["plain", "on_event"])
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_rewrite_to_a_fallback_does_not_bypass_the_allowlist(entry: str, variant: str) -> None:
    ran: list[str] = []

    @tool
    def allowed_tool() -> str:
        """The only tool allowed this turn."""
        return "allowed"

    @tool
    def fallback() -> str:
        """Where unknown calls are rewritten to."""
        ran.append("fallback")
        return "fallback ran"

    dispatcher = Dispatcher([allowed_tool, fallback], unknown_tool=Rewrite("fallback"), **options(variant))
    call = ToolCall("c1", "no_such_tool", {})
    allowed = ["allowed_tool"]
    if entry == "Dispatcher.dispatch":
        result = dispatcher.dispatch(call, allowed=allowed)
    elif entry == "Dispatcher.adispatch":
        result = asyncio.run(dispatcher.adispatch(call, allowed=allowed))
    elif entry == "Dispatcher.dispatch_many":
        (result,) = dispatcher.dispatch_many([call], allowed=allowed)
    else:
        (result,) = asyncio.run(dispatcher.adispatch_many([call], allowed=allowed))
    assert (result.status, result.error and result.error.code, ran) == ("failed", "tool_not_allowed", [])


# A serial tool reached through Rewrite stays serial in a batch


@pytest.mark.parametrize("entry", BATCH_ENTRIES)
def test_serial_tool_reached_through_rewrite_never_runs_concurrently_with_itself(entry: str) -> None:
    guard = threading.Condition()
    running = {"now": 0, "peak": 0}

    @tool(parallel_safe=False)
    def serial(n: int) -> int:
        """A tool that must run alone."""
        with guard:
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
            guard.notify_all()
            guard.wait_for(lambda: running["now"] > 1, timeout=0.5)  # a short sleep a concurrent twin cuts short
            running["now"] -= 1
        return n

    dispatcher = Dispatcher([serial], unknown_tool=Rewrite("serial"))
    calls = [ToolCall("c0", "serial", {"n": 0})] + [ToolCall(f"c{n}", "old_serial", {"n": n}) for n in (1, 2, 3)]
    watched = run_in_thread(lambda: run_batch(entry, dispatcher, calls), timeout=RELEASE)
    assert watched.finished, "the batch did not finish"
    results = watched.value()
    assert running["peak"] == 1, f"{running['peak']} instances of the serial tool ran at once"
    assert [(r.call_id, r.output) for r in results] == [("c0", 0), ("c1", 1), ("c2", 2), ("c3", 3)]


# A BaseException from middleware, an approver or a sink costs only its own call


class Boom(BaseException):
    """Not KeyboardInterrupt, SystemExit or asyncio.CancelledError: it must not stop the run."""


class BoomBefore:
    def before_tool(self, call: ToolCall, tool: Any) -> None:
        if call.id == "bad":
            raise Boom("before_tool")


class AsyncBoomBefore:
    async def before_tool(self, call: ToolCall, tool: Any) -> None:
        if call.id == "bad":
            raise Boom("async before_tool")


class BoomAfter:
    def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> None:
        if call.id == "bad":
            raise Boom("after_tool")


def boom_approver(request: ApprovalRequest) -> Approval:
    if request.call.id == "bad":
        raise Boom("approver")
    return Approval.approve()


async def async_boom_approver(request: ApprovalRequest) -> Approval:
    if request.call.id == "bad":
        raise Boom("async approver")
    return Approval.approve()


def boom_sink(event: ToolEvent) -> None:
    if event.call_id == "bad":
        raise Boom("sink")


async def async_boom_sink(event: ToolEvent) -> None:
    if event.call_id == "bad":
        raise Boom("async sink")


@tool(policy=ToolPolicy.classified().with_access(approval_required=True))
def guarded(n: int) -> int:
    """Needs approval."""
    return n


BOOM_SOURCES: dict[str, tuple[dict[str, Any], str, str | None]] = {
    # source: (dispatcher options, tool, the bad call's expected error code; None = succeeded)
    "before_tool": ({"middleware": [BoomBefore()]}, "steady", "middleware_error"),
    "async_before_tool": ({"middleware": [AsyncBoomBefore()]}, "steady", "middleware_error"),
    "after_tool": ({"middleware": [BoomAfter()]}, "steady", "middleware_error"),
    "approver": ({"middleware": [PolicyMiddleware(require_approval(boom_approver))]}, "guarded", "policy_denied"),
    "async_approver": (
        {"middleware": [PolicyMiddleware(require_approval(async_boom_approver))]},
        "guarded",
        "policy_denied",
    ),
    "event_sink": ({"on_event": boom_sink}, "steady", None),
    "async_event_sink": ({"on_event": async_boom_sink}, "steady", None),
}


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
@pytest.mark.parametrize("source", list(BOOM_SOURCES))
def test_a_base_exception_from_a_hook_affects_only_its_own_call(source: str, entry: str) -> None:
    dispatcher_options, name, code = BOOM_SOURCES[source]
    dispatcher = Dispatcher([steady, guarded], **dispatcher_options)
    bad = ToolCall("bad", name, {"n": 2})
    expected_bad = ("bad", "succeeded" if code is None else "failed", code)
    if entry in BATCH_ENTRIES:
        calls = [ToolCall("a", name, {"n": 1}), bad, ToolCall("b", name, {"n": 3})]
        results = run_batch(entry, dispatcher, calls)
        assert summary(results) == [("a", "succeeded", None), expected_bad, ("b", "succeeded", None)]
        assert [results[0].output, results[2].output] == [1, 3]
    else:
        result = run_call(entry, [steady, guarded], bad, dispatcher=dispatcher)
        assert summary([result]) == [expected_bad]


class _Malformed:
    """Middleware that answers with a result breaking its own rules (failed, with no error)."""

    def __init__(self, stage: str) -> None:
        self.stage = stage

    def _broken(self, call: ToolCall) -> ToolResult:
        return ToolResult(call_id=call.id, name=call.name, status="failed")

    def before_tool(self, call: ToolCall, tool: Any) -> ToolResult | None:
        return self._broken(call) if self.stage == "before" else None

    def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> ToolResult | None:
        return self._broken(call) if self.stage == "after" else None


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
@pytest.mark.parametrize("stage", ["before", "after"])
def test_a_malformed_result_from_middleware_becomes_its_middleware_error(entry: str, stage: str) -> None:
    dispatcher = Dispatcher([steady], middleware=[_Malformed(stage)])
    result = run_call(entry, [steady], ToolCall("c1", "steady", {"n": 1}), dispatcher=dispatcher)
    result.validate()
    assert summary([result]) == [("c1", "failed", "middleware_error")]


def test_plain_calls_take_the_express_path_and_others_the_pipeline() -> None:
    """Only a tool that needs nothing around its call skips the pipeline, and both give one result."""
    plain_box = Toolbox([transfer])
    assert Dispatcher(plain_box).plan(transfer).express is not None
    assert Dispatcher(plain_box, on_event=lambda event: None).plan(transfer).express is None
    assert Dispatcher(plain_box, middleware=[PassThrough()]).plan(transfer).express is None
    assert Dispatcher([annotate]).plan(annotate).express is not None  # injected values: bound by slot, no stage needed


@pytest.mark.parametrize("entry", ["adispatch", "Dispatcher.adispatch"])
def test_cancelling_an_awaited_call_tells_a_sync_tool_through_its_token(entry: str) -> None:
    started, heard = threading.Event(), threading.Event()

    @tool
    def wait_for_cancel(token: CancellationToken) -> str:
        """Wait until told to stop."""
        started.set()
        if token.wait(5.0):
            heard.set()
        return "stopped"

    box = Toolbox([wait_for_cancel])
    call = ToolCall("c", "wait_for_cancel", {})

    async def main() -> None:
        made = adispatch(call, box) if entry == "adispatch" else Dispatcher(box).adispatch(call)
        task = asyncio.ensure_future(made)
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert heard.wait(2.0)  # the thread heard it; it did not run on to its own end


def test_the_docs_and_the_pipeline_give_one_account_of_the_stages() -> None:
    import importlib
    import re
    from pathlib import Path

    from tinytools._run import pipeline

    names = [name for name, _ in pipeline.STAGES]
    section = (Path(__file__).parents[2] / "docs" / "concepts" / "pipeline.md").read_text(encoding="utf-8")
    assert re.findall(r"^\d+\. \*\*([A-Za-z -]+)\*\*", section, re.MULTILINE) == names
    assert re.findall(r"^\d+\. \*\*([A-Za-z -]+)\*\*", pipeline.__doc__ or "", re.MULTILINE) == names
    for _, module in pipeline.STAGES:
        importlib.import_module(f"tinytools._run.{module}")  # each stage's module is where it says


# A watched plan's call from sync code takes its stages in one frame; it ends as the coroutines end it


@tool
def greet(name: str, token: Annotated[str, Injected("token", secret=True)] = "s3cr3t-value") -> str:
    """Greet someone (and leak the token, which the boundary scrubs)."""
    if name == "boom":
        raise ValueError("no")
    return f"hello {name} {token}"


@tool
def other(name: str) -> str:
    """Where a middleware may send a call."""
    return f"other {name}"


async def _nothing() -> None:
    """What an async hook that lets the call through answers, once awaited."""


class _Answering:
    """A middleware whose hooks answer as ``answer`` says: let the call through, raise, await, or their own."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def give(self, own: dict[str, Callable[[], Any]]) -> Any:
        if self.answer == "raise":
            raise RuntimeError(f"{self.answer} failed")
        common = {"none": lambda: None, "async": _nothing}
        return {**common, **own}[self.answer]()


class _Before(_Answering):
    def before_tool(self, call: ToolCall, tool: Any) -> Any:
        return self.give(
            {
                "call": lambda: ToolCall(call.id, "other", call.arguments),
                "result": lambda: ToolResult(call_id=call.id, name=call.name, status="succeeded", output="from mw"),
            }
        )


class _After(_Answering):
    def after_tool(self, call: ToolCall, tool: Any, result: ToolResult) -> Any:
        replaced = ToolResult(call_id=call.id, name=call.name, status="succeeded", output="replaced s3cr3t-value")
        return self.give({"replace": lambda: replaced})


def _events_and_result(entry: str, before: str, after: str, sink: str, arguments: Any) -> tuple[list[Any], Any]:
    seen: list[ToolEvent] = []

    async def async_sink(event: ToolEvent) -> None:
        seen.append(event)

    on_event = {"list": seen.append, "async": async_sink, "none": None}[sink]
    dispatcher = Dispatcher([greet, other], middleware=[_Before(before), _After(after)], on_event=on_event)
    assert dispatcher.plan(greet).watched  # the case this test is about
    call = ToolCall("w1", "greet", arguments)
    result = run_call(entry, [greet, other], call, dispatcher=dispatcher)
    result.validate()
    shown = [(type(event).__name__, event.call_id) for event in seen]
    text = re.sub(r"error id [0-9a-f]+", "error id ...", result.text())  # each failure's id is its own
    return shown, (result.call_id, result.status, result.error and result.error.code, result.output, text)


@pytest.mark.parametrize("before", ["none", "call", "result", "raise", "async"])
@pytest.mark.parametrize("after", ["none", "replace", "raise", "async"])
@pytest.mark.parametrize("sink", ["list", "async", "none"])
@pytest.mark.parametrize("arguments", [{"name": "ann"}, {"name": "boom"}, {"name": 1}, '{"name": '])
def test_a_watched_call_ends_as_the_coroutine_path_ends_it(before: str, after: str, sink: str, arguments: Any) -> None:
    watched = _events_and_result("Dispatcher.dispatch", before, after, sink, arguments)
    awaited = _events_and_result("Dispatcher.adispatch", before, after, sink, arguments)
    assert watched == awaited
    if before != "call":  # a call sent to `other` carries no secret of greet's (the middleware wrote it)
        assert "s3cr3t-value" not in watched[1][4]  # scrubbed at the boundary on both paths


def test_which_plans_are_watched() -> None:
    """Middleware, a sink, secrets and a timeout leave a plan watched; a journal, retries or hooks do not."""
    assert Dispatcher([greet], middleware=[PassThrough()], on_event=lambda event: None).plan(greet).watched
    assert (
        Dispatcher([tool(greet.fn, name="timed", timeout=5.0)]).plan(tool(greet.fn, name="timed", timeout=5.0)).watched
    )
    retried = tool(greet.fn, name="retried", idempotent=True, retries=2)
    assert not Dispatcher([retried]).plan(retried).watched
    from tinytools import MemoryJournal

    assert not Dispatcher([greet], journal=MemoryJournal()).plan(greet).watched

    class Around:
        def around_tool(self, call: ToolCall, tool: Any, attempt: int) -> Any:
            import contextlib

            return contextlib.nullcontext()

    assert not Dispatcher([greet], middleware=[Around()]).plan(greet).watched


@tool(timeout=5.0)
def timed_greet(name: str) -> str:
    """Greet someone, on a pool thread (it has a timeout)."""
    if name == "boom":
        raise ValueError("no")
    return f"hi {name}"


WATCHED_OPTIONS: dict[str, dict[str, Any]] = {
    "strict": {"strict": True},
    "invalid-fail": {"invalid_args": "fail"},
    "budget": {"limits": Limits(max_tool_calls=1)},
    "redact": {"redact": lambda text: text.replace("hello", "h****")},
    "small-budget": {"max_inline_output_bytes": 64},  # the smallest: a long greeting is over it
}


def _outcome(entry: str, option: str, tool_: Any, arguments: Any) -> Any:
    seen: list[ToolEvent] = []
    dispatcher = Dispatcher([tool_, other], middleware=[PassThrough()], on_event=seen.append, **WATCHED_OPTIONS[option])
    assert dispatcher.plan(tool_).watched
    outcomes = []
    for number in (1, 2):  # a second call meets the budget
        call = ToolCall(f"w{number}", tool_.name, arguments)
        try:
            result = run_call(entry, [tool_, other], call, dispatcher=dispatcher)
        except Exception as exc:  # what a "fail" option raises to the caller
            outcomes.append((type(exc).__name__, str(exc)))
            continue
        text = re.sub(r"error id [0-9a-f]+", "error id ...", result.text())
        outcomes.append((result.call_id, result.status, result.error and result.error.code, result.output, text))
    return [(type(event).__name__, event.call_id) for event in seen], outcomes


@pytest.mark.parametrize("option", list(WATCHED_OPTIONS))
@pytest.mark.parametrize("tool_", [greet, timed_greet], ids=["inline", "timeout"])
@pytest.mark.parametrize("arguments", [{"name": "ann"}, {"name": "boom"}, {"name": 1}, '{"name": ', {"name": "n" * 80}])
def test_a_watched_call_under_each_option_ends_as_the_coroutine_path_ends_it(
    option: str, tool_: Any, arguments: Any
) -> None:
    assert _outcome("Dispatcher.dispatch", option, tool_, arguments) == _outcome(
        "Dispatcher.adispatch", option, tool_, arguments
    )


@tool(timeout=5.0)
def ask_colour(x: int) -> str:
    """Ask the user for a colour (the call parks until the answer comes)."""
    raise NeedsInput("What colour?", {"type": "string"})


@pytest.mark.parametrize("entry", ["Dispatcher.dispatch", "Dispatcher.adispatch"])
def test_a_watched_call_the_tool_parks_is_recorded_and_resumed(entry: str) -> None:
    dispatcher = Dispatcher([ask_colour], middleware=[PassThrough()])
    assert dispatcher.plan(ask_colour).watched
    parked = run_call(entry, [ask_colour], ToolCall("p1", "ask_colour", {"x": 1}), dispatcher=dispatcher)
    assert parked.status == "pending"
    assert [item.call_id for item in dispatcher.pending()] == ["p1"]
    assert dispatcher.resume(parked.pending.handle, "blue").status == "pending"  # the tool asks again


@tool
def start(x: int) -> int:
    """Where the call first goes."""
    return x


@tool(idempotency_key=lambda arguments: arguments["x"])
def pay(x: int) -> int:
    """Pay (once per x); here it is interrupted."""
    raise KeyboardInterrupt


class _SendToPay:
    def before_tool(self, call: ToolCall, tool: Any) -> ToolCall | None:
        return ToolCall(call.id, "pay", call.arguments) if call.name == "start" else None


@pytest.mark.parametrize("entry", ["Dispatcher.dispatch", "Dispatcher.adispatch"])
def test_a_watched_call_sent_elsewhere_and_cut_short_is_not_left_claimed(entry: str) -> None:
    dispatcher = Dispatcher([start, pay], middleware=[_SendToPay()])
    assert dispatcher.plan(start).watched and not dispatcher.plan(pay).watched
    with pytest.raises(KeyboardInterrupt):
        run_call(entry, [start, pay], ToolCall("k1", "start", {"x": 1}), dispatcher=dispatcher)
    assert dispatcher.journal_stage.leases.held() == {}  # released as the coroutines release it
    answered: list[ToolResult] = []  # answered, never left waiting on a claim nobody holds
    resend = threading.Thread(target=lambda: answered.append(dispatcher.dispatch(ToolCall("k1", "pay", {"x": 1}))))
    resend.daemon = True
    resend.start()
    resend.join(GENEROUS)  # a watchdog, not a measure
    assert [(r.status, r.error and r.error.code) for r in answered] == [("outcome_unknown", "outcome_unknown")]


@tool
def asks(x: int) -> str:
    """Ask the user something (a plain tool: its calls take the express path)."""
    raise NeedsInput("Which one?")


@tool
async def asks_later(x: int) -> str:
    """Ask, from an async tool."""
    raise NeedsInput("Which one?")


@pytest.mark.parametrize("entry", ["Dispatcher.dispatch", "Dispatcher.adispatch"])
@pytest.mark.parametrize("asking", [asks, asks_later], ids=["sync", "async"])
def test_every_express_call_a_tool_parks_is_pending_and_listed(entry: str, asking: Any) -> None:
    dispatcher = Dispatcher([asking])
    assert dispatcher.plan(asking).plain
    results = [
        run_call(entry, [asking], ToolCall(f"e{n}", asking.name, {"x": n}), dispatcher=dispatcher) for n in range(3)
    ]
    assert [result.status for result in results] == ["pending"] * 3  # the first call and the express ones alike
    assert sorted(item.call_id for item in dispatcher.pending()) == ["e0", "e1", "e2"]
