"""Pending calls: each source (deferred approval, external tool, `NeedsInput`/`Ask`, background
task), resuming, polling, expiry and cancellation, and the exactly-one-final-result rule.

Everything runs in this process, against a real `SQLiteJournal` in a temporary folder or the
in-memory default; the tools count what they did, so a call made twice shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest

from tinytools import (
    Ask,
    Dispatcher,
    IdempotencyKey,
    Injected,
    InjectionError,
    JournalError,
    MemoryJournal,
    NeedsInput,
    PendingError,
    RunContext,
    SQLiteJournal,
    ToolCall,
    ToolCompleted,
    ToolDefinitionError,
    ToolEvent,
    ToolPending,
    ToolPolicy,
    ToolResult,
    tool,
)
from tinytools._run.journals import JournalEntry
from tinytools.policy import Approval, PolicyMiddleware, require_approval
from tinytools.providers import anthropic, mcp, openai

DONE: list[str] = []
RELEASE = threading.Event()


@tool(policy=ToolPolicy().with_access(approval_required=True))
def pay(amount: int) -> str:
    """Pay an amount."""
    DONE.append(f"pay {amount}")
    return f"paid {amount}"


@tool(external=True)
def deploy(service: str) -> dict[str, Any]:
    """Deploy a service (the application runs it elsewhere)."""
    raise AssertionError("an external tool never runs in the dispatcher")


@tool(external=True, idempotent=True)
def lookup(item: str) -> int:
    """Look an item up elsewhere."""
    raise AssertionError("an external tool never runs in the dispatcher")


@tool
def book(flight: str, ask: Ask) -> str:
    """Book a flight, asking for a seat and a meal."""
    seat = ask("Which seat?", {"type": "string", "pattern": "^[0-9]{1,2}[A-F]$"})
    meal = ask("Which meal?", {"enum": ["veg", "meat"]})
    DONE.append(f"book {flight}")
    return f"{flight} {seat} {meal}"


@tool
def confirm(what: str) -> str:
    """Ask to confirm, with no handle: the question is all it can do."""
    raise NeedsInput(f"Confirm {what}?", {"type": "boolean"}, ttl=60)


@tool(background=True)
def crunch(n: int, key: IdempotencyKey) -> dict[str, Any]:
    """Crunch a number in the background, once released."""
    RELEASE.wait(10)
    DONE.append(f"crunch {n}")
    return {"n": n * 2, "key": str(key)}


@tool
def relay(question: str, ask: Ask) -> dict[str, Any]:
    """Ask twice, keeping with each question where the exchange stands (as a remote server's state)."""
    first = ask(question, {"type": "string"}, state=f"round-1 {question}", name="where")
    second = ask(f"And then, after {ask.state}?", {"type": "string"}, state=f"round-2 {first}")
    return {"answers": [first, second], "state": ask.state}


TOOLS = [pay, deploy, lookup, book, confirm, crunch, relay]


def defer(ttl: float | None = None) -> PolicyMiddleware:
    return PolicyMiddleware([require_approval(lambda request: Approval.defer("A person decides.", ttl=ttl))])


@pytest.fixture(autouse=True)
def _reset() -> None:
    DONE.clear()
    RELEASE.clear()


def make(
    tmp_path: Path, *, journal: bool = True, key: str = "secret", run: str = "run-1", **options: Any
) -> Dispatcher:
    options.setdefault("middleware", [defer()])
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = SQLiteJournal(tmp_path / "journal.db") if journal else None
    return Dispatcher(TOOLS, journal=store, signing_key=key, context=RunContext(run_id=run), **options)


@pytest.mark.parametrize("journal", [True, False])
def test_a_deferred_approval_is_pending_and_resumes_to_its_final_result(tmp_path: Path, journal: bool) -> None:
    seen: list[ToolEvent] = []
    dispatcher = make(tmp_path, journal=journal, on_event=seen.append)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.status == "pending" and not waiting.is_error and waiting.error is None
    pending = waiting.pending
    assert pending is not None and pending.kind == "approval"
    assert pending.request.message == "A person decides."
    assert pending.request.schema is not None and pending.request.schema["required"] == ["approved"]
    assert time.time() < pending.expires_at <= time.time() + 3600
    assert waiting.text() == "Pending: A person decides." and waiting.structured() is None
    waiting.validate()
    assert DONE == []
    final = dispatcher.resume(pending.handle, {"approved": True})
    assert (final.call_id, final.status, final.output) == ("c1", "succeeded", "paid 5")
    assert DONE == ["pay 5"]
    assert dispatcher.resume(pending.handle, {"approved": True}) == final  # the one final result, again
    assert DONE == ["pay 5"]
    kinds = [type(event) for event in seen if event.call_id == "c1"]
    assert kinds.count(ToolPending) == 1 and kinds.count(ToolCompleted) == 1


def test_a_denied_approval_is_a_policy_denial_with_the_reason(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.pending is not None
    final = dispatcher.resume(waiting.pending.handle, {"approved": False, "reason": "over budget"})
    assert final.status == "failed" and final.error is not None and final.error.code == "policy_denied"
    assert "over budget" in final.error.message and DONE == []


def test_an_answer_that_fails_its_schema_is_refused_and_the_call_stays_pending(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.pending is not None
    with pytest.raises(PendingError) as refused:
        dispatcher.resume(waiting.pending.handle, {"approved": "yes"})
    assert refused.value.code == "invalid_answer" and refused.value.pointer == "/approved"
    assert dispatcher.poll(waiting.pending.handle) == waiting
    assert dispatcher.resume(waiting.pending.handle, {"approved": True}).status == "succeeded"


def test_a_call_sent_again_while_pending_gets_the_same_pending_result(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    first = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    again = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert again == first
    assert first.pending is not None
    final = dispatcher.resume(first.pending.handle, {"approved": True})
    assert dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5})) == final
    assert DONE == ["pay 5"]


@pytest.mark.parametrize(
    "handle",
    ["", "nonsense", "a.b.c", "k.1.", "k.\u00b2.sig", "k\u00e9.1.sig", "k.1.sig\u00e9", "k\ud800.1.s"],
)
def test_a_handle_that_fails_verification_is_refused(tmp_path: Path, handle: str) -> None:
    dispatcher = make(tmp_path)
    for entry in (dispatcher.resume, dispatcher.poll, dispatcher.cancel_pending):
        with pytest.raises(PendingError) as refused:
            entry(handle, {"approved": True}) if entry is dispatcher.resume else entry(handle)
        assert refused.value.code == "bad_handle"


@pytest.mark.parametrize("handle", [17, None, b"k.1.sig"])
def test_a_handle_that_is_not_text_is_a_type_error_naming_it(tmp_path: Path, handle: Any) -> None:
    with pytest.raises(TypeError, match="handle"):
        make(tmp_path).resume(handle, {"approved": True})


@pytest.mark.parametrize("key", ["", b""])
def test_an_empty_signing_key_is_refused(key: Any) -> None:
    with pytest.raises(ValueError, match="signing_key"):
        Dispatcher(TOOLS, signing_key=key)


def test_a_tampered_or_foreign_handle_is_refused(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.pending is not None
    key, step, signature = waiting.pending.handle.split(".")
    for forged in (f"{key}.{int(step) + 1}.{signature}", f"{key[:-1]}0.{step}.{signature}"):
        with pytest.raises(PendingError) as refused:
            dispatcher.resume(forged, {"approved": True})
        assert refused.value.code == "bad_handle"
    other = make(tmp_path / "other", key="another key")
    with pytest.raises(PendingError):
        other.resume(waiting.pending.handle, {"approved": True})
    unknown = other.journal_stage.handles.handle("f" * 40, 1)
    with pytest.raises(PendingError) as missing:
        other.resume(unknown, {"approved": True})
    assert missing.value.code == "unknown_handle"
    assert DONE == []


def test_another_dispatcher_with_the_same_journal_and_key_resumes_the_call(tmp_path: Path) -> None:
    waiting = make(tmp_path).dispatch(ToolCall("c1", "pay", {"amount": 9}))
    assert waiting.pending is not None
    later = make(tmp_path, run="run-2")  # a later run, another process in the journal tests
    final = later.resume(waiting.pending.handle, {"approved": True})
    assert (final.call_id, final.output) == ("c1", "paid 9")


def test_an_external_call_is_answered_with_its_output_checked_against_the_output_schema(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c2", "deploy", {"service": "web"}))
    assert waiting.pending is not None and waiting.pending.kind == "external"
    assert waiting.pending.request.schema == deploy.output_schema
    with pytest.raises(PendingError):
        dispatcher.resume(waiting.pending.handle, ["not", "an", "object"])
    final = dispatcher.resume(waiting.pending.handle, {"url": "https://example.test"})
    assert (final.status, final.output) == ("succeeded", {"url": "https://example.test"})


def test_an_external_call_can_report_its_failure(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c2", "deploy", {"service": "web"}))
    assert waiting.pending is not None
    final = dispatcher.resume(waiting.pending.handle, error="the cluster is down")
    assert final.status == "failed" and final.error is not None
    assert (final.error.code, final.error.message) == ("tool_error", "the cluster is down")
    approval = dispatcher.dispatch(ToolCall("c3", "pay", {"amount": 1}))
    assert approval.pending is not None
    with pytest.raises(PendingError):
        dispatcher.resume(approval.pending.handle, error="no")


def test_a_tool_asks_twice_and_each_answer_is_validated(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    first = dispatcher.dispatch(ToolCall("c4", "book", {"flight": "LH1"}))
    assert first.pending is not None and first.pending.kind == "input"
    assert first.pending.request.message == "Which seat?"
    with pytest.raises(PendingError):
        dispatcher.resume(first.pending.handle, "row 12")
    second = dispatcher.resume(first.pending.handle, "12C")
    assert second.pending is not None and second.pending.request.message == "Which meal?"
    assert second.pending.handle != first.pending.handle
    assert dispatcher.resume(first.pending.handle, "14A") == second  # the old handle reads where it is now
    final = dispatcher.resume(second.pending.handle, "veg")
    assert (final.call_id, final.output) == ("c4", "LH1 12C veg")
    assert DONE == ["book LH1"]


@pytest.mark.parametrize("journal", [True, False])
def test_what_a_tool_keeps_with_its_question_comes_back_on_resume_and_is_shown_to_no_one(
    tmp_path: Path, journal: bool
) -> None:
    dispatcher = make(tmp_path, journal=journal)
    first = dispatcher.dispatch(ToolCall("c9", "relay", {"question": "Where?"}))
    assert first.pending is not None and "round-1" not in msgspec.json.encode(first).decode()
    assert first.pending.request.name == "where"  # what the tool calls its question
    assert [item.arguments for item in dispatcher.pending()] == [{"question": "Where?"}]
    resumer = make(tmp_path, run="run-2") if journal else dispatcher  # another process, through the journal
    second = resumer.resume(first.pending.handle, "north")
    assert second.pending is not None and "round-2" not in msgspec.json.encode(second).decode()
    assert second.pending.request.name is None  # the second question has no name
    assert [item.pending.request.name for item in resumer.pending(all_runs=True)] == [None]
    assert second.pending.request.message == "And then, after round-1 Where??"  # the run the answer resumed read it
    final = resumer.resume(second.pending.handle, "east")
    assert final.output == {"answers": ["north", "east"], "state": "round-2 north"}


def test_needs_input_raised_directly_is_pending_with_its_schema_and_time(tmp_path: Path) -> None:
    waiting = make(tmp_path).dispatch(ToolCall("c5", "confirm", {"what": "the order"}))
    assert waiting.pending is not None and waiting.pending.kind == "input"
    assert waiting.pending.request.schema == {"type": "boolean"}
    assert waiting.pending.expires_at <= time.time() + 60


def test_a_background_call_is_pending_until_it_finishes(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c6", "crunch", {"n": 21}))  # returns while the tool waits
    assert waiting.pending is not None and waiting.pending.kind == "task"
    assert waiting.pending.request.schema is None
    assert dispatcher.poll(waiting.pending.handle).status == "pending"
    with pytest.raises(PendingError):
        dispatcher.resume(waiting.pending.handle, {"an": "answer"})
    RELEASE.set()
    final = dispatcher.resume(waiting.pending.handle)
    assert final.status == "succeeded" and final.output["n"] == 42 and final.call_id == "c6"
    assert final.output["key"] == dispatcher.journal_stage.call_key("c6")
    assert dispatcher.poll(waiting.pending.handle) == final
    assert DONE == ["crunch 21"]


def test_a_background_call_started_from_async_code_runs_on_after_the_loop(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = asyncio.run(dispatcher.adispatch(ToolCall("c6", "crunch", {"n": 2})))
    assert waiting.pending is not None
    RELEASE.set()
    assert dispatcher.resume(waiting.pending.handle).output["n"] == 4


def test_expired_pending_calls_end_cancelled_or_outcome_unknown_once(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    approval = dispatcher.dispatch(ToolCall("a", "pay", {"amount": 1}))
    external = dispatcher.dispatch(ToolCall("e", "deploy", {"service": "web"}))
    idempotent = dispatcher.dispatch(ToolCall("i", "lookup", {"item": "x"}))
    assert dispatcher.expire(time.time()) == []  # nothing is due yet
    ended = {result.call_id: result for result in dispatcher.expire(time.time() + 7200)}
    assert {call: (r.status, r.error.code if r.error else None) for call, r in ended.items()} == {
        "a": ("failed", "expired"),
        "e": ("outcome_unknown", "expired"),
        "i": ("failed", "expired"),
    }
    for waiting in (approval, external, idempotent):
        assert waiting.pending is not None
        assert dispatcher.resume(waiting.pending.handle, {"approved": True}) == ended[waiting.call_id]
    assert dispatcher.expire(time.time() + 7200) == [] and DONE == []


def test_a_short_lived_deferral_expires_when_resumed_late(tmp_path: Path) -> None:
    dispatcher = make(tmp_path, middleware=[defer(ttl=0.05)])
    waiting = dispatcher.dispatch(ToolCall("a", "pay", {"amount": 1}))
    assert waiting.pending is not None
    time.sleep(0.1)
    late = dispatcher.resume(waiting.pending.handle, {"approved": True})
    assert late.status == "failed" and late.error is not None and late.error.code == "expired"
    assert DONE == []


def test_cancelling_the_run_ends_its_pending_calls(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    approval = dispatcher.dispatch(ToolCall("a", "pay", {"amount": 1}))
    other = make(tmp_path, run="run-2")
    elsewhere = other.dispatch(ToolCall("a", "pay", {"amount": 1}))
    dispatcher.cancel()
    assert approval.pending is not None and elsewhere.pending is not None
    final = dispatcher.poll(approval.pending.handle)
    assert final.status == "failed" and final.error is not None and final.error.code == "cancelled"
    assert other.poll(elsewhere.pending.handle).status == "pending"  # another run's call waits on
    one = other.cancel_pending(elsewhere.pending.handle)
    assert one.error is not None and one.error.code == "cancelled"
    assert other.resume(elsewhere.pending.handle, {"approved": True}) == one and DONE == []


@pytest.mark.parametrize("entry", ["dispatch", "adispatch", "dispatch_many", "adispatch_many"])
def test_every_entry_point_returns_pending_results_that_resume(tmp_path: Path, entry: str) -> None:
    dispatcher = make(tmp_path)
    calls = [ToolCall("p", "pay", {"amount": 3}), ToolCall("d", "deploy", {"service": "db"})]
    if entry == "dispatch":
        results = [dispatcher.dispatch(call) for call in calls]
    elif entry == "adispatch":
        results = [asyncio.run(dispatcher.adispatch(call)) for call in calls]
    elif entry == "dispatch_many":
        results = dispatcher.dispatch_many(calls)
    else:
        results = asyncio.run(dispatcher.adispatch_many(calls))
    assert [result.status for result in results] == ["pending", "pending"]
    handles = [result.pending.handle for result in results if result.pending is not None]
    assert dispatcher.resume(handles[0], {"approved": True}).output == "paid 3"
    assert asyncio.run(dispatcher.aresume(handles[1], {"done": True})).output == {"done": True}


@pytest.mark.parametrize("journal", [True, False])
def test_poll_and_cancel_from_async_code_end_as_their_sync_forms_do(tmp_path: Path, journal: bool) -> None:
    dispatcher = make(tmp_path, journal=journal)
    waiting = [dispatcher.dispatch(ToolCall(f"c{n}", "pay", {"amount": n})) for n in (1, 2)]
    handles = [result.pending.handle for result in waiting if result.pending is not None]

    async def in_async_code() -> list[ToolResult]:
        polled = await dispatcher.apoll(handles[0])
        cancelled = await dispatcher.acancel_pending(handles[0])
        return [polled, cancelled, await dispatcher.apoll(handles[0])]

    polled, cancelled, after = asyncio.run(in_async_code())
    assert polled.status == "pending" and polled.call_id == "c1"
    assert cancelled.status == "failed" and cancelled.error is not None and cancelled.error.code == "cancelled"
    assert after == cancelled == dispatcher.poll(handles[0])
    assert dispatcher.poll(handles[1]).status == "pending"  # the other call waits on
    assert DONE == []


def test_writers_render_a_pending_result_as_text_and_not_as_an_error(tmp_path: Path) -> None:
    waiting = make(tmp_path).dispatch(ToolCall("c1", "pay", {"amount": 5}))
    (written,) = mcp.write_results([waiting])
    assert written["content"] == [{"type": "text", "text": "Pending: A person decides."}]
    assert written["isError"] is False and "structuredContent" not in written
    assert written["_meta"]["tinytools/pending"]["handle"] == waiting.pending.handle
    (block,) = anthropic.write_results([waiting])
    assert block["content"] == "Pending: A person decides." and block["is_error"] is False
    (item,) = openai.write_results([waiting])
    assert item["content"] == "Pending: A person decides."


def test_the_idempotency_key_is_the_calls_run_and_id_stable_across_resends(tmp_path: Path) -> None:
    keys = {}
    for run in ("run-1", "run-2"):
        for n in (1, 2):
            dispatcher = make(tmp_path / run / str(n), run=run)
            waiting = dispatcher.dispatch(ToolCall(f"c{n}", "crunch", {"n": 1}))  # equal arguments, two calls
            assert waiting.pending is not None
            RELEASE.set()
            keys[run, n] = dispatcher.resume(waiting.pending.handle).output["key"]
    assert len(set(keys.values())) == 4
    again = make(tmp_path / "again", run="run-1")  # the same call sent again, to another process of the run
    waiting = again.dispatch(ToolCall("c1", "crunch", {"n": 1}))
    assert waiting.pending is not None
    assert again.resume(waiting.pending.handle).output["key"] == keys["run-1", 1]


def test_a_call_id_reused_for_other_arguments_in_a_journaled_run_is_refused(tmp_path: Path) -> None:
    dispatcher = make(tmp_path, middleware=[PolicyMiddleware([require_approval(lambda request: True)])])
    assert dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 1})).output == "paid 1"
    reused = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 2}))
    assert reused.error is not None and reused.error.code == "duplicate_call_id"
    again = dispatcher.dispatch(ToolCall("c1", "pay", '{ "amount" : 1 }'))  # the same call, spelled otherwise
    assert (again.status, again.output) == ("succeeded", "paid 1")
    assert dispatcher.dispatch(ToolCall("c2", "pay", {"amount": 1})).output == "paid 1"  # another call: it runs
    assert DONE == ["pay 1", "pay 1"]


READS: list[str] = []


@tool(cache_ttl=60, policy=ToolPolicy.read_only())
def weather(city: str) -> str:
    """Read the weather."""
    READS.append(city)
    return f"sunny in {city}"


@tool(cache_ttl=0.05, policy=ToolPolicy.read_only())
def quote(symbol: str) -> str:
    """Read a quote."""
    READS.append(symbol)
    return f"{symbol} {len(READS)}"


@pytest.mark.parametrize("journal", [True, False])
def test_a_read_only_tool_reuses_its_result_for_the_same_arguments(tmp_path: Path, journal: bool) -> None:
    READS.clear()
    store = (lambda name: SQLiteJournal(tmp_path / name)) if journal else (lambda name: None)
    first = Dispatcher([weather], journal=store("a.db")).dispatch(ToolCall("a", "weather", {"city": f"Oslo{journal}"}))
    second = Dispatcher([weather], journal=store("a.db")).dispatch(ToolCall("b", "weather", {"city": f"Oslo{journal}"}))
    assert (second.call_id, second.output) == ("b", first.output) and [f"Oslo{journal}"] == READS
    Dispatcher([weather], journal=store("a.db")).dispatch(ToolCall("c", "weather", {"city": "Rome"}))
    assert [f"Oslo{journal}", "Rome"] == READS
    one = Dispatcher([quote], journal=store("b.db")).dispatch(ToolCall("q1", "quote", {"symbol": f"X{journal}"}))
    time.sleep(0.1)
    two = Dispatcher([quote], journal=store("b.db")).dispatch(ToolCall("q2", "quote", {"symbol": f"X{journal}"}))
    assert one.output != two.output  # past its time, it is read again (another run: not journaled as one call)


def test_durable_options_that_cannot_hold_are_refused_at_definition() -> None:
    def noop(x: int) -> int:
        """Nothing."""
        return x

    with pytest.raises(ToolDefinitionError, match="read-only"):
        tool(noop, cache_ttl=10)
    with pytest.raises(ToolDefinitionError, match="positive number"):
        tool(noop, cache_ttl=0, policy=ToolPolicy.read_only())
    with pytest.raises(ToolDefinitionError, match="not both"):
        tool(noop, external=True, background=True)
    with pytest.raises(ToolDefinitionError, match="takes a function"):
        tool(noop, reconcile="yes")


# --- what an adversarial review found ---------------------------------------------------


@tool(policy=ToolPolicy().with_access(approval_required=True))
def spend(amount: int, ask: Ask) -> str:
    """Spend, after asking what for."""
    reason = ask("What for?", {"type": "string"})
    DONE.append(f"spend {amount}")
    return f"spent {amount} on {reason}"


def test_an_approvers_edit_holds_when_the_call_is_resumed(tmp_path: Path) -> None:
    cap = PolicyMiddleware([require_approval(lambda request: Approval.edit({"amount": 100}))])
    for journal in (True, False):
        dispatcher = Dispatcher(
            [spend], middleware=[cap], journal=SQLiteJournal(tmp_path / "j.db") if journal else None
        )
        waiting = dispatcher.dispatch(ToolCall(f"c{journal}", "spend", {"amount": 10_000}))
        assert waiting.pending is not None
        assert dispatcher.resume(waiting.pending.handle, "books").output == "spent 100 on books"


@tool(external=True, policy=ToolPolicy().with_access(approval_required=True))
def wire_money(amount: int) -> str:
    """Wire money (the bank's system does it, once approved)."""
    DONE.append("wired in the dispatcher")
    return "never"


def test_an_approved_external_call_waits_for_the_application_again(tmp_path: Path) -> None:
    dispatcher = Dispatcher([wire_money], middleware=[defer()], journal=SQLiteJournal(tmp_path / "j.db"))
    approval = dispatcher.dispatch(ToolCall("w", "wire_money", {"amount": 5}))
    assert approval.pending is not None
    external = dispatcher.resume(approval.pending.handle, {"approved": True})
    assert external.pending is not None and external.pending.kind == "external" and DONE == []
    assert dispatcher.resume(external.pending.handle, "wired").output == "wired"


@tool
def note(text: str, user: Annotated[str, Injected], ask: Ask) -> str:
    """Note something for the user, after asking where."""
    where = ask("Where?", {"type": "string"})
    return f"{user}: {text} in {where}"


def test_a_pending_call_of_a_tool_with_injected_values_resumes_with_them(tmp_path: Path) -> None:
    dispatcher = Dispatcher([note], journal=SQLiteJournal(tmp_path / "j.db"))
    waiting = dispatcher.dispatch(ToolCall("n", "note", {"text": "milk"}), inject={"user": "ada"})
    assert waiting.pending is not None
    with pytest.raises(InjectionError):
        dispatcher.resume(waiting.pending.handle, "the list")
    assert dispatcher.poll(waiting.pending.handle).status == "pending"  # nothing lost
    final = dispatcher.resume(
        dispatcher.poll(waiting.pending.handle).pending.handle, "the list", inject={"user": "ada"}
    )
    assert final.output == "ada: milk in the list"


def test_tools_that_cannot_be_cached_safely_are_refused_or_kept_apart() -> None:
    def mail(user: Annotated[str, Injected]) -> str:
        """Read the user's mail."""
        return user

    with pytest.raises(ToolDefinitionError, match="per-call values"):
        tool(mail, cache_ttl=60, policy=ToolPolicy.read_only())

    def secret_of(tenant: str) -> Any:
        @tool(name="secret", cache_ttl=60, policy=ToolPolicy.read_only())
        def read(field: str) -> str:
            """Read a tenant's field."""
            return f"{tenant} {field}"

        return read

    first, second = secret_of("A"), secret_of("B")
    assert Dispatcher([first]).dispatch(ToolCall("1", "secret", {"field": "x"})).output == "A x"
    assert Dispatcher([second]).dispatch(ToolCall("2", "secret", {"field": "x"})).output == "B x"


STARTED = threading.Event()


@tool(policy=ToolPolicy().with_access(approval_required=True))
def slow_pay(amount: int) -> str:
    """Pay, slowly."""
    STARTED.set()
    RELEASE.wait(10)
    DONE.append(f"slow_pay {amount}")
    return f"paid {amount}"


class _ResumedMeanwhile(MemoryJournal):
    """A journal whose sweep for due calls lets a resume in first: expiry then meets a moved entry."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: Any = None

    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        found = super().waiting(run_id)
        if self.meanwhile is not None:
            threading.Thread(target=self.meanwhile, daemon=True).start()
            assert STARTED.wait(10)  # the resume moved the entry on, and the tool is running
        return found


def test_expiry_racing_a_resume_leaves_the_one_final_result_the_resume_makes() -> None:
    STARTED.clear()
    seen: list[ToolEvent] = []
    journal = _ResumedMeanwhile()
    dispatcher = Dispatcher([slow_pay], middleware=[defer()], journal=journal, on_event=seen.append)
    waiting = dispatcher.dispatch(ToolCall("s", "slow_pay", {"amount": 1}))
    assert waiting.pending is not None
    finals: list[Any] = []
    handle = waiting.pending.handle
    journal.meanwhile = lambda: finals.append(dispatcher.resume(handle, {"approved": True}))
    assert dispatcher.expire(time.time() + 7200) == []  # resumed first: no longer waiting
    journal.meanwhile = None
    RELEASE.set()
    for _ in range(500):
        if finals:
            break
        time.sleep(0.01)
    assert finals[0].status == "succeeded" and dispatcher.poll(handle) == finals[0]
    assert sum(isinstance(event, ToolCompleted) for event in seen) == 1 and DONE == ["slow_pay 1"]


def test_a_running_background_call_that_expires_is_told_once(tmp_path: Path) -> None:
    seen: list[ToolEvent] = []
    dispatcher = make(tmp_path, on_event=seen.append)
    waiting = dispatcher.dispatch(ToolCall("t", "crunch", {"n": 1}))
    assert waiting.pending is not None
    (ended,) = dispatcher.expire(time.time() + 7200)
    RELEASE.set()
    for _ in range(200):
        if not dispatcher.journal_stage.tasks:
            break
        time.sleep(0.01)
    assert ended.status == "outcome_unknown" and dispatcher.poll(waiting.pending.handle) == ended
    assert sum(isinstance(event, ToolCompleted) for event in seen) == 1


@pytest.mark.parametrize("answer", [float("nan"), float("inf"), {"n": float("nan")}, object(), [1, {2}]])
def test_an_answer_that_is_not_json_data_is_refused_and_nothing_changes(tmp_path: Path, answer: Any) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("e", "deploy", {"service": "web"}))
    assert waiting.pending is not None
    with pytest.raises(PendingError) as refused:
        dispatcher.resume(waiting.pending.handle, answer)
    assert refused.value.code == "invalid_answer"
    assert dispatcher.poll(waiting.pending.handle) == waiting


@tool
def secretive(what: str, token: Annotated[str, Injected("token", secret=True)]) -> str:
    """Ask something whose schema holds a secret by mistake."""
    raise NeedsInput("Which?", {"enum": [token, "other"], "description": f"not {token}"})


def test_a_secret_in_a_requested_schema_is_scrubbed(tmp_path: Path) -> None:
    dispatcher = Dispatcher([secretive], journal=SQLiteJournal(tmp_path / "j.db"))
    waiting = dispatcher.dispatch(ToolCall("x", "secretive", {"what": "a"}), inject={"token": "hunter2-very-secret"})
    assert waiting.pending is not None
    assert "hunter2" not in str(waiting.pending.request.schema)
    assert b"hunter2" not in (tmp_path / "j.db").read_bytes()


# --- pending calls that cannot be lost -------------------------------------------------------

STARTS: list[int] = []


@tool(policy=ToolPolicy().with_access(approval_required=True))
def transfer(amount: int, bank: Annotated[str, Injected("bank")]) -> str:
    """Transfer money through the user's bank, once approved."""
    DONE.append(f"transfer {amount} via {bank}")
    return f"sent {amount}"


@tool(background=True)
def index(folder: str, disk: Annotated[str, Injected("disk")]) -> str:
    """Index a folder of a disk, in the background."""
    STARTS.append(1)
    RELEASE.wait(10)
    return f"indexed {folder} on {disk}"


@pytest.mark.parametrize("journal", [True, False])
def test_an_approval_resumed_without_its_injected_values_keeps_waiting(tmp_path: Path, journal: bool) -> None:
    dispatcher = make(tmp_path, journal=journal)
    dispatcher.toolbox.add(transfer)
    waiting = dispatcher.dispatch(ToolCall("t1", "transfer", {"amount": 7}), inject={"bank": "ing"})
    assert waiting.pending is not None
    with pytest.raises(InjectionError) as missing:
        dispatcher.resume(waiting.pending.handle, {"approved": True})
    assert (missing.value.tool, missing.value.parameter) == ("transfer", "bank")
    assert dispatcher.poll(waiting.pending.handle).status == "pending"
    assert [item.call_id for item in dispatcher.pending()] == ["t1"]
    final = dispatcher.resume(waiting.pending.handle, {"approved": True}, inject={"bank": "ing"})
    assert (final.status, final.output, DONE) == ("succeeded", "sent 7", ["transfer 7 via ing"])
    assert dispatcher.pending() == []


@pytest.mark.parametrize("journal", [True, False])
def test_a_background_call_that_cannot_start_says_so_at_once(tmp_path: Path, journal: bool) -> None:
    STARTS.clear()
    dispatcher = make(tmp_path, journal=journal)
    dispatcher.toolbox.add(index)
    missing = dispatcher.dispatch(ToolCall("i1", "index", {"folder": "docs"}))
    assert missing.status == "failed" and missing.error is not None
    assert missing.error.code == "missing_injected_value" and "'disk'" in missing.error.message
    assert dispatcher.pending() == [] and STARTS == []
    batch = dispatcher.dispatch_many([ToolCall("i2", "index", {"folder": "a"}), ToolCall("p", "pay", {"amount": 1})])
    assert [result.status for result in batch] == ["failed", "pending"]  # nothing else of the batch is lost
    RELEASE.set()
    waiting = dispatcher.dispatch(ToolCall("i3", "index", {"folder": "docs"}), inject={"disk": "d0"})
    assert waiting.pending is not None
    assert dispatcher.resume(waiting.pending.handle).output == "indexed docs on d0" and STARTS == [1]


@pytest.mark.parametrize("entry", ["dispatch", "adispatch", "dispatch_many"])
def test_a_background_call_sent_again_without_a_journal_starts_once(tmp_path: Path, entry: str) -> None:
    STARTS.clear()
    dispatcher = make(tmp_path, journal=False)
    dispatcher.toolbox.add(index)

    def send(call_id: str) -> Any:
        call = ToolCall(call_id, "index", {"folder": "docs"})
        if entry == "adispatch":
            return asyncio.run(dispatcher.adispatch(call, inject={"disk": "d0"}))
        if entry == "dispatch_many":
            return dispatcher.dispatch_many([call], inject={"disk": "d0"})[0]
        return dispatcher.dispatch(call, inject={"disk": "d0"})

    first, again = send("i1"), send("i1")
    assert first.pending is not None and again.pending is not None
    assert again.pending.handle == first.pending.handle
    RELEASE.set()
    final = dispatcher.resume(first.pending.handle)
    assert send("i1") == final and STARTS == [1]
    second = send("i2")
    assert second.pending is not None
    assert dispatcher.resume(second.pending.handle).status == "succeeded" and STARTS == [1, 1]


def _spoil(path: Path, column: str, run: str | None = None) -> None:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as db, db:
        where = "" if run is None else f" WHERE run_id = '{run}'"
        db.execute(f"UPDATE tinytools_journal SET {column} = x'00ff7b'{where}")


def test_a_journal_entry_that_cannot_be_read_is_a_journal_error_never_a_decoder_error(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.pending is not None
    _spoil(tmp_path / "journal.db", "pending")
    for attempt in (
        lambda: dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5})),
        lambda: dispatcher.poll(waiting.pending.handle),
        lambda: dispatcher.resume(waiting.pending.handle, {"approved": True}),
    ):
        with pytest.raises(JournalError, match="'c1'"):
            attempt()
    assert dispatcher.pending() == []  # left out, and logged
    finished = make(tmp_path / "done", middleware=[PolicyMiddleware([require_approval(lambda request: True)])])
    assert finished.dispatch(ToolCall("c2", "pay", {"amount": 1})).output == "paid 1"
    _spoil(tmp_path / "done" / "journal.db", "result")
    with pytest.raises(JournalError, match="final result"):
        finished.dispatch(ToolCall("c2", "pay", {"amount": 1}))
    assert DONE == ["pay 1"]


def test_one_unreadable_entry_of_another_run_never_stops_expire(tmp_path: Path) -> None:
    other = make(tmp_path, run="other-run")
    assert other.dispatch(ToolCall("o1", "pay", {"amount": 1})).pending is not None
    _spoil(tmp_path / "journal.db", "pending", run="other-run")
    mine = make(tmp_path, middleware=[defer(ttl=0.01)])
    assert mine.dispatch(ToolCall("m1", "pay", {"amount": 2})).pending is not None
    ended = mine.expire(now=time.time() + 1)
    assert [(result.call_id, result.status) for result in ended] == [("m1", "failed")]


def test_text_another_program_wrote_into_an_entry_is_skipped_by_expire_and_the_inbox(tmp_path: Path) -> None:
    import sqlite3

    other = make(tmp_path, run="other-run")
    assert other.dispatch(ToolCall("o1", "pay", {"amount": 1})).pending is not None
    with contextlib.closing(sqlite3.connect(tmp_path / "journal.db")) as db, db:
        db.execute("UPDATE tinytools_journal SET pending = 'not json at all' WHERE run_id = 'other-run'")
    mine = make(tmp_path, middleware=[defer(ttl=0.01)])
    assert mine.dispatch(ToolCall("m1", "pay", {"amount": 2})).pending is not None
    assert [item.call_id for item in mine.pending(all_runs=True)] == ["m1"]
    assert [result.call_id for result in mine.expire(now=time.time() + 1)] == ["m1"]


def test_unreadable_arguments_are_refused_before_the_call_moves(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    waiting = dispatcher.dispatch(ToolCall("c1", "pay", {"amount": 5}))
    assert waiting.pending is not None
    _spoil(tmp_path / "journal.db", "arguments")
    with pytest.raises(JournalError, match="arguments"):
        dispatcher.resume(waiting.pending.handle, {"approved": True})
    assert [item.call_id for item in dispatcher.pending()] == ["c1"]  # still waiting, still listed
    assert dispatcher.cancel_pending(waiting.pending.handle).status == "failed" and DONE == []


@tool(policy=ToolPolicy().with_access(approval_required=True))
def send_note(note: list[str], key: Annotated[str, Injected("key", secret=True)]) -> str:
    """Send a note with a secret key, once approved."""
    return "sent"


def test_the_inbox_scrubs_secrets_inside_any_container(tmp_path: Path) -> None:
    dispatcher = make(tmp_path)
    dispatcher.toolbox.add(send_note)
    secret = "sk-live-0123456789abcdef"
    call = ToolCall("t1", "send_note", {"note": (secret, "b")})  # built by the application, with a tuple
    assert dispatcher.dispatch(call, inject={"key": secret}).pending is not None
    (item,) = dispatcher.pending()
    assert secret[:8] not in str(item.arguments) and item.arguments["note"][1] == "b"


@tool(policy=ToolPolicy().with_access(approval_required=True))
def slow_approved(n: int) -> str:
    """Runs a while once approved."""
    STARTED.set()
    RELEASE.wait(10)
    return f"slow {n}"


def test_polling_or_cancelling_a_call_that_runs_says_it_runs_and_waits_for_its_end(tmp_path: Path) -> None:
    STARTED.clear()
    dispatcher = make(tmp_path)
    dispatcher.toolbox.add(slow_approved)
    waiting = dispatcher.dispatch(ToolCall("s1", "slow_approved", {"n": 1}))
    assert waiting.pending is not None
    worker = threading.Thread(target=dispatcher.resume, args=(waiting.pending.handle, {"approved": True}))
    worker.start()
    assert STARTED.wait(10)
    running = dispatcher.poll(waiting.pending.handle)
    assert running.pending is not None and running.pending.kind == "task"
    assert "running" in running.pending.request.message
    RELEASE.set()
    assert dispatcher.cancel_pending(waiting.pending.handle).output == "slow 1"
    worker.join(10)
