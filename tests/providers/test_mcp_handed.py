"""What an MCP server keeps of the pending calls it handed to clients: bounded, and in the role it handed them.

The handles go to anonymous sessionless clients, any of which may make pending calls, so what the
server keeps for them is capped in count and in bytes; the hostile remote servers of the client's
side are scripted here as a `Remote` answering shapes a server could send.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import types
from pydantic import ValidationError

from tinytools import Ask, Dispatcher, NeedsInput, ToolCall, ToolError, ToolPolicy, tool
from tinytools.policy import Approval, PolicyMiddleware, require_approval
from tinytools.providers.mcp._client import _task_models
from tinytools.providers.mcp._handed import MOST_HANDED, MOST_HANDED_BYTES, Handed
from tinytools.providers.mcp._remote import MOST_STATE, remote_tool
from tinytools.providers.mcp._server import Service


@given(st.lists(st.integers(0, MOST_HANDED_BYTES // 3), min_size=1, max_size=40))
def test_what_the_handed_calls_hold_stays_within_the_budget_and_the_newest_stays(weights: list[int]) -> None:
    handed = Handed()
    for number, weight in enumerate(weights):
        handed.add(f"h{number}", object(), "tool", "question", 2e9, weight)
        assert handed.weight <= max(MOST_HANDED_BYTES, weight)
        assert handed.get(f"h{number}", "question") is not None  # the newest is always kept
    kept = [number for number in range(len(weights)) if handed.get(f"h{number}", "question") is not None]
    assert handed.weight == sum(weights[number] for number in kept)
    assert kept == list(range(kept[0], len(weights)))  # the oldest went first


def test_the_count_is_bounded_and_expired_handles_go_before_live_ones() -> None:
    handed = Handed()
    handed.add("expired", object(), "tool", "task", 0.0, 1)
    for number in range(MOST_HANDED):
        handed.add(f"h{number}", object(), "tool", "task", 2e9, 1)
    assert handed.get("expired", "task") is None and handed.get("h0", "task") is not None
    handed.add("one more", object(), "tool", "task", 2e9, 1)
    assert handed.get("h0", "task") is None and handed.get("one more", "task") is not None


def test_a_handle_keeps_the_role_it_was_handed_in() -> None:
    handed = Handed()
    first = handed.add("h", object(), "tool", "question", 2e9, 10)
    assert handed.add("h", object(), "tool", "task", 2e9, 10) is first
    assert handed.get("h", "task") is None and handed.get("h", "question") is first
    assert handed.weight == 10


@tool(policy=ToolPolicy().with_access(approval_required=True))
def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


class Inbox:
    """An application's own dispatcher: it runs calls and resumes them, but cannot poll from async code."""

    def __init__(self) -> None:
        later = PolicyMiddleware([require_approval(lambda request: Approval.defer("Approve?"))])
        self.dispatcher = Dispatcher([pay], middleware=[later])

    async def adispatch(self, call: ToolCall, /, *, inject: Any = None) -> Any:
        return await self.dispatcher.adispatch(call, inject=inject)

    async def aresume(self, handle: str, answer: Any = None, **options: Any) -> Any:
        return await self.dispatcher.aresume(handle, answer, **options)


def test_a_dispatcher_that_cannot_poll_or_cancel_hands_out_no_question_or_task() -> None:
    service = Service([pay], Inbox())

    async def call() -> dict[str, Any]:
        session = service.routes.new_session()
        return await service.call(
            session, ToolCall("c", "pay", {"amount": 1}), None, takes=frozenset({"forms", "tasks"})
        )  # type: ignore[arg-type]

    answer = asyncio.run(call())
    assert "resultType" not in answer and answer["_meta"]["tinytools/pending"]["kind"] == "approval"


class Scripted:
    """A remote server answering each call with the next of its scripted answers (the outside world)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[Any, Any]] = []

    async def call(
        self, name: str, arguments: dict[str, Any], progress: Any, responses: Any = None, state: Any = None
    ) -> Any:
        self.sent.append((responses, state))
        return self.answers.pop(0)

    async def task(self, task_id: str, *, cancel: bool = False) -> Any:
        return self.answers.pop(0)


LISTED = types.Tool(name="remote", inputSchema={"type": "object", "properties": {}})
TASK_MADE, TASK_NOW, *_ = _task_models(types)


def _run(remote: Scripted, ask: Ask | None = None) -> Any:
    made = remote_tool(remote, LISTED, prefix="", timeout=None, trust=False, unenforced=())
    assert not isinstance(made, str)
    return asyncio.run(made[0].fn(__tinytools_progress=None, __tinytools_ask=ask))


def _asking(state: str | None, **params: Any) -> types.InputRequiredResult:
    form = {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}, **params}
    request = {"method": "elicitation/create", "params": form}
    return types.InputRequiredResult.model_validate({"inputRequests": {"k": request}, "requestState": state})


def test_a_request_state_too_long_to_keep_fails_the_call_as_the_servers_doing() -> None:
    with pytest.raises(ToolError, match="request state is over") as raised:
        _run(Scripted(_asking("s" * (MOST_STATE + 1))))
    assert getattr(raised.value, "code", None) == "remote_error"


def test_an_empty_form_answered_empty_is_accepted_with_empty_content_and_a_link_with_none() -> None:
    with pytest.raises(NeedsInput) as asked:
        _run(Scripted(_asking("s1")))
    remote = Scripted(types.CallToolResult(content=[types.TextContent(type="text", text="ok")]))
    assert _run(remote, Ask([{}], asked.value.state)) == "ok"
    assert remote.sent == [({"k": {"action": "accept", "content": {}}}, "s1")]
    with pytest.raises(NeedsInput) as linked:
        link = {"mode": "url", "message": "Sign in.", "url": "https://example.test", "elicitationId": "e"}
        request = {"method": "elicitation/create", "params": link}
        _run(
            Scripted(types.InputRequiredResult.model_validate({"inputRequests": {"k": request}, "requestState": "s2"}))
        )
    remote = Scripted(types.CallToolResult(content=[types.TextContent(type="text", text="in")]))
    assert _run(remote, Ask([{}], linked.value.state)) == "in"
    assert remote.sent == [({"k": {"action": "accept", "content": None}}, "s2")]


@pytest.mark.parametrize("status", ["paused", "input_required"])
def test_a_task_in_a_status_this_client_does_not_follow_fails_the_call(status: str) -> None:
    waiting = json.dumps({"task": "t1"})
    now = TASK_NOW.model_validate({"taskId": "t1", "status": status})
    with pytest.raises(ToolError, match="does not follow") as raised:
        _run(Scripted(now), Ask([{}], waiting))
    assert getattr(raised.value, "code", None) == "remote_error"


def test_a_task_made_without_an_id_is_not_read_as_a_task() -> None:
    with pytest.raises(ValidationError, match=r"task_id|taskId"):  # connect() ends such an answer remote_unreadable
        TASK_MADE.model_validate({"resultType": "task", "status": "working"})
    with pytest.raises(ValidationError, match=r"result_type|resultType"):
        TASK_MADE.model_validate({"resultType": "complete", "taskId": "t", "status": "working", "content": []})
