"""Pending calls over the sessionless protocol: questions and approvals asked as ``input_required``.

The server is `mcp_asking_server.py` in a real subprocess over streamable HTTP; the clients are the
``mcp`` SDK's own ``Client`` (its multi-round-trip driver answering through an elicitation
callback, and its session driven by hand for the hostile retries) and tinytools' `connect`, whose
pending call a second process resumes through a shared SQLite journal.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from tinytools import Dispatcher, RunContext, SQLiteJournal, ToolCall
from tinytools.providers.mcp import connect
from tinytools.providers.mcp._handed import abilities
from tinytools.providers.mcp._input_required import FORM_KEY, form_of

from .servers import run_within, serving_http

SERVER = Path(__file__).with_name("mcp_asking_server.py")
INVALID_PARAMS = -32602
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving_http([str(SERVER)]) as endpoint:
        yield endpoint


def _answering(*answers: types.ElicitResult, asked: list[Any] | None = None) -> Any:
    """An elicitation callback giving ``answers`` in turn, noting each form it was shown in ``asked``."""
    given_answers = iter(answers)

    async def elicit(context: Any, params: Any) -> Any:
        if asked is not None:
            asked.append((params.message, params.requested_schema))
        return next(given_answers)

    return elicit


def _accept(content: dict[str, Any]) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


async def _acts(client: Client) -> dict[str, int]:
    result = await client.call_tool("acts", {})
    return dict(result.structured_content or {})


def _since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """How often each tool acted between two counts."""
    return {name: count - before.get(name, 0) for name, count in after.items() if count != before.get(name, 0)}


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def _the_sdk_client_answers(url: str) -> dict[str, Any]:
    asked: list[Any] = []
    answers = [_accept({"approved": True}), _accept({"answer": "12C"}), _accept({"meal": "veg"})]
    answers += [types.ElicitResult(action="decline"), types.ElicitResult(action="cancel")]
    async with Client(url, elicitation_callback=_answering(*answers, asked=asked)) as client:
        before = await _acts(client)
        paid = await client.call_tool("pay", {"invoice": "A-1", "amount": 5})
        booked = await client.call_tool("book", {"flight": "LH1"})
        declined = await client.call_tool("pay", {"invoice": "A-2", "amount": 6})
        dismissed = await client.call_tool("book", {"flight": "LH2"})
        nested = await client.call_tool("survey", {})
        return {
            "protocol": client.session.protocol_version,
            "results": (paid, booked, declined, dismissed, nested),
            "asked": asked,
            "acted": _since(before, await _acts(client)),
        }


def test_a_default_sdk_client_answers_questions_and_approvals_and_each_tool_acts_once(url: str) -> None:
    seen = run_within(_the_sdk_client_answers, url)
    paid, booked, declined, dismissed, nested = seen["results"]
    assert seen["protocol"] == "2026-07-28"
    assert (paid.is_error, _text(paid)) == (False, "paid A-1: 5")
    assert (booked.is_error, booked.structured_content) == (False, {"flight": "LH1", "seat": "12C", "meal": "veg"})
    assert declined.is_error and "declined" in _text(declined)  # a declined approval is a denial
    assert dismissed.is_error and "cancel" in _text(dismissed)  # a dismissed question ends the call
    assert not nested.is_error and _text(nested) == "Pending: Where do you live?"  # no form holds it
    assert nested.meta is not None and nested.meta["tinytools/pending"]["kind"] == "input"
    approval, seat, meal, approval_again, seat_again = seen["asked"]
    assert approval == approval_again == (
        "Approve this payment?",
        {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
         "required": ["approved"]},
    )  # fmt: skip
    assert seat == seat_again == (
        "Which seat?",
        {"type": "object", "properties": {"answer": {"type": "string", "minLength": 2, "maxLength": 3}},
         "required": ["answer"]},
    )  # fmt: skip
    assert meal[0] == "Which meal?"
    assert seen["acted"] == {"pay": 1, "book": 1, "survey": 1}  # the declined and dismissed calls never acted


async def _first_round(client: Client, name: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    result = await client.session.call_tool(name, arguments, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    return result


async def _retry(client: Client, name: str, state: str | None, content: dict[str, Any] | None, **options: Any) -> Any:
    responses = None if content is None else {FORM_KEY: _accept(content)}
    try:
        return await client.session.call_tool(
            name,
            options.get("arguments", {}),
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
    except MCPError as exc:
        return exc


async def _hostile_retries(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with Client(url, elicitation_callback=_answering()) as client:
        before = await _acts(client)
        first = await _first_round(client, "pay", {"invoice": "B-1", "amount": 7})
        state = first.request_state
        assert state is not None
        seen["request"] = first.input_requests
        seen["other tool"] = await _retry(client, "book", state, {"approved": True}, arguments={"flight": "X"})
        seen["forged"] = await _retry(client, "pay", state[:-4] + "AAAA", {"approved": True})
        seen["not an answer"] = await _retry(client, "pay", state, {"approved": "yes"})
        seen["no response"] = await _retry(client, "pay", state, None)
        seen["other arguments"] = await _retry(client, "pay", state, {"approved": True}, arguments={"amount": 10**9})
        seen["replayed"] = await _retry(client, "pay", state, {"approved": True})
        second = await _first_round(client, "pay", {"invoice": "B-2", "amount": 8})
        together = await _both(client, second.request_state)
        seen["together"] = together
        seen["acted"] = _since(before, await _acts(client))
    return seen


async def _both(client: Client, state: str | None) -> list[Any]:
    """Two retries of one state sent at once."""
    results: list[Any] = []

    async def one() -> None:
        results.append(await _retry(client, "pay", state, {"approved": True}))

    async with anyio.create_task_group() as group:
        group.start_soon(one)
        group.start_soon(one)
    return results


def test_a_retry_resumes_only_the_call_its_state_names_once_and_with_that_calls_arguments(url: str) -> None:
    seen = run_within(_hostile_retries, url)
    form = seen["request"][FORM_KEY]
    assert (form.method, form.params.mode) == ("elicitation/create", "form")
    for case in ("other tool", "forged"):
        assert isinstance(seen[case], MCPError) and seen[case].error.code == INVALID_PARAMS, case
    refused = seen["not an answer"]  # asked again, saying why, with the same state
    assert isinstance(refused, types.InputRequiredResult)
    assert "/approved" in refused.input_requests[FORM_KEY].params.message
    assert isinstance(seen["no response"], types.InputRequiredResult)
    assert seen["no response"].request_state == refused.request_state
    paid = seen["other arguments"]  # the call runs with its own arguments: a retry's are not read
    assert isinstance(paid, types.CallToolResult) and _text(paid) == "paid B-1: 7"
    replayed = seen["replayed"]  # used once
    assert isinstance(replayed, MCPError) and replayed.error.code == INVALID_PARAMS
    outcomes = [item for item in seen["together"] if isinstance(item, types.CallToolResult)]
    assert outcomes and all(_text(item) == "paid B-2: 8" for item in outcomes)  # the other read it, or was refused
    assert all(isinstance(item, types.CallToolResult | MCPError) for item in seen["together"])
    assert seen["acted"] == {"pay": 2}


async def _retried_twice(url: str) -> dict[str, Any]:
    """A second retry of a state that arrives while the first one's call runs."""
    seen: dict[str, Any] = {}
    async with Client(url, elicitation_callback=_answering()) as client:
        before = await _acts(client)
        state = (await _first_round(client, "transfer", {"amount": 5})).request_state
        results: list[Any] = []

        async def retry(delay: float) -> None:
            await anyio.sleep(delay)
            results.append(await _retry(client, "transfer", state, {"approved": True}))

        async with anyio.create_task_group() as group:
            group.start_soon(retry, 0)
            group.start_soon(retry, 0.3)  # the first one's call is running now
        seen["results"] = results
        seen["swapped"] = await _first_round(client, "pay", {"invoice": "S", "amount": 1})
        seen["acted"] = _since(before, await _acts(client))
    return seen


def test_a_retry_that_arrives_while_the_call_runs_gets_its_outcome(url: str) -> None:
    seen = run_within(_retried_twice, url)
    assert [_text(result) for result in seen["results"]] == ["transferred 5", "transferred 5"]
    assert seen["acted"] == {"transfer": 1}


async def _retry_as_a_task_client(url: str) -> tuple[Any, Any, Any]:
    """A question's state retried with no response by a client that now says it takes tasks only."""
    async with Client(url, elicitation_callback=_answering()) as client:
        state = (await _first_round(client, "pay", {"invoice": "T", "amount": 1})).request_state
    tasks_only = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    again = sessionless(url, "tools/call", {"name": "pay", "arguments": {}, "requestState": state}, tasks_only)
    as_task = sessionless(url, "tasks/get", {"taskId": state}, tasks_only)
    answered = sessionless(
        url,
        "tools/call",
        {"name": "pay", "arguments": {}, "requestState": state, "inputResponses": {FORM_KEY: {"action": "decline"}}},
        tasks_only,
    )
    return again, as_task, answered


def test_a_questions_state_stays_a_question_whatever_the_retry_says_it_takes(url: str) -> None:
    again, as_task, answered = run_within(_retry_as_a_task_client, url)
    assert again["result"]["resultType"] == "input_required"  # asked again, never made a task
    assert as_task["error"]["code"] == INVALID_PARAMS
    assert answered["result"]["isError"] and "declined" in answered["result"]["content"][0]["text"]


def sessionless(url: str, method: str, params: dict[str, Any], capabilities: Any, **headers: str) -> dict[str, Any]:
    """One 2026-07-28 request over raw HTTP, as a client with ``capabilities`` sends it; its JSON-RPC answer.

    ``headers`` (``mcp_name="..."``) replace the routing headers it sends; ``None`` leaves one out.
    """
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    sent: dict[str, Any] = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        "mcp-name": params.get("name", params.get("taskId")),
    }
    sent.update({key.replace("_", "-"): value for key, value in headers.items()})
    response = httpx2.post(url, content=json.dumps(body), headers={k: v for k, v in sent.items() if v is not None})
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[6:] for line in text.splitlines() if line.startswith("data: ")][-1]
    answer: dict[str, Any] = json.loads(text)
    return answer


async def _not_asked(url: str, mode: str, callback: bool) -> Any:
    options: dict[str, Any] = {"mode": mode}
    if callback:
        options["elicitation_callback"] = _answering(_accept({"approved": True}))
    async with Client(url, **options) as client:
        result = await client.session.call_tool("pay", {"invoice": "C", "amount": 1}, allow_input_required=True)
        handle = (result.meta or {}).get("tinytools/pending", {}).get("handle")
        again = await _retry(client, "pay", handle, {"approved": True}) if mode == "auto" else None
        return result, again, await _acts(client)


@pytest.mark.parametrize(("mode", "callback"), [("auto", False), ("legacy", True)])
def test_a_client_that_shows_no_forms_gets_the_pending_record_and_cannot_answer_it(
    url: str, mode: str, callback: bool
) -> None:
    result, again, _ = run_within(_not_asked, url, mode, callback)
    # pay lists an output schema, which a result that is not an error must carry: the SDK client reads this one
    assert isinstance(result, types.CallToolResult) and result.is_error and _text(result).startswith("Pending: ")
    assert result.meta is not None and result.meta["tinytools/pending"]["kind"] == "approval"
    if again is not None:  # the handle in the record was never asked of the client: no retry approves it
        assert isinstance(again, MCPError) and again.error.code == INVALID_PARAMS


def test_a_server_that_does_not_elicit_keeps_every_approval_its_own(tmp_path: Path) -> None:
    both = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    with serving_http([str(SERVER)], "--no-elicit") as endpoint:
        result, again, acted = run_within(_not_asked, endpoint, "auto", True)
        task = sessionless(endpoint, "tools/call", {"name": "pay", "arguments": {"invoice": "N", "amount": 1}}, both)
        task_id = task["result"]["taskId"]  # a client that takes tasks waits on the server's approver
        now = sessionless(endpoint, "tasks/get", {"taskId": task_id}, both)["result"]
        approving = {FORM_KEY: {"action": "accept", "content": {"approved": True}}}
        update = sessionless(endpoint, "tasks/update", {"taskId": task_id, "inputResponses": approving}, both)
        acted = {**acted, **_acted_at(endpoint)}
    assert (now["status"], "inputRequests" in now) == ("working", False)  # the form is never shown
    assert update["error"]["code"] == INVALID_PARAMS  # and no update approves
    assert isinstance(result, types.CallToolResult) and result.meta is not None
    assert result.meta["tinytools/pending"]["kind"] == "approval"
    assert isinstance(again, MCPError) and again.error.code == INVALID_PARAMS
    assert "pay" not in acted


def _acted_at(url: str) -> dict[str, int]:
    """The server's count of the tools that acted, read over raw HTTP."""
    answer = sessionless(url, "tools/call", {"name": "acts", "arguments": {}}, {})
    acted: dict[str, int] = answer["result"]["structuredContent"]
    return acted


RESUMER = """
import asyncio, json, sys
from tinytools import Dispatcher, RunContext, SQLiteJournal
from tinytools.providers.mcp import connect

async def main(url, journal, handle, answer):
    async with connect(url) as box:
        run = Dispatcher(box, journal=SQLiteJournal(journal), signing_key="client key", context=RunContext(run_id="B"))
        result = await run.aresume(handle, json.loads(answer))
        print(json.dumps({"status": result.status, "output": result.output,
                          "pending": None if result.pending is None else result.pending.handle}))

asyncio.run(main(*sys.argv[1:]))
"""


async def _asked_through_connect(url: str, journal: Path) -> tuple[Any, Any]:
    async with connect(url) as box:
        run = Dispatcher(box, journal=SQLiteJournal(journal), signing_key="client key", context=RunContext(run_id="A"))
        paying = await run.adispatch(ToolCall("p1", "pay", {"invoice": "D-1", "amount": 3}))
        booking = await run.adispatch(ToolCall("b1", "book", {"flight": "LH9"}))
        return paying, booking


def resume_elsewhere(url: str, journal: Path, handle: str, answer: Any) -> dict[str, Any]:
    """Resume a pending call in another process, through the journal."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(RESUMER), url, str(journal), handle, json.dumps(answer)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answered: dict[str, Any] = json.loads(done.stdout)
    return answered


def test_a_servers_question_is_a_pending_call_of_connect_that_another_process_resumes(url: str, tmp_path: Path) -> None:
    journal = tmp_path / "client.db"
    paying, booking = run_within(_asked_through_connect, url, journal)
    assert paying.status == "pending" and paying.pending.kind == "input"
    assert paying.pending.request.message == "Approve this payment?"
    assert paying.pending.request.schema["required"] == ["approved"]
    assert "state" not in json.dumps(paying.pending.request.schema)  # the server's state is kept, never shown
    assert booking.pending.request.message == "Which seat?"
    paid = resume_elsewhere(url, journal, paying.pending.handle, {"approved": True})
    assert (paid["status"], paid["output"]) == ("succeeded", {"result": "paid D-1: 3"})
    seat = resume_elsewhere(url, journal, booking.pending.handle, {"answer": "3A"})
    assert seat["status"] == "pending" and seat["pending"] != booking.pending.handle  # the server asks again
    meal = resume_elsewhere(url, journal, seat["pending"], {"meal": "fish"})
    assert (meal["status"], meal["output"]) == ("succeeded", {"flight": "LH9", "seat": "3A", "meal": "fish"})
    again = resume_elsewhere(url, journal, paying.pending.handle, {"approved": True})  # a handle whose call ended
    assert again == paid


# What a flat form can hold, and what it cannot.
FIELDS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "title": st.text(max_size=5),
            "minLength": st.integers(0, 5),
            "format": st.sampled_from(["email", "uri", "date", "date-time"]),
            "enum": st.lists(st.text(max_size=3), min_size=1, max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["number", "integer"])}, optional={"minimum": st.integers(), "description": st.text()}
    ),
    st.fixed_dictionaries({"type": st.just("boolean")}, optional={"default": st.booleans()}),
    st.fixed_dictionaries(
        {
            "type": st.just("array"),
            "items": st.fixed_dictionaries(
                {"type": st.just("string"), "enum": st.lists(st.text(max_size=3), min_size=1)}
            ),
        }
    ),
)
NOT_FIELDS = st.one_of(
    st.fixed_dictionaries({"type": st.just("object"), "properties": st.just({"a": {"type": "string"}})}),
    st.fixed_dictionaries({"type": st.just("string"), "pattern": st.just("^a")}),
    st.fixed_dictionaries({"type": st.just(["string", "null"])}),
    st.fixed_dictionaries({"anyOf": st.just([{"type": "string"}, {"type": "integer"}])}),
    st.fixed_dictionaries({"type": st.just("array"), "items": st.just({"type": "object"})}),
    st.fixed_dictionaries({"type": st.just("string"), "format": st.just("ipv4")}),
)
NAMES = st.text(min_size=1, max_size=6)


@given(st.dictionaries(NAMES, FIELDS, min_size=1, max_size=4), st.data())
def test_every_flat_schema_is_a_form_the_sdk_takes_and_asks_what_it_asked(fields: dict[str, Any], data: Any) -> None:
    required = data.draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
    schema = {"type": "object", "properties": fields, "required": required, "additionalProperties": False}
    made = form_of(schema)
    assert made is not None
    form, wrapped = made
    assert not wrapped and form["properties"] == fields and form.get("required", []) == required
    types.ElicitRequestFormParams(message="?", requested_schema=form)  # the SDK's model takes it
    single = form_of(next(iter(fields.values())))  # one value alone is a form of one field
    assert single is not None and single[1] and single[0]["required"] == ["answer"]


@given(st.dictionaries(NAMES, FIELDS, max_size=3), NAMES, NOT_FIELDS)
def test_a_schema_with_any_field_a_form_cannot_hold_is_no_form(
    fields: dict[str, Any], name: str, nested: dict[str, Any]
) -> None:
    assert form_of({"type": "object", "properties": {**fields, name: nested}}) is None
    assert form_of(nested) is None or nested.get("type") == "object"


@pytest.mark.parametrize(
    ("meta", "takes"),
    [
        ({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}, {"forms"}),
        ({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}}, {"forms"}),
        ({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}}, set()),
        ({"io.modelcontextprotocol/clientCapabilities": {}}, set()),
        ({"io.modelcontextprotocol/clientCapabilities": {"elicitation": True}}, set()),
        (
            {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}},
            {"tasks"},
        ),
        ({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": 1}}}, set()),
        (
            {
                "io.modelcontextprotocol/clientCapabilities": {
                    "elicitation": {},
                    "extensions": {"io.modelcontextprotocol/tasks": {}},
                }
            },
            {"forms", "tasks"},
        ),
        ({}, set()),
        (None, set()),
    ],
)
def test_only_what_a_client_says_it_takes_is_sent_to_it(meta: Any, takes: set[str]) -> None:
    assert abilities(meta) == takes


async def _legacy_connect(url: str) -> Any:
    async with connect(url, mode="legacy") as box:
        return await Dispatcher(box).adispatch(ToolCall("p1", "pay", {"invoice": "E", "amount": 2}))


def test_under_the_2025_handshake_connect_reads_the_pending_record_as_a_call_that_waits_there(url: str) -> None:
    waiting = run_within(_legacy_connect, url)  # marked an error (pay lists its output), read as pending all the same
    assert waiting.status == "pending" and waiting.pending.kind == "external"
    assert waiting.pending.request.message == "Approve this payment?"
