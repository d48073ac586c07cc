"""Pending calls as tasks of MCP's tasks extension, over the sessionless protocol.

The server is `mcp_asking_server.py` in a real subprocess over streamable HTTP; the client is raw
HTTP (``httpx2``), speaking 2026-07-28 as a client that declares the extension does: a background
or external call becomes a task the client polls (``tasks/get``) and cancels (``tasks/cancel``),
and the ``tasks/*`` methods keep to the extension's rules. tinytools' `connect` reads a task as a
pending call, which another process resumes through a shared journal, waiting for the task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tinytools import Dispatcher, RunContext, SQLiteJournal, ToolCall
from tinytools.providers.mcp import connect

from .servers import run_within, serving_http
from .test_mcp_input_required import SERVER, resume_elsewhere, sessionless

TASKS = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"extensions": {TASKS: {}}}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving_http([str(SERVER)]) as endpoint:
        yield endpoint


def _send(url: str, method: str, params: dict[str, Any], capabilities: Any = None, **headers: Any) -> dict[str, Any]:
    """One sessionless request from a client that declares the tasks extension (or ``capabilities``)."""
    return sessionless(url, method, params, WITH_TASKS if capabilities is None else capabilities, **headers)


def _until_done(url: str, task_id: str) -> list[dict[str, Any]]:
    """Every ``tasks/get`` answer until the task reached a final status."""
    seen = []
    ends = time.monotonic() + 20
    while time.monotonic() < ends:
        now = _send(url, "tasks/get", {"taskId": task_id})["result"]
        seen.append(now)
        if now["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(now["pollIntervalMs"] / 1000 / 5)
    return seen


def test_a_background_call_is_a_task_the_client_polls_to_its_result(url: str) -> None:
    created = _send(url, "tools/call", {"name": "report", "arguments": {"month": "2026-11"}})["result"]
    assert (created["resultType"], created["status"]) == ("task", "working")
    assert created["ttlMs"] > 0 and created["pollIntervalMs"] > 0 and created["createdAt"].endswith("Z")
    seen = _until_done(url, created["taskId"])
    assert {now["resultType"] for now in seen} == {"complete"}
    assert [now["status"] for now in seen][-1] == "completed"
    assert seen[-1]["result"]["structuredContent"] == {"month": "2026-11", "report": "ready"}
    assert not seen[-1]["result"]["isError"]
    assert all(now["taskId"] == created["taskId"] for now in seen)
    again = _send(url, "tasks/get", {"taskId": created["taskId"]})["result"]  # a finished task reads the same
    assert again["result"] == seen[-1]["result"]


def test_an_external_call_is_a_working_task_until_cancelled(url: str) -> None:
    created = _send(url, "tools/call", {"name": "deploy", "arguments": {"service": "api"}})["result"]
    assert created["resultType"] == "task"
    working = _send(url, "tasks/get", {"taskId": created["taskId"]})["result"]
    assert working["status"] == "working" and "deploy" in working["statusMessage"]
    assert _send(url, "tasks/cancel", {"taskId": created["taskId"]})["result"] == {
        "resultType": "complete",
        "_meta": working["_meta"],
    }
    assert _send(url, "tasks/get", {"taskId": created["taskId"]})["result"]["status"] == "cancelled"
    assert _send(url, "tasks/cancel", {"taskId": created["taskId"]}).get("result") is not None  # stays cancelled
    assert _send(url, "tasks/get", {"taskId": created["taskId"]})["result"]["status"] == "cancelled"


def test_a_question_goes_to_a_client_that_shows_forms_and_one_no_form_holds_becomes_a_task(url: str) -> None:
    both = {"elicitation": {}, **WITH_TASKS}
    asked = _send(url, "tools/call", {"name": "pay", "arguments": {"invoice": "T", "amount": 1}}, both)["result"]
    assert asked["resultType"] == "input_required"
    nested = _send(url, "tools/call", {"name": "survey", "arguments": {}}, both)["result"]
    assert (nested["resultType"], nested["status"], nested["statusMessage"]) == (
        "task",
        "working",
        "Where do you live?",
    )
    approval = _send(url, "tools/call", {"name": "pay", "arguments": {"invoice": "T", "amount": 2}})["result"]
    assert approval["resultType"] == "task"  # a client that shows no forms waits on the server's approver


def _until(url: str, task_id: str, status: str, capabilities: Any = None) -> dict[str, Any]:
    """``tasks/get`` until the task has ``status`` (or a final one)."""
    ends = time.monotonic() + 20
    while True:
        now: dict[str, Any] = _send(url, "tasks/get", {"taskId": task_id}, capabilities)["result"]
        if now["status"] in (status, "completed", "failed", "cancelled") or time.monotonic() > ends:
            return now
        time.sleep(0.05)


@pytest.mark.parametrize("action", ["accept", "decline"])
def test_a_task_that_asks_is_input_required_and_tasks_update_answers_it(url: str, action: str) -> None:
    both = {"elicitation": {}, **WITH_TASKS}
    task_id = _send(url, "tools/call", {"name": "archive", "arguments": {"name": "logs"}}, both)["result"]["taskId"]
    asking = _until(url, task_id, "input_required", both)
    assert asking["status"] == "input_required" and "result" not in asking
    (key,) = asking["inputRequests"]
    form = asking["inputRequests"][key]["params"]
    assert (form["message"], form["requestedSchema"]["required"]) == ("Archive logs?", ["sure"])
    not_an_answer = {key: {"action": "accept", "content": {"sure": "yes"}}}
    refused = _send(url, "tasks/update", {"taskId": task_id, "inputResponses": not_an_answer}, both)
    assert refused["error"]["code"] == -32602 and "/sure" in refused["error"]["message"]
    response = {"action": action, "content": {"sure": True}} if action == "accept" else {"action": action}
    ack = _send(url, "tasks/update", {"taskId": task_id, "inputResponses": {key: response}}, both)["result"]
    assert ack["resultType"] == "complete" and "status" not in ack
    done = _until_done(url, task_id)[-1]
    if action == "accept":
        assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "logs archived")
    else:
        assert done["status"] == "cancelled"  # a question declined cancels the call


def test_a_task_that_asks_a_client_that_shows_no_forms_stays_working(url: str) -> None:
    task_id = _send(url, "tools/call", {"name": "archive", "arguments": {"name": "mail"}})["result"]["taskId"]
    ends = time.monotonic() + 5
    while time.monotonic() < ends:  # the question is the application's to answer: the task works on
        now = _send(url, "tasks/get", {"taskId": task_id})["result"]
        assert now["status"] == "working" and "inputRequests" not in now
        if now.get("statusMessage") == "Archive mail?":
            break
        time.sleep(0.05)
    assert now["statusMessage"] == "Archive mail?"
    refused = _send(url, "tasks/update", {"taskId": task_id, "inputResponses": {}})
    assert refused["result"]["resultType"] == "complete"  # no response to what it asks: it asks on
    _send(url, "tasks/cancel", {"taskId": task_id})


def test_a_task_whose_tool_crashed_failed_and_says_nothing_of_why(url: str) -> None:
    task_id = _send(url, "tools/call", {"name": "crash", "arguments": {}})["result"]["taskId"]
    failed = _until_done(url, task_id)[-1]
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"]["code"] == -32603 and "secret reason" not in json.dumps(failed)


def test_the_task_methods_keep_to_the_extensions_rules(url: str) -> None:
    task_id = _send(url, "tools/call", {"name": "deploy", "arguments": {"service": "db"}})["result"]["taskId"]
    undeclared = _send(url, "tasks/get", {"taskId": task_id}, {})
    assert undeclared["error"]["code"] == -32021
    mismatched = _send(url, "tasks/get", {"taskId": task_id}, mcp_name="another-task")
    assert mismatched["error"]["code"] == -32020
    unnamed = _send(url, "tasks/get", {"taskId": task_id}, mcp_name=None)
    assert unnamed["error"]["code"] == -32020
    assert _send(url, "tasks/update", {"taskId": task_id, "inputResponses": {}})["error"]["code"] == -32602
    assert _send(url, "tasks/get", {"taskId": task_id[:-4] + "AAAA"})["error"]["code"] == -32602
    record = _send(url, "tools/call", {"name": "deploy", "arguments": {"service": "x"}}, {})["result"]
    handle = record["_meta"]["tinytools/pending"]["handle"]  # a handle no task was made of
    assert _send(url, "tasks/cancel", {"taskId": handle})["error"]["code"] == -32602
    assert _send(url, "tasks/get", {"taskId": task_id})["result"]["status"] == "working"  # nothing moved it


async def _tasked_through_connect(url: str, journal: Path) -> tuple[Any, Any]:
    async with connect(url) as box:
        run = Dispatcher(box, journal=SQLiteJournal(journal), signing_key="client key", context=RunContext(run_id="A"))
        reporting = await run.adispatch(ToolCall("r1", "report", {"month": "2026-10"}))
        deploying = await run.adispatch(ToolCall("d1", "deploy", {"service": "web"}))
        return reporting, deploying


def test_a_servers_task_is_a_pending_call_of_connect_that_another_process_waits_for(url: str, tmp_path: Path) -> None:
    journal = tmp_path / "client.db"
    reporting, deploying = run_within(_tasked_through_connect, url, journal)
    for waiting in (reporting, deploying):
        assert waiting.status == "pending" and waiting.pending.kind == "input"
        assert waiting.pending.request.message.startswith("The MCP server runs the call as a task")
        assert waiting.pending.request.schema == {"type": "object", "properties": {}, "additionalProperties": False}
    done = resume_elsewhere(url, journal, reporting.pending.handle, {})  # another process waits for the task
    assert (done["status"], done["output"]) == ("succeeded", {"month": "2026-10", "report": "ready"})
    assert resume_elsewhere(url, journal, reporting.pending.handle, {}) == done  # its one final result
