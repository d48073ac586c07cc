"""Arguments the application writes (an approver's edit, a middleware's replaced call) in strict mode and out.

They are read against the canonical schema, the one the application works with: the approver is
shown arguments whose strict-mode nulls are already restored, and its edit of them must not be
read again as if the model had written it. A bad edit is the application's mistake: the model,
whose call was valid, is not told to repair it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Dispatcher, ToolCall, ToolEvent, ToolPolicy, ToolResult, tool
from tinytools._events import InvalidToolArgs
from tinytools._run.policy_enforcement import EDIT_REFUSED
from tinytools.policy import Approval, ApprovalRequest, PolicyMiddleware, require_approval

ENTRIES = ["Dispatcher.dispatch", "Dispatcher.adispatch", "Dispatcher.dispatch_many", "Dispatcher.adispatch_many"]
RAN: list[tuple[str, int, str | None]] = []


@tool(policy=ToolPolicy.classified().with_access(approval_required=True))
def refund(order_id: str, amount: int = 10, note: str | None = "none given") -> list[Any]:
    """Refund an order."""
    RAN.append((order_id, amount, note))
    return [order_id, amount, note]


@tool
def lookup(order_id: str, amount: int = 10, note: str | None = "none given") -> list[Any]:
    """Look an order up (no approval needed)."""
    RAN.append((order_id, amount, note))
    return [order_id, amount, note]


def model_call(name: str, strict: bool) -> ToolCall:
    """What a model sends: in strict mode every argument, ``null`` for the one it leaves out.

    (``note`` accepts ``null`` itself, so in strict mode ``null`` for it would mean None.)
    """
    arguments = {"order_id": "a", "amount": None, "note": "n"} if strict else {"order_id": "a", "note": "n"}
    return ToolCall("c1", name, json.dumps(arguments))


def checked(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**arguments, "order_id": arguments["order_id"] + "-checked"}


class Approver:
    """Edits each call with ``edit`` and keeps what it was shown."""

    def __init__(self, edit: Any):
        self.edit = edit
        self.seen: list[dict[str, Any]] = []

    def __call__(self, request: ApprovalRequest) -> Approval:
        self.seen.append(dict(request.arguments))
        return Approval.edit(self.edit(dict(request.arguments)))


class Rewrite:
    """A before-middleware that replaces each call's arguments with ``edit`` of the model's own."""

    def __init__(self, edit: Any):
        self.edit = edit

    def before_tool(self, call: ToolCall, tool: Any) -> ToolCall:
        arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)
        return ToolCall(call.id, call.name, self.edit(arguments))


def run(entry: str, dispatcher: Dispatcher, call: ToolCall) -> ToolResult:
    if entry == "Dispatcher.dispatch":
        return dispatcher.dispatch(call)
    if entry == "Dispatcher.adispatch":
        return asyncio.run(dispatcher.adispatch(call))
    if entry == "Dispatcher.dispatch_many":
        return dispatcher.dispatch_many([call])[0]
    return asyncio.run(dispatcher.adispatch_many([call]))[0]


def dispatcher(kind: str, edit: Any, strict: bool, events: list[ToolEvent] | None = None) -> Dispatcher:
    """Strict or not; the edit made by the approver (of `refund`) or by a middleware (of `lookup`)."""
    sink = None if events is None else events.append
    if kind == "approval":
        return Dispatcher(
            [refund], strict=strict, middleware=[PolicyMiddleware(require_approval(Approver(edit)))], on_event=sink
        )
    return Dispatcher([lookup], strict=strict, middleware=[Rewrite(edit)], on_event=sink)


def tool_name(kind: str) -> str:
    return "refund" if kind == "approval" else "lookup"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("kind", ["approval", "middleware"])
@pytest.mark.parametrize("strict", [False, True])
def test_an_edit_of_the_arguments_runs_in_strict_mode_as_out_of_it(entry: str, kind: str, strict: bool) -> None:
    RAN.clear()
    if kind == "approval":
        edit = checked  # the approver sees the restored arguments: the model's nulls are gone
    else:
        edit = lambda arguments: checked({k: v for k, v in arguments.items() if v is not None})  # noqa: E731
    result = run(entry, dispatcher(kind, edit, strict), model_call(tool_name(kind), strict))
    assert result.status == "succeeded", result.text()
    assert result.output == ["a-checked", 10, "n"] and RAN == [("a-checked", 10, "n")]


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_middleware_that_keeps_the_strict_nulls_still_means_the_defaults(entry: str) -> None:
    RAN.clear()
    result = run(entry, dispatcher("middleware", checked, True), model_call("lookup", True))
    assert result.output == ["a-checked", 10, "n"]


@pytest.mark.parametrize("kind", ["approval", "middleware"])
@pytest.mark.parametrize("strict", [False, True])
def test_a_null_the_canonical_schema_takes_is_kept(kind: str, strict: bool) -> None:
    RAN.clear()
    result = dispatcher(kind, lambda _: {"order_id": "b", "note": None}, strict).dispatch(
        model_call(tool_name(kind), strict)
    )
    assert result.output == ["b", 10, None]


def test_the_approver_is_shown_the_restored_arguments() -> None:
    approver = Approver(checked)
    Dispatcher([refund], strict=True, middleware=[PolicyMiddleware(require_approval(approver))]).dispatch(
        model_call("refund", True)
    )
    assert approver.seen == [{"order_id": "a", "note": "n"}]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("strict", [False, True])
def test_an_approvers_bad_edit_denies_the_call_and_is_logged(
    entry: str, strict: bool, caplog: pytest.LogCaptureFixture
) -> None:
    RAN.clear()
    events: list[ToolEvent] = []
    bad = dispatcher("approval", lambda arguments: {**arguments, "amount": "fifty"}, strict, events)
    with caplog.at_level(logging.ERROR, logger="tinytools"):
        result = run(entry, bad, model_call("refund", strict))
    assert result.error is not None and result.error.code == "policy_denied", result.text()
    assert EDIT_REFUSED in result.error.message and "fifty" not in result.error.message
    assert RAN == [] and not any(isinstance(event, InvalidToolArgs) for event in events)
    assert any(
        "approver's edit" in record.getMessage() and "amount" in record.getMessage() for record in caplog.records
    )


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("strict", [False, True])
def test_a_middlewares_bad_rewrite_is_its_failure_not_the_models(entry: str, strict: bool) -> None:
    RAN.clear()
    events: list[ToolEvent] = []
    bad = dispatcher("middleware", lambda arguments: {"order_id": 5}, strict, events)
    result = run(entry, bad, model_call("lookup", strict))
    assert result.error is not None and result.error.code == "middleware_error", result.text()
    assert RAN == [] and not any(isinstance(event, InvalidToolArgs) for event in events)


def test_the_models_own_invalid_arguments_are_still_its_to_repair() -> None:
    result = dispatcher("approval", checked, True).dispatch(ToolCall("c", "refund", '{"order_id": "a"}'))
    assert result.error is not None and result.error.code == "invalid_arguments"


EDITS = st.fixed_dictionaries(
    {"order_id": st.text(max_size=5)},
    optional={
        "amount": st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=2)),
        "note": st.one_of(st.none(), st.text(max_size=3)),
    },
)


@settings(max_examples=60, deadline=None)
@given(edit=EDITS)
def test_strict_mode_changes_no_edits_outcome(edit: dict[str, Any]) -> None:
    """What an edit gives does not depend on strict mode: the canonical schema decides.

    Only a middleware, which writes from the model's call, may also write the strict form (every
    argument, ``null`` for a value left out); there it means the default.
    """

    def outcome(kind: str, strict: bool) -> Any:
        result = dispatcher(kind, lambda _: dict(edit), strict).dispatch(model_call(tool_name(kind), strict))
        return result.output if result.status == "succeeded" else "refused"

    def expected(arguments: dict[str, Any]) -> Any:
        amount = arguments.get("amount", 10)
        if not isinstance(amount, int) or isinstance(amount, bool):
            return "refused"
        return [arguments["order_id"], amount, arguments.get("note", "none given")]

    canonical = expected(edit)
    assert outcome("approval", False) == outcome("approval", True) == outcome("middleware", False) == canonical
    if edit.get("amount", 0) is None and edit.keys() == {"order_id", "amount", "note"}:  # the whole strict form
        canonical = expected({k: v for k, v in edit.items() if k != "amount"})
    assert outcome("middleware", True) == canonical
