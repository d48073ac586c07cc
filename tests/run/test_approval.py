"""Approval on every path: the approver sees the final validated arguments, and only a clear yes runs a call."""

from __future__ import annotations

from typing import Any

import pytest

from tinytools import (
    Dispatcher,
    ToolCall,
    tool,
)
from tinytools.policy import Approval, ApprovalRequest, PolicyMiddleware, ToolPolicy, require_approval

from .paths import DISPATCHER_ENTRIES, run_call

# Strict mode still asks the approver


@pytest.mark.parametrize("decision", ["deny", "approve"])
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_strict_mode_asks_the_approver_with_the_null_restored_to_omitted(entry: str, decision: str) -> None:
    ran: list[tuple[str, int]] = []
    asked: list[dict[str, Any]] = []

    @tool(policy=ToolPolicy.classified().with_access(approval_required=True))
    def refund(order_id: str, amount: int = 5) -> str:
        """Refund an order."""
        ran.append((order_id, amount))
        return "refunded"

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request.arguments)
        return Approval.deny("no") if decision == "deny" else Approval.approve()

    result = run_call(
        entry,
        [refund],
        ToolCall("c1", "refund", {"order_id": "o1", "amount": None}),
        strict=True,
        middleware=[PolicyMiddleware(require_approval(approver))],
    )
    assert asked == [{"order_id": "o1"}], "the approver must be asked exactly once, without the strict null"
    if decision == "deny":
        assert (result.status, result.error and result.error.code, ran) == ("failed", "policy_denied", [])
    else:
        assert (result.status, ran) == ("succeeded", [("o1", 5)])


# An approver that returns True approves


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_an_approver_returning_true_approves_and_false_denies(entry: str, kind: str) -> None:
    ran: list[str] = []

    @tool(policy=ToolPolicy.classified().with_access(approval_required=True))
    def refund(order_id: str) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    outcome = {}
    for answer in (True, False):
        if kind == "sync":

            def approver(request: ApprovalRequest, answer: bool = answer) -> bool:
                return answer

        else:

            async def approver(request: ApprovalRequest, answer: bool = answer) -> bool:
                return answer

        ran.clear()
        dispatcher = Dispatcher([refund], middleware=[PolicyMiddleware(require_approval(approver))])
        result = run_call(entry, [refund], ToolCall(f"c-{answer}", "refund", {"order_id": "o1"}), dispatcher=dispatcher)
        outcome[answer] = (result.status, result.error and result.error.code, list(ran))
    assert outcome == {True: ("succeeded", None, ["o1"]), False: ("failed", "policy_denied", [])}
