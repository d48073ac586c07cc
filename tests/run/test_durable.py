"""What a journaled call is: its run and its call id, whatever its arguments.

- Two call ids are two calls, even with equal arguments (a model polls a status tool, or means to
  add 1 twice), on every entry point and under every option that changes a call's path.
- The same call id is answered from the journal, whatever the spelling of its arguments; the
  same id with other content is ``duplicate_call_id``.
- A tool that declares what "the same act" is (``idempotency_key=``) has calls merged by it, and
  its injected `IdempotencyKey` is the act's.
- Ids the library makes itself (Gemini's, text calls') never repeat across turns.
- Reused results never cross callers: ``cache_ttl`` is refused for tools that take per-call values.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Annotated, Any

import pytest
from google.genai import types as genai
from pydantic import Field

from tinytools import (
    Ask,
    CancellationToken,
    CancelledCall,
    Dispatcher,
    IdempotencyKey,
    Injected,
    Invocation,
    JournalError,
    MemoryJournal,
    Progress,
    RunContext,
    SQLiteJournal,
    Stores,
    TinyToolsError,
    ToolCall,
    ToolDefinitionError,
    ToolPolicy,
    tool,
)
from tinytools.formats import parse_calls
from tinytools.providers import gemini

from .paths import BATCH_ENTRIES, DISPATCHER_ENTRIES, VARIANTS, options, run_call

JOBS: dict[str, int] = {}
COUNTER = [0]
PAID: list[tuple[str, float]] = []


@tool(policy=ToolPolicy.read_only())
def job_status(job: str) -> int:
    """How far a job has got: each look finds it further along."""
    JOBS[job] = JOBS.get(job, 0) + 1
    return JOBS[job]


@tool
def bump(n: int) -> int:
    """Add ``n`` to the counter."""
    COUNTER[0] += n
    return COUNTER[0]


@tool
def pay(order: str, amount: float, currency: str = "EUR", tags: frozenset[str] = frozenset()) -> str:
    """Pay for an order."""
    PAID.append((order, amount))
    return f"paid {amount} {currency} for {order}"


@tool(name="pay_once", idempotency_key=lambda arguments: arguments["order"])
def pay_once(
    order: str, amount: float, key: IdempotencyKey, currency: str = "EUR", tags: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Pay for an order, once per order however often it is asked."""
    PAID.append((order, amount))
    return {"paid": amount, "key": str(key)}


@pytest.fixture(autouse=True)
def _reset() -> None:
    JOBS.clear()
    COUNTER[0] = 0
    PAID.clear()


def _journal(kind: str, tmp_path: Path) -> Any:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return SQLiteJournal(tmp_path / "journal.db") if kind == "sqlite" else MemoryJournal()


# --- two call ids are two calls ------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_polls_and_repeated_requests_are_calls_of_their_own(
    tmp_path: Path, kind: str, entry: str, variant: str
) -> None:
    dispatcher = Dispatcher(
        [job_status, bump], journal=_journal(kind, tmp_path), context=RunContext(run_id="r1"), **options(variant)
    )
    polls = [
        run_call(entry, [], ToolCall(f"p{i}", "job_status", {"job": "j1"}), dispatcher=dispatcher) for i in range(3)
    ]
    assert [result.output for result in polls] == [1, 2, 3]
    bumps = [run_call(entry, [], ToolCall(f"b{i}", "bump", {"n": 1}), dispatcher=dispatcher) for i in range(2)]
    assert [result.output for result in bumps] == [1, 2] and COUNTER == [2]
    again = run_call(entry, [], ToolCall("b1", "bump", {"n": 1}), dispatcher=dispatcher)  # re-sent: answered
    assert (again.call_id, again.output) == ("b1", 2) and COUNTER == [2]


@pytest.mark.parametrize("entry", BATCH_ENTRIES)
def test_equal_calls_in_one_batch_each_run(tmp_path: Path, entry: str) -> None:
    dispatcher = Dispatcher([bump], journal=SQLiteJournal(tmp_path / "j.db"), context=RunContext(run_id="r"))
    calls = [ToolCall(f"b{i}", "bump", {"n": 1}) for i in range(4)]
    results = (
        dispatcher.dispatch_many(calls)
        if entry.endswith("dispatch_many") and "adispatch" not in entry
        else (asyncio.run(dispatcher.adispatch_many(calls)))
    )
    assert sorted(result.output for result in results) == [1, 2, 3, 4] and COUNTER == [4]


SPELLINGS = [
    {"order": "o1", "amount": 100},
    {"amount": 100.0, "order": "o1"},
    {"order": "o1", "amount": 100, "currency": "EUR"},
    {"order": "o1", "amount": 1e2, "tags": []},
]
"""One payment, spelled four ways: an integer for a float, key order, an explicit default, an empty set."""


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_one_call_id_in_four_spellings_is_one_call(tmp_path: Path, kind: str) -> None:
    dispatcher = Dispatcher([pay], journal=_journal(kind, tmp_path), context=RunContext(run_id="r"))
    results = [dispatcher.dispatch(ToolCall("c1", "pay", spelling)) for spelling in SPELLINGS]
    assert {result.status for result in results} == {"succeeded"} and PAID == [("o1", 100.0)]
    text = dispatcher.dispatch(ToolCall("c1", "pay", '{"order": "o1", "amount": 100.00, "tags": []}'))
    assert text.output == results[0].output and len(PAID) == 1
    other = dispatcher.dispatch(ToolCall("c1", "pay", {"order": "o1", "amount": 100.5}))
    assert other.error is not None and other.error.code == "duplicate_call_id" and len(PAID) == 1


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_four_call_ids_are_four_payments_unless_the_tool_declares_its_act(tmp_path: Path, kind: str) -> None:
    plain = Dispatcher([pay], journal=_journal(kind, tmp_path / "a"), context=RunContext(run_id="r"))
    for n, spelling in enumerate(SPELLINGS):
        assert plain.dispatch(ToolCall(f"c{n}", "pay", spelling)).status == "succeeded"
    assert PAID == [("o1", 100.0)] * 4
    PAID.clear()
    declared = Dispatcher([pay_once], journal=_journal(kind, tmp_path / "b"), context=RunContext(run_id="r"))
    results = [declared.dispatch(ToolCall(f"c{n}", "pay_once", spelling)) for n, spelling in enumerate(SPELLINGS)]
    assert PAID == [("o1", 100.0)]
    assert [result.call_id for result in results] == ["c0", "c1", "c2", "c3"]
    assert len({str(result.output) for result in results}) == 1
    assert results[0].output["key"] not in (
        declared.journal_stage.call_key("c0"),
        declared.journal_stage.call_key("c1"),
    )
    again = declared.dispatch(ToolCall("c1", "pay_once", {"order": "o2", "amount": 1}))  # c1 is its own call
    assert again.error is not None and again.error.code == "duplicate_call_id"
    another = declared.dispatch(ToolCall("c9", "pay_once", {"order": "o2", "amount": 5}))
    assert another.output["key"] != results[0].output["key"] and PAID == [("o1", 100.0), ("o2", 5.0)]


def test_a_declared_act_without_a_journal_is_still_one_act_within_the_run() -> None:
    dispatcher = Dispatcher([pay_once])
    for n in range(3):
        assert dispatcher.dispatch(ToolCall(f"c{n}", "pay_once", {"order": "o1", "amount": 1})).status == "succeeded"
    assert PAID == [("o1", 1.0)]
    assert Dispatcher([pay_once]).dispatch(ToolCall("c0", "pay_once", {"order": "o1", "amount": 1})).output
    assert len(PAID) == 2  # another run: another act


def test_an_idempotency_key_function_that_raises_fails_the_call_and_nothing_runs(tmp_path: Path) -> None:
    @tool(idempotency_key=lambda arguments: arguments["missing"])
    def careless(n: int) -> int:
        """Declares a key from an argument it does not have."""
        PAID.append(("careless", n))
        return n

    result = Dispatcher([careless], journal=SQLiteJournal(tmp_path / "j.db")).dispatch(
        ToolCall("c1", "careless", {"n": 1})
    )
    assert result.error is not None and result.error.code == "tool_error" and PAID == []
    with pytest.raises(ToolDefinitionError, match="idempotency_key"):
        tool(bump.fn, name="bad", idempotency_key="order")


def test_the_injected_key_is_the_calls_own_and_stable_across_resends(tmp_path: Path) -> None:
    @tool
    def keyed(n: int, key: IdempotencyKey) -> str:
        """Return the key a call was given."""
        return str(key)

    journal = SQLiteJournal(tmp_path / "j.db")
    first = Dispatcher([keyed], journal=journal, context=RunContext(run_id="r"))
    one, two = (first.dispatch(ToolCall(call_id, "keyed", {"n": 1})).output for call_id in ("a", "b"))
    assert one != two and one == first.journal_stage.call_key("a")
    elsewhere = Dispatcher([keyed], context=RunContext(run_id="r"))  # no journal: the same key all the same
    assert elsewhere.dispatch(ToolCall("a", "keyed", {"n": 1})).output == one


# --- ids the library makes -------------------------------------------------------------------


def _gemini_turn(response_id: str | None = None) -> genai.GenerateContentResponse:
    call = genai.FunctionCall(name="job_status", args={"job": "j1"})
    content = genai.Content(role="model", parts=[genai.Part(function_call=call)])
    return genai.GenerateContentResponse(candidates=[genai.Candidate(content=content)], response_id=response_id)


def test_three_gemini_turns_without_ids_are_three_calls(tmp_path: Path) -> None:
    dispatcher = Dispatcher([job_status], journal=SQLiteJournal(tmp_path / "j.db"), context=RunContext(run_id="r"))
    outputs, ids = [], []
    for _ in range(3):
        (call,) = gemini.read_calls(_gemini_turn())
        result = dispatcher.dispatch(call)
        ids.append(call.id)
        outputs.append(result.output)
        (part,) = gemini.write_results([result])
        assert "id" not in part["functionResponse"]  # Gemini matches it by name and order
    assert outputs == [1, 2, 3] and len(set(ids)) == 3


def test_gemini_ids_come_from_the_response_id_or_the_turn_given() -> None:
    response = _gemini_turn("resp-7")
    assert gemini.read_calls(response) == gemini.read_calls(response)  # read again: the same ids
    assert gemini.read_calls(response)[0].id != gemini.read_calls(_gemini_turn("resp-8"))[0].id
    parts = response.candidates[0].content.parts
    assert gemini.read_calls(parts, turn="t1") == gemini.read_calls(parts, turn="t1")
    assert gemini.read_calls(parts, turn="t1") != gemini.read_calls(parts, turn="t2")
    assert gemini.read_calls(parts) != gemini.read_calls(parts)


def test_text_calls_without_ids_never_repeat_an_id_across_turns(tmp_path: Path) -> None:
    reply = 'Checking. {"name": "job_status", "arguments": {"job": "j1"}}'
    assert parse_calls(reply, [job_status], turn="3") == parse_calls(reply, [job_status], turn="3")
    dispatcher = Dispatcher([job_status], journal=SQLiteJournal(tmp_path / "j.db"), context=RunContext(run_id="r"))
    outputs = [dispatcher.dispatch(parse_calls(reply, [job_status])[0]).output for _ in range(3)]
    assert outputs == [1, 2, 3]


# --- results reused only for the same caller --------------------------------------------------


@pytest.mark.parametrize(
    "hint", [Invocation, Stores, Progress, CancellationToken, Ask, ToolCall, Annotated[str, Injected("user")]]
)
def test_a_cached_tool_that_takes_a_per_call_value_is_refused(hint: Any) -> None:
    def orders(status: str, who: Any) -> list[str]:
        """The orders of the caller."""
        return []

    orders.__annotations__["who"] = hint
    with pytest.raises(ToolDefinitionError, match="per-call values") as refused:
        tool(orders, cache_ttl=60, policy=ToolPolicy.read_only())
    assert refused.value.tool == "orders" and "who" in str(refused.value)


def test_bob_never_reads_alices_orders() -> None:
    @tool(policy=ToolPolicy.read_only())
    def my_orders(status: str, invocation: Invocation) -> str:
        """The caller's orders."""
        return f"orders of {invocation.actor}"

    alice = Dispatcher([my_orders], context=RunContext(actor="alice"))
    bob = Dispatcher([my_orders], context=RunContext(actor="bob"))
    assert alice.dispatch(ToolCall("1", "my_orders", {"status": "open"})).output == "orders of alice"
    assert bob.dispatch(ToolCall("1", "my_orders", {"status": "open"})).output == "orders of bob"


# --- every public exception is a TinyToolsError -----------------------------------------------


def test_journal_and_cancellation_errors_are_tinytools_errors(tmp_path: Path) -> None:
    assert issubclass(JournalError, TinyToolsError) and issubclass(CancelledCall, TinyToolsError)
    noise = tmp_path / "noise.db"
    noise.write_bytes(b"\x00" * 4096)
    with pytest.raises(TinyToolsError):
        SQLiteJournal(noise)
    token = CancellationToken()
    token.cancel()
    with pytest.raises(TinyToolsError):
        token.raise_if_cancelled()


def test_ids_of_many_reads_are_unique() -> None:
    parts = _gemini_turn().candidates[0].content.parts
    ids = [gemini.read_calls(parts)[0].id for _ in range(200)]
    assert len(set(ids)) == 200 and all(i.startswith(gemini.LOCAL_ID_PREFIX) for i in itertools.islice(ids, 3))


def test_each_invoke_is_a_call_of_its_own() -> None:
    assert [bump.invoke({"n": 1}).output for _ in range(3)] == [1, 2, 3]
    first, second = pay_once.invoke({"order": "a", "amount": 1}), pay_once.invoke({"order": "b", "amount": 2})
    assert first.call_id != second.call_id and PAID == [("a", 1.0), ("b", 2.0)]


# --- acts are claimed just before the tool runs, on the final arguments ------------------------


def _deferring() -> Any:
    from tinytools.policy import Approval, PolicyMiddleware, require_approval

    return PolicyMiddleware([require_approval(lambda request: Approval.defer("A person decides."))])


@tool(
    name="charge_once",
    idempotency_key=lambda arguments: arguments["order"],
    policy=ToolPolicy().with_access(approval_required=True),
)
def charge_once(order: str, amount: float) -> str:
    """Charge an order once, after approval."""
    PAID.append((order, amount))
    return f"charged {order}"


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_two_calls_of_one_act_each_get_their_own_handle_and_result(tmp_path: Path, kind: str) -> None:
    from tinytools import ToolCompleted, ToolEvent

    seen: list[ToolEvent] = []
    dispatcher = Dispatcher(
        [charge_once], journal=_journal(kind, tmp_path), middleware=[_deferring()], on_event=seen.append
    )
    first = dispatcher.dispatch(ToolCall("k1", "charge_once", {"order": "o-1", "amount": 5}))
    second = dispatcher.dispatch(ToolCall("k2", "charge_once", {"order": "o-1", "amount": 5}))
    assert first.pending is not None and second.pending is not None
    assert first.pending.handle != second.pending.handle
    assert sorted(item.call_id for item in dispatcher.pending()) == ["k1", "k2"]
    done = [dispatcher.resume(waiting.pending.handle, {"approved": True}) for waiting in (second, first)]
    assert [(result.call_id, result.output) for result in done] == [("k2", "charged o-1"), ("k1", "charged o-1")]
    assert PAID == [("o-1", 5.0)]
    assert sorted(event.call_id for event in seen if isinstance(event, ToolCompleted)) == ["k1", "k2"]


def test_an_approvers_edit_decides_the_act(tmp_path: Path) -> None:
    from tinytools.policy import Approval, PolicyMiddleware, require_approval

    fix = PolicyMiddleware(
        [
            require_approval(
                lambda request: Approval.edit({**request.arguments, "order": request.arguments["order"][:3]})
            )
        ]
    )
    dispatcher = Dispatcher([charge_once], journal=SQLiteJournal(tmp_path / "j.db"), middleware=[fix])
    assert dispatcher.dispatch(ToolCall("a", "charge_once", {"order": "o-2x", "amount": 1})).output == "charged o-2"
    assert dispatcher.dispatch(ToolCall("b", "charge_once", {"order": "o-2", "amount": 1})).output == "charged o-2"
    assert PAID == [("o-2", 1.0)]


def test_an_act_refused_before_it_ran_can_still_be_made(tmp_path: Path) -> None:
    from tinytools.policy import PolicyMiddleware, require_approval

    small = PolicyMiddleware([require_approval(lambda request: request.arguments["amount"] < 1000)])
    dispatcher = Dispatcher([charge_once], journal=SQLiteJournal(tmp_path / "j.db"), middleware=[small])
    refused = dispatcher.dispatch(ToolCall("k1", "charge_once", {"order": "o-1", "amount": 10_000}))
    assert refused.error is not None and refused.error.code == "policy_denied"
    assert dispatcher.dispatch(ToolCall("k2", "charge_once", {"order": "o-1", "amount": 100})).output == "charged o-1"
    assert PAID == [("o-1", 100.0)]


def test_without_a_journal_a_deferred_approval_sent_again_is_asked_once_and_runs_once() -> None:
    from tinytools.policy import Approval, PolicyMiddleware, require_approval

    asked: list[str] = []

    def approver(request: Any) -> Any:
        asked.append(request.call.id)
        return Approval.defer("Later.")

    @tool(name="bump", policy=ToolPolicy().with_access(approval_required=True))
    def approved_bump(n: int) -> int:
        """Add n, once approved."""
        return bump.fn(n)

    dispatcher = Dispatcher([approved_bump], middleware=[PolicyMiddleware([require_approval(approver)])])
    first = dispatcher.dispatch(ToolCall("c1", "bump", {"n": 1}))
    again = dispatcher.dispatch(ToolCall("c1", "bump", {"n": 1}))
    assert asked == ["c1"] and first.pending is not None and again.pending is not None
    assert dispatcher.resume(first.pending.handle, {"approved": True}).output == 1
    assert dispatcher.resume(again.pending.handle, {"approved": True}).output == 1 and COUNTER == [1]


def test_a_toolbox_default_dispatcher_keeps_no_run_between_one_line_calls() -> None:
    from tinytools import dispatch

    assert pay_once.invoke({"order": "o-1", "amount": 5}).output["paid"] == 5.0
    assert pay_once.invoke({"order": "o-1", "amount": 7}).output["paid"] == 7.0  # no run: another act
    call = ToolCall("call_0", "pay_once", {"order": "o-9", "amount": 1})
    assert dispatch(call, [pay_once]).status == "succeeded"
    other = ToolCall("call_0", "pay_once", {"order": "o-10", "amount": 2})  # another conversation, the same id
    assert dispatch(other, [pay_once]).status == "succeeded" and len(PAID) == 4


def test_gemini_chunks_of_one_streamed_response_never_share_an_id() -> None:
    chunks = [
        genai.GenerateContentResponse(
            candidates=[
                genai.Candidate(
                    content=genai.Content(
                        role="model", parts=[genai.Part(function_call=genai.FunctionCall(name="bump", args={"n": n}))]
                    )
                )
            ],
            response_id="R1",
        )
        for n in (1, 2)
    ]
    ids = [gemini.read_calls(chunk)[0].id for chunk in chunks]
    assert len(set(ids)) == 2 and all(i.startswith("gemini:R1:0-") for i in ids)


@tool
def anything(value: Any, tags: Annotated[list[str], Field(default_factory=list)]) -> str:
    """Take any JSON value."""
    return "ok"


def test_content_is_compared_as_written_not_by_python_equality(tmp_path: Path) -> None:
    dispatcher = Dispatcher([anything], journal=SQLiteJournal(tmp_path / "j.db"))
    assert dispatcher.dispatch(ToolCall("a", "anything", {"value": 1})).output == "ok"
    for other in (True, 1.5, {"a": 0}):
        refused = dispatcher.dispatch(ToolCall("a", "anything", {"value": other}))
        assert refused.error is not None and refused.error.code == "duplicate_call_id"
    assert dispatcher.dispatch(ToolCall("b", "anything", {"value": {"a": 0}})).output == "ok"
    refused = dispatcher.dispatch(ToolCall("b", "anything", {"value": {"a": False}}))
    assert refused.error is not None and refused.error.code == "duplicate_call_id"
    assert dispatcher.dispatch(ToolCall("b", "anything", {"value": {"a": 0}, "tags": []})).output == "ok"


def test_an_idempotency_key_of_none_names_no_act_and_a_nan_is_refused(tmp_path: Path) -> None:
    @tool(idempotency_key=lambda arguments: None if arguments["n"] > 0 else float("nan"))
    def count(n: int) -> int:
        """Count."""
        COUNTER[0] += 1
        return COUNTER[0]

    dispatcher = Dispatcher([count], journal=SQLiteJournal(tmp_path / "j.db"))
    assert [dispatcher.dispatch(ToolCall(f"c{i}", "count", {"n": 1})).output for i in range(2)] == [1, 2]
    refused = dispatcher.dispatch(ToolCall("z", "count", {"n": 0}))
    assert refused.error is not None and refused.error.code == "tool_error" and COUNTER == [2]


def test_cached_results_of_tools_made_per_request_never_cross_users() -> None:
    import gc

    def orders_for(user: str) -> Any:
        @tool(name="orders", cache_ttl=60, policy=ToolPolicy.read_only())
        def orders(status: str) -> str:
            """The user's orders."""
            return f"orders of {user}"

        return orders

    gc.freeze()  # what the suite holds already is left out: a collection scans this test's objects alone
    try:
        for n in range(200):
            user = f"user{n}"
            assert Dispatcher([orders_for(user)]).dispatch(ToolCall("1", "orders", {"status": "open"})).output == (
                f"orders of {user}"
            )
            gc.collect()  # the last user's tool is freed, so the next one may be given its id
    finally:
        gc.unfreeze()


def test_a_call_id_that_sqlite_cannot_keep_is_a_journal_error(tmp_path: Path) -> None:
    dispatcher = Dispatcher([bump], journal=SQLiteJournal(tmp_path / "j.db"))
    with pytest.raises(JournalError, match="lone surrogate"):
        dispatcher.dispatch(ToolCall("c\ud800", "bump", {"n": 1}))
    assert COUNTER == [0]
