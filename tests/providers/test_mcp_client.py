"""The MCP client against servers tinytools did not write (the SDK's own), and against a tinytools server.

`mcp_remote_server.py` is an ordinary server; `mcp_hostile_server.py` tests the client's limits
(endless or looping pages, too many tools, a schema whose naive check explodes, FastMCP's
vendor keywords, schemas only half enforceable); `mcp_pending_server.py` is a tinytools server
whose calls end pending; `mcp_raw_server.py` writes the protocol's lines by hand, to send what no
SDK server sends, refuse the handshake, drop its pipes and linger (stdio only). Each runs as a real
subprocess, over stdio and (but the last) over streamable HTTP on 127.0.0.1, and the SDK servers
write down every call that reaches them, so the tests see what was sent, not only what came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tinytools import Dispatcher, Toolbox, ToolCall, ToolDefinitionError, ToolResult, adispatch, dispatch
from tinytools._events import ToolProgress
from tinytools.policy import SideEffect
from tinytools.providers.mcp import connect
from tinytools.providers.mcp._client import RemoteToolbox

from .servers import serving_http

SERVER = Path(__file__).with_name("mcp_remote_server.py")
HOSTILE = Path(__file__).with_name("mcp_hostile_server.py")
PENDING = Path(__file__).with_name("mcp_pending_server.py")
RAW = Path(__file__).with_name("mcp_raw_server.py")
LISTED = ["add", "weather", "bad_output", "fail", "sleep", "steps", "pid"]


class Remote:
    """One way to reach the test server, and the file where it writes down the calls it got."""

    def __init__(self, target: list[str] | str, calls: Path):
        self.target = target
        self.calls = calls
        self.seen = 0

    def mark(self) -> None:
        """Forget the calls so far (the HTTP server is shared by the module's tests)."""
        self.seen = len(self.received())

    def received(self) -> list[dict[str, Any]]:
        if not self.calls.exists():
            return []
        lines = self.calls.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines][self.seen :]

    def run(self, body: Callable[[RemoteToolbox], Awaitable[Any]], **options: Any) -> Any:
        async def session() -> Any:
            async with connect(self.target, **options) as box:
                return await body(box)

        self.mark()
        return asyncio.run(asyncio.wait_for(session(), 20))


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    calls = tmp_path_factory.mktemp("http") / "calls.jsonl"
    with serving_http([str(SERVER), str(calls)]) as url:
        yield url, calls


@pytest.fixture(params=["stdio", "http"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Remote:
    if request.param == "stdio":
        calls = tmp_path / "calls.jsonl"
        return Remote([sys.executable, str(SERVER), str(calls)], calls)
    url, calls = request.getfixturevalue("http_server")
    return Remote(url, calls)


@pytest.fixture
def stdio(tmp_path: Path) -> Remote:
    calls = tmp_path / "calls.jsonl"
    return Remote([sys.executable, str(SERVER), str(calls)], calls)


@pytest.fixture(params=["stdio", "http"])
def hostile(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[str], contextlib.AbstractContextManager[Remote]]:
    """Start `mcp_hostile_server.py` with one behaviour, over stdio or HTTP."""

    @contextlib.contextmanager
    def serve(behaviour: str) -> Iterator[Remote]:
        calls = tmp_path / f"{behaviour}.jsonl"
        argv = [str(HOSTILE), behaviour, str(calls)]
        if request.param == "stdio":
            yield Remote([sys.executable, *argv], calls)
            return
        with serving_http(argv) as url:
            yield Remote(url, calls)

    return serve


def _call(name: str, arguments: Any = None, id: str = "c1") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={} if arguments is None else arguments)


def test_every_page_is_listed_and_an_unenforceable_schema_is_refused(remote: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        return box.names, dict(box.refused), box["add"].input_schema

    names, refused, schema = remote.run(body)
    assert names == LISTED
    assert list(refused) == ["loose", "files.read"]
    assert "additionalProperties" in refused["loose"]
    assert "not a tool name" in refused["files.read"]
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }


def test_arguments_are_enforced_here_and_a_bad_call_never_reaches_the_server(remote: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        bad = [
            await adispatch(_call("add", {"a": "1", "b": 2}), box),
            await adispatch(_call("add", {"a": 1}), box),
            await adispatch(_call("add", {"a": 1, "b": 2, "c": 3}), box),
        ]
        return bad, await adispatch(_call("add", {"a": 2, "b": 3}), box)

    bad, good = remote.run(body)
    assert [result.error.code for result in bad if result.error] == ["invalid_arguments"] * 3
    assert bad[0].error is not None and bad[0].error.details == {"pointer": "/a", "keyword": "type", "parameter": "a"}
    assert (good.status, good.output) == ("succeeded", "5")
    assert remote.received() == [{"tool": "add", "arguments": {"a": 2, "b": 3}}]


def test_results_is_error_structured_content_and_output_schema(remote: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        return [await adispatch(_call(name), box) for name in ("fail", "weather", "bad_output", "pid")]

    failed, structured, mismatch, text = remote.run(body)
    assert failed.status == "failed" and failed.error is not None
    assert (failed.error.code, failed.error.message) == ("remote_error", "the disk is full")
    assert structured.status == "succeeded"
    assert structured.output == {"t": 21.5}  # the structured content, not "the text twin"
    assert "the text twin" not in structured.text()
    assert mismatch.status == "failed" and mismatch.error is not None
    assert mismatch.error.code == "invalid_output"
    assert "/t" in mismatch.error.message
    assert text.status == "succeeded" and isinstance(text.output, str) and text.output.isdigit()


def test_a_prefix_namespaces_and_a_clash_of_two_servers_names_both(tmp_path: Path) -> None:
    first = [sys.executable, str(SERVER), str(tmp_path / "one.jsonl")]
    second = [sys.executable, str(SERVER), str(tmp_path / "two.jsonl")]

    async def body() -> Any:
        async with connect(first) as one, connect(second) as two, connect(second, prefix="b_") as prefixed:
            merged = Toolbox.merge(one, prefixed)
            called = await adispatch(_call("b_add", {"a": 1, "b": 1}), merged)
            with pytest.raises(ToolDefinitionError) as clash:
                Toolbox.merge(one, two)
            return merged.names, called, str(clash.value)

    names, called, clash = asyncio.run(asyncio.wait_for(body(), 20))
    assert names == LISTED + [f"b_{name}" for name in LISTED]
    assert (called.name, called.output) == ("b_add", "2")
    assert [json.loads(line) for line in (tmp_path / "two.jsonl").read_text().splitlines()] == [
        {"tool": "add", "arguments": {"a": 1, "b": 1}}
    ]
    assert "one.jsonl" in clash and "two.jsonl" in clash


def test_an_unenforceable_schema_opted_in_is_sent_with_the_servers_validation_only(stdio: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        loose = box["loose"]
        result = await adispatch(_call("loose", {"note": "x", "extra": 1}), box)
        return box.unenforced, loose.description, loose.input_schema, box.refused, result

    unenforced, description, schema, refused, result = stdio.run(body, unenforced={"loose"})
    assert unenforced == {"loose"}
    assert "checked by the MCP server only" in description
    assert schema["additionalProperties"] is True  # shown as the server gave it
    assert list(refused) == ["files.read"]
    assert result.status == "succeeded"
    assert stdio.received() == [{"tool": "loose", "arguments": {"extra": 1, "note": "x"}}]


def test_a_timeout_is_outcome_unknown_and_the_server_is_told_to_cancel(stdio: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        result = await adispatch(_call("sleep", {"seconds": 30}), box)
        for _ in range(100):  # the cancellation is a notification: wait for the server to act on it
            if {"cancelled": "sleep"} in stdio.received():
                break
            await asyncio.sleep(0.05)
        return result

    result = stdio.run(body, timeout=0.5)
    assert result.status == "outcome_unknown"
    assert result.error is not None and result.error.code == "timeout"
    assert stdio.received() == [{"tool": "sleep", "arguments": {"seconds": 30}}, {"cancelled": "sleep"}]


def test_annotations_become_a_policy_only_when_trusted(stdio: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        return box["add"], box["sleep"], box["pid"]

    add, sleep, pid = stdio.run(body, trust_annotations=True)
    assert add.policy.is_classified and add.policy.side_effects == {SideEffect.READ_ONLY}
    assert add.idempotent
    assert sleep.policy.side_effects == {SideEffect.DESTRUCTIVE} and not sleep.idempotent
    assert not pid.policy.is_classified  # it sent no annotations
    untrusted = stdio.run(body)
    assert [tool.policy.is_classified for tool in untrusted] == [False, False, False]
    assert not untrusted[0].idempotent


def test_progress_notifications_become_tool_progress_events(remote: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        events: list[Any] = []
        result = await Dispatcher(box, on_event=events.append).adispatch(_call("steps", id="p1"))
        return result, [event for event in events if isinstance(event, ToolProgress)]

    result, progress = remote.run(body)
    assert result.output == "done"
    assert [(e.call_id, e.done, e.total, e.message) for e in progress] == [
        ("p1", 1.0, 3.0, "step 1"),
        ("p1", 2.0, 3.0, "step 2"),
        ("p1", 3.0, 3.0, "step 3"),
    ]


def test_a_batch_runs_concurrently_on_one_session_each_result_its_own(remote: Remote) -> None:
    calls = [_call("add", {"a": n, "b": 1000}, id=f"add-{n}") for n in range(12)]
    calls.insert(5, _call("add", {"a": "five", "b": 1}, id="bad"))

    async def body(box: RemoteToolbox) -> Any:
        return await Dispatcher(box).adispatch_many(calls)

    results = remote.run(body)
    assert [result.call_id for result in results] == [call.id for call in calls]
    assert [result.output for result in results if result.call_id != "bad"] == [str(n + 1000) for n in range(12)]
    assert results[5].error is not None and results[5].error.code == "invalid_arguments"
    received = remote.received()
    assert sorted(call["arguments"]["a"] for call in received) == list(range(12))


def test_a_killed_server_fails_the_call_in_flight_and_the_next_call_starts_it_again(stdio: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        pid = int((await adispatch(_call("pid"), box)).output)
        slow = asyncio.ensure_future(adispatch(_call("sleep", {"seconds": 30}, id="slow"), box))
        for _ in range(100):
            if any(call.get("tool") == "sleep" for call in stdio.received()):
                break
            await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        in_flight = await slow
        after = await asyncio.gather(*(adispatch(_call("pid", id=f"after-{n}"), box) for n in range(3)))
        return pid, in_flight, after

    pid, in_flight, after = stdio.run(body)
    assert in_flight.status == "outcome_unknown"
    assert in_flight.error is not None and in_flight.error.code == "worker_lost"
    assert [result.status for result in after] == ["succeeded"] * 3
    new_pids = {result.output for result in after}
    assert len(new_pids) == 1 and str(pid) not in new_pids  # one new server, one new session


def _dropped_then(
    tmp_path: Path, again: str, calls: int, *, together: bool = False, **options: Any
) -> list[ToolResult]:
    """Kill the test server during a call, then make ``calls`` more (``together``: at once).

    The server starts once as itself; started again (a flag file exists by then) it runs the
    statement ``again`` instead. Once `connect`'s block has ended, no task of it is left.
    """
    flag, log = tmp_path / "started", tmp_path / "calls.jsonl"
    script = (
        f"import os, runpy, sys, time; flag = sys.argv.pop(1)\nif os.path.exists(flag): {again}\n"
        "open(flag, 'w').close(); del sys.argv[0]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    target = [sys.executable, "-c", script, str(flag), str(SERVER), str(log)]

    async def body() -> list[ToolResult]:
        before = asyncio.all_tasks()
        async with connect(target, **options) as box:
            pid = int((await adispatch(_call("pid"), box)).output)
            slow = asyncio.ensure_future(adispatch(_call("sleep", {"seconds": 30}, id="slow"), box))
            while not log.read_text().count("sleep"):
                await asyncio.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            await slow  # the drop, seen: the next call opens a session again
            made = [adispatch(_call("add", {"a": 1, "b": 2}, id=f"c{n}"), box) for n in range(calls)]
            results = list(await asyncio.gather(*made)) if together else [await call for call in made]
        left = asyncio.all_tasks() - before
        assert not left, [repr(task)[:300] for task in left]
        return results

    return asyncio.run(asyncio.wait_for(body(), 25))


def test_a_server_that_cannot_be_reached_again_fails_the_call_without_raising(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    results = _dropped_then(tmp_path, "sys.exit(3)", 2)  # started again, it exits at once
    assert [result.status for result in results] == ["failed", "failed"]
    for result in results:
        assert result.error is not None and result.error.code == "executor_unavailable"
        assert "the call was not made" in result.error.message
    logged = [record.getMessage() for record in caplog.records]  # the model reads none of it: the log says what failed
    assert sum("could not be reached again (MCPError: Connection closed)" in message for message in logged) == 2


def test_a_server_started_again_that_never_answers_fails_the_call_at_the_open_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Opening again after a drop has `connect`'s ``open_timeout`` too: the call does not wait for ever."""
    # started again, it never reads its input; without the bound the call would wait the 60 s out
    (result,) = _dropped_then(tmp_path, "time.sleep(60)", 1, open_timeout=5)
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "executor_unavailable"
    assert "the call was not made" in result.error.message
    assert any("did not answer its handshake within 5" in record.getMessage() for record in caplog.records)


def test_calls_waiting_for_a_session_opened_again_fail_with_it_and_start_one_server(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    again = f"open({str(starts)!r}, 'a').write('started\\n'); time.sleep(60)"
    results = _dropped_then(tmp_path, again, 3, together=True, open_timeout=3)
    assert [(result.call_id, result.status) for result in results] == [(f"c{n}", "failed") for n in range(3)]
    assert {result.error.code for result in results if result.error is not None} == {"executor_unavailable"}
    assert starts.read_text().splitlines() == ["started"]  # the calls that waited did not each try again


def test_a_call_that_times_out_while_its_session_opens_again_leaves_no_server_running(tmp_path: Path) -> None:
    """The call's own timeout ends it in the handshake; the server started for it is stopped with the block.

    (The session's task was cancelled twice, which broke the SDK's shielded shutdown: the server
    outlived the program.)
    """
    pids = tmp_path / "pids"
    again = f"open({str(pids)!r}, 'a').write(str(os.getpid()) + '\\n'); time.sleep(60)"
    results = _dropped_then(tmp_path, again, 2, timeout=1, open_timeout=5)
    assert [result.status for result in results] == ["outcome_unknown", "outcome_unknown"]
    assert {result.error.code for result in results if result.error is not None} == {"timeout"}
    for pid in pids.read_text().split():
        assert not Path(f"/proc/{pid}").exists(), f"server {pid} still runs"


def test_a_call_from_another_loop_or_after_the_block_fails_unsent(stdio: Remote) -> None:
    async def body(box: RemoteToolbox) -> Any:
        # sync dispatch runs the async tool on a loop of its own, which cannot use the session
        return box, dispatch(_call("add", {"a": 1, "b": 2}), box)

    box, other_loop = stdio.run(body)
    after = dispatch(_call("add", {"a": 1, "b": 2}), box)
    for result in (other_loop, after):
        assert result.status == "failed"
        assert result.error is not None and result.error.code == "executor_unavailable"
    assert stdio.received() == []  # neither reached a server, and no server was started again


async def _names(box: RemoteToolbox) -> list[str]:
    return box.names


def test_listing_pages_are_bounded_and_a_cursor_that_comes_back_is_refused(hostile: Any) -> None:
    with hostile("endless") as endless:
        with pytest.raises(ToolDefinitionError) as default:
            endless.run(_names)
        with pytest.raises(ToolDefinitionError) as chosen:
            endless.run(_names, max_pages=5)
    with hostile("loop") as loop, pytest.raises(ToolDefinitionError) as looped:
        loop.run(_names, max_pages=1000)
    assert "has more than 100 pages of tools (100 tools so far)" in str(default.value)
    assert "raise connect(..., max_pages=...)" in str(default.value)
    assert "has more than 5 pages of tools (5 tools so far)" in str(chosen.value)
    assert "sent the cursor 'a' again after page 3: its pages go round" in str(looped.value)


def test_listed_tools_are_bounded(hostile: Any) -> None:
    with hostile("crowd") as crowd:
        everything = crowd.run(_names)
        with pytest.raises(ToolDefinitionError) as too_many:
            crowd.run(_names, max_tools=100)
        with pytest.raises(ToolDefinitionError) as too_long:
            crowd.run(_names, max_pages=2)
    assert len(everything) == 120 and everything[:2] == ["t0_0", "t0_1"]
    assert "listed more than 100 tools; if the server truly has more, raise connect(..., max_tools=...)" in str(
        too_many.value
    )
    assert "has more than 2 pages of tools (80 tools so far)" in str(too_long.value)


def test_vendor_keywords_are_kept_and_not_a_reason_to_refuse(hostile: Any) -> None:
    async def body(box: RemoteToolbox) -> Any:
        calls = [_call("wrapped", {"n": 2, "region": "eu"}), _call("wrapped", {"n": "2"})]
        return box["wrapped"], [await adispatch(call, box) for call in calls]

    with hostile("vendor") as vendor:
        wrapped, (good, bad) = vendor.run(body)
        received = vendor.received()
    assert wrapped.output_schema["x-fastmcp-wrap-result"] is True
    assert wrapped.input_schema["properties"]["region"] == {"type": "string", "x-mcp-header": "Region"}
    assert (good.status, good.output) == ("succeeded", {"result": 4})
    assert bad.error is not None and (bad.error.code, bad.error.details["pointer"]) == ("invalid_arguments", "/n")
    assert received == [{"tool": "wrapped", "arguments": {"n": 2, "region": "eu"}}]


def test_a_remote_schemas_anchors_are_followed_as_pointers_for_input_and_output(hostile: Any) -> None:
    tree = {"label": "a", "kids": [{"label": "b", "kids": []}]}

    async def body(box: RemoteToolbox) -> Any:
        calls = [
            _call("tree", {"root": tree}),
            _call("tree", {"root": {"label": "a", "kids": [{"label": 2}]}}, id="c2"),  # refused here
            _call("tree", {"root": tree, "bad": True}, id="c3"),  # the server's answer breaks its output schema
        ]
        return box["tree"], [await adispatch(call, box) for call in calls]

    with hostile("anchored") as anchored:
        made, (good, bad, broken) = anchored.run(body)
        received = anchored.received()
    shown = json.dumps([made.input_schema, made.output_schema])
    assert '"#node"' not in shown and '"$anchor": "node"' in shown  # the anchor kept, references to it pointers
    assert made.input_schema["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert (good.status, good.output) == ("succeeded", {"result": tree})
    assert (bad.error.code, bad.error.details["pointer"]) == ("invalid_arguments", "/root/kids/0/label")
    assert broken.error is not None and broken.error.code == "invalid_output"
    assert [entry["arguments"] for entry in received] == [{"root": tree}, {"root": tree, "bad": True}]


def test_a_refusal_names_the_schema_and_the_keyword_and_how_to_keep_the_tool(hostile: Any) -> None:
    async def body(box: RemoteToolbox) -> Any:
        return box.names, dict(box.refused), box.unenforced

    with hostile("vendor") as vendor:
        names, refused, unenforced = vendor.run(body)
    assert (names, list(refused), unenforced) == (["wrapped"], ["odd_output", "odd_input"], set())
    assert refused["odd_output"].startswith("its output schema cannot be enforced here (schema at /properties/items:")
    assert "minContains above 1" in refused["odd_output"]
    assert refused["odd_output"].endswith(
        "connect(..., unenforced={'odd_output'}) keeps it, its output not checked here"
    )
    assert refused["odd_input"].startswith("its input schema cannot be enforced here (schema at /properties/items:")
    assert "maxContains" in refused["odd_input"]
    assert refused["odd_input"].endswith(
        "connect(..., unenforced={'odd_input'}) keeps it, its arguments checked by the MCP server only"
    )


def test_unenforced_relaxes_only_the_schema_that_cannot_be_enforced(hostile: Any) -> None:
    async def body(box: RemoteToolbox) -> Any:
        calls = [
            _call("odd_output", {"n": "one"}),  # its input schema works: checked here, never sent
            _call("odd_output", {"n": 1}),  # its output breaks minContains: not checked here
            _call("odd_input", {"items": [1, 2]}),  # only the server checks the part that cannot be here
            _call("odd_input", {"items": [1, 2], "extra": True}, id="c2"),  # the rest is checked here: refused
        ]
        described = {name: box[name].description for name in ("odd_output", "odd_input")}
        return box.unenforced, described, box["odd_output"].output_schema, [await adispatch(c, box) for c in calls]

    with hostile("vendor") as vendor:
        unenforced, described, output, (refused, unchecked, output_checked, extra) = vendor.run(
            body, unenforced={"odd_output", "odd_input"}
        )
        received = vendor.received()
    assert unenforced == {"odd_output", "odd_input"}
    assert "at /properties/items are checked by the MCP server only" in described["odd_input"]
    assert extra.error is not None and extra.error.code == "invalid_arguments"  # the checks that work stay on
    assert "checked by the MCP server only" not in described["odd_output"]
    assert output is None  # not shown, as it is not checked
    assert refused.error is not None and refused.error.code == "invalid_arguments"
    assert (unchecked.status, unchecked.output) == ("succeeded", {"items": [1]})
    assert output_checked.error is not None and output_checked.error.code == "invalid_output"  # "many" is no integer
    assert received == [
        {"tool": "odd_output", "arguments": {"n": 1}},
        {"tool": "odd_input", "arguments": {"items": [1, 2]}},
    ]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tinytools_servers_pending_result_reads_as_pending_and_the_application_finishes_it(
    transport: str,
) -> None:
    """Under the 2025 handshake (under 2026-07-28 the server asks, or makes a task: test_mcp_tasks)."""

    async def body(box: RemoteToolbox) -> Any:
        run = Dispatcher(box)
        deploy = await run.adispatch(_call("deploy", {"service": "api"}, id="d1"))
        pay = await run.adispatch(_call("pay", {"invoice": "A-7", "amount": 120}, id="p1"))
        assert deploy.pending is not None and pay.pending is not None
        deployed = await run.aresume(deploy.pending.handle, {"url": "https://api.example"})
        refused = await run.aresume(pay.pending.handle, error="finance said no on the server")
        ping = await run.adispatch(_call("ping", id="n1"))
        return box["deploy"].output_schema, deploy, pay, deployed, refused, ping

    argv = [str(PENDING)]
    with contextlib.ExitStack() as stack:
        target = [sys.executable, *argv] if transport == "stdio" else stack.enter_context(serving_http(argv))
        schema, deploy, pay, deployed, refused, ping = Remote(target, Path(os.devnull)).run(body, mode="legacy")
    assert schema is not None  # deploy declares its output: a pending result is not an invalid output
    for result, message in [
        (deploy, "Run tool 'deploy' with the call's arguments, then resume it with the output."),
        (pay, "Finance approves payments."),
    ]:
        assert (result.status, result.is_error, result.error, result.output) == ("pending", False, None, None)
        assert result.pending.kind == "external" and result.pending.request.message == message
        assert result.text() == f"Pending: {message}"
    assert 0 < pay.pending.expires_at - time.time() <= 600  # the server's expiry
    assert (deployed.call_id, deployed.status, deployed.output) == ("d1", "succeeded", {"url": "https://api.example"})
    assert (refused.call_id, refused.status) == ("p1", "failed")
    assert (ping.status, ping.output) == ("succeeded", {"result": "pong"})


def _validation_runs(counted: Counter[tuple[Any, int]]) -> Any:
    """A profile function counting each generated validation function's runs on each value."""

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename == "<string>" and code.co_name.startswith("validate"):
            counted[(code, id(frame.f_locals.get("data")))] += 1

    return profile


def test_a_schema_whose_naive_check_explodes_is_checked_in_time_linear_in_the_arguments(hostile: Any) -> None:
    async def body(box: RemoteToolbox) -> Any:
        counted: Counter[tuple[Any, int]] = Counter()
        sys.setprofile(_validation_runs(counted))
        try:
            bad = await adispatch(_call("deep", {"x": "bad"}), box)  # fails all 10**6 paths to an integer
        finally:
            sys.setprofile(None)
        return box.refused, counted, bad, await adispatch(_call("deep", {"x": 7}, id="c2"), box)

    with hostile("exploding") as exploding:
        refused, counted, bad, good = exploding.run(body)
        received = exploding.received()
    assert refused == {}
    assert max(counted.values()) == 1  # each definition once per value (the root and L6 down to L0)
    assert bad.error is not None and bad.error.code == "invalid_arguments"
    assert bad.error.details == {"pointer": "/x", "keyword": "anyOf", "parameter": "x"}
    quoted = bad.error.message.split("Schema of 'x': ", 1)[1]
    assert len(quoted) <= 400 and quoted.startswith('{"anyOf":[{"anyOf":[{"anyOf":[{"$ref":"#/$defs/L3"},')
    assert (good.status, good.output) == ("succeeded", {"result": 7})  # its output checked against the same shape
    assert received == [{"tool": "deep", "arguments": {"x": 7}}]


def test_a_server_that_never_answers_is_given_up_on_in_time(hostile: Any) -> None:
    with hostile("silent") as silent, pytest.raises(TimeoutError, match="did not list its tools within 5"):
        silent.run(_names, open_timeout=5)


@contextlib.contextmanager
def _mute(transport: str) -> Iterator[list[str] | str]:
    """A server that never answers the handshake: a process that never reads, or a socket that never replies."""
    if transport == "stdio":
        yield [sys.executable, "-c", "import time; time.sleep(60)"]
        return
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # connections wait in the backlog, unanswered
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_handshake_never_answered_is_given_up_on_at_its_timeout(transport: str) -> None:
    """The wait ends at ``open_timeout``, and closing what was opened does not wait for the handshake.

    (The session's task was left to finish its handshake: the error came after `close`'s own
    bound of 10 seconds. A stdio server is given the SDK's 2 seconds to exit once its input closes.)
    """
    with _mute(transport) as target:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"did not answer its handshake within 0\.5"):
            Remote(target, Path("unused")).run(_names, open_timeout=0.5)
        assert time.monotonic() - started < 8  # a timeout's own promise: not a speed figure


@contextlib.contextmanager
def _unopenable(case: str) -> Iterator[tuple[list[str] | str, str]]:
    """A server that cannot be opened, and what the error must say went wrong."""
    if case == "exits":
        yield [sys.executable, "-c", "import sys; sys.exit(3)"], "MCPError: Connection closed"
    elif case == "no such command":
        yield [str(Path(__file__).with_name("no-such-server"))], "FileNotFoundError"
    elif case == "writes what is not MCP":
        yield [sys.executable, "-c", "print('hello'); import sys; sys.stdout.flush()"], "MCPError: Connection closed"
    else:  # a port nothing listens on
        import socket

        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp", "ConnectError"


@pytest.mark.parametrize("case", ["exits", "no such command", "writes what is not MCP", "nothing listens"])
def test_a_server_that_cannot_be_opened_is_named_with_what_failed(case: str) -> None:
    """One `ConnectionError` naming the server and what failed, with the SDK's or the OS's error as its cause.

    (The SDK's transports raised their task groups' nested ``ExceptionGroup``s, which named neither.)
    """
    with _unopenable(case) as (target, failure), pytest.raises(ConnectionError) as raised:
        Remote(target, Path("unused")).run(_names, open_timeout=10)
    label = target if isinstance(target, str) else " ".join(target)
    assert str(raised.value).startswith(f"the MCP server {label} could not be opened: {failure}")
    assert raised.value.__cause__ is not None
    assert not isinstance(raised.value, TimeoutError)  # failed, not timed out: the 10 s were not waited out


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("ended_by", ["open_timeout", "the caller's cancellation"])
def test_a_server_being_stopped_when_the_wait_ends_is_stopped_all_the_same(ended_by: str, tmp_path: Path) -> None:
    """The handshake refused at once, the SDK stops the server (2 s for its input to close, then a signal) while
    the wait for the session ends: the server is stopped before `connect` raises.

    (The session's task was cancelled, which broke into the SDK's shielded shutdown: the server ran on, and
    `connect` raised only after waiting out its own 10-second bound.)
    """
    pid_file = tmp_path / "pid"

    async def body() -> None:
        opening = asyncio.ensure_future(
            connect([sys.executable, str(RAW), str(pid_file), "*", "linger"], open_timeout=1).__aenter__()
        )
        if ended_by != "open_timeout":
            await asyncio.sleep(0.5)
            opening.cancel()
        await opening

    with pytest.raises((TimeoutError, ConnectionError, asyncio.CancelledError)):
        asyncio.run(body())
    assert not _running(int(pid_file.read_text()))


@pytest.mark.parametrize("cancelled_by", ["two cancellations", "an anyio cancel scope"])
def test_a_caller_cancelled_again_while_its_server_is_stopped_is_cancelled_once_it_is(
    cancelled_by: str, tmp_path: Path
) -> None:
    """The block's end waits for the server to stop however often it is cancelled, then raises the cancellation.

    (A second cancellation ended the wait at once; the event loop then cancelled the session's task at its own
    end, which broke into the SDK's shutdown: the server outlived the program. An anyio scope cancels the task
    again on every turn of the loop.)
    """
    import anyio

    pid_file = tmp_path / "pid"

    async def body() -> None:
        async with connect([sys.executable, str(RAW), str(pid_file), "*", "linger", "stubborn"], open_timeout=30):
            pass

    async def started() -> None:
        while not (pid_file.exists() and pid_file.read_text()):  # it refuses the handshake at once
            await asyncio.sleep(0.05)

    async def cancelled() -> None:
        if cancelled_by == "an anyio cancel scope":
            with anyio.move_on_after(1) as scope:
                await body()
            assert scope.cancelled_caught
        else:
            opening = asyncio.ensure_future(body())
            await started()
            for _ in range(2):  # the SDK stops the server for about 4 s after the first
                await asyncio.sleep(0.3)
                opening.cancel()
            with pytest.raises(asyncio.CancelledError):
                await opening
        assert not _running(int(pid_file.read_text()))
        task = asyncio.current_task()
        assert task is not None and getattr(task, "cancelling", lambda: 0)() == 0

    asyncio.run(cancelled())


def test_a_call_waiting_for_its_session_when_the_block_ends_is_not_sent(tmp_path: Path) -> None:
    """A call that needs a session opened again, still waiting for the dropped one to close as the block ends.

    (It went on to open a session once that one closed: a server started after the block, and the call was sent.)
    """
    starts = tmp_path / "starts"

    async def body() -> ToolResult:
        async with connect([sys.executable, str(RAW), str(starts), "none"], open_timeout=5) as box:
            first = await adispatch(_call("ask", id="first"), box)
            assert first.error is not None and first.error.code == "worker_lost"
            later = asyncio.ensure_future(adispatch(_call("ask", id="later"), box))
            await asyncio.sleep(0.3)  # it waits for the dropped session's task to end
        return await later

    result = asyncio.run(body())
    assert result.error is not None and result.error.code == "executor_unavailable"
    assert len(starts.read_text().split()) == 1  # no server started after the block
    assert not _running(int(starts.read_text()))


def test_a_call_whose_session_opens_again_as_the_block_ends_fails_with_that_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The block's end lets go of a session still in its handshake: the call waiting for it fails at once.

    (Its wait would otherwise run to ``open_timeout``, here 30 s, with the block's end waiting behind it.)
    """
    starts = tmp_path / "starts"

    async def body() -> ToolResult:
        async with connect([sys.executable, str(RAW), str(starts), "none", "silent"], open_timeout=30) as box:
            first = await adispatch(_call("ask", id="first"), box)
            assert first.error is not None and first.error.code == "worker_lost"
            later = asyncio.ensure_future(adispatch(_call("ask", id="later"), box))
            while len(starts.read_text().split()) < 2:  # started again; it never answers the handshake
                await asyncio.sleep(0.05)
        return await later

    result = asyncio.run(body())
    assert result.error is not None and result.error.code == "executor_unavailable"
    logged = [record.getMessage() for record in caplog.records]
    assert any("the session was closed before its handshake ended" in message for message in logged)
    assert not any(_running(int(pid)) for pid in starts.read_text().split())


def test_a_caller_cancelled_as_the_step_it_waits_for_ends_is_cancelled() -> None:
    """The wait for a handshake or a page of tools keeps its caller's cancellation when the step ends with it.

    (`asyncio.wait_for` before Python 3.12 returns a step that ended as its caller was cancelled, and drops the
    cancellation: a caller cancelled just as the handshake ended went on into the block.)
    """
    from tinytools.providers.mcp._client import _within

    async def body() -> None:
        step: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(_within(step, 5, "the step"))
        await asyncio.sleep(0)  # it waits for the step now
        step.set_result("done")
        waiting.cancel()  # in the same turn of the loop
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(body())


def test_a_caller_cancelled_while_a_timed_out_step_winds_down_is_cancelled_not_timed_out() -> None:
    """A step given up on at its timeout is cancelled and waited for; a caller cancelled meanwhile is cancelled."""
    from tinytools.providers.mcp._client import _within

    async def slow_to_stop() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # winds down, as the SDK's shutdown does
            raise
        return "never"

    async def body() -> None:
        waiting = asyncio.ensure_future(_within(slow_to_stop(), 0.05, "the step"))
        await asyncio.sleep(0.15)  # timed out; the step is winding down
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(body())


def test_a_server_that_fails_to_list_its_tools_is_named_with_what_failed(tmp_path: Path) -> None:
    target = [sys.executable, str(RAW), str(tmp_path / "pid"), "tools/list", "linger"]
    with pytest.raises(ConnectionError) as raised:
        Remote(target, Path("unused")).run(_names, open_timeout=10, mode="legacy")
    label = " ".join(target)
    assert (
        str(raised.value)
        == f"the MCP server {label} could not be opened: listing its tools failed: MCPError: not today"
    )
    assert raised.value.__cause__ is not None


def test_a_cursor_too_long_to_keep_is_refused(hostile: Any) -> None:
    with hostile("long_cursor") as long, pytest.raises(ToolDefinitionError, match="100000 characters"):
        long.run(_names)


def test_the_protocols_own_waiting_result_reads_as_pending_never_as_succeeded() -> None:
    """A 2026-07-28 ``input_required`` result waits; one the SDK cannot read at all is ``outcome_unknown``.

    (On a 2025 session the SDK drops a later revision's fields before anything sees them.)
    """
    import mcp.types as sdk

    from tinytools import WaitsElsewhere
    from tinytools.providers.mcp._remote import _read

    waiting = sdk.CallToolResult.model_validate({"resultType": "input_required", "content": []})
    with pytest.raises(WaitsElsewhere, match="asks for input"):
        _read(waiting, structured=False)

    async def body(box: RemoteToolbox) -> Any:
        return await Dispatcher(box).adispatch(_call("ask_bare", id="c2"))

    raw = Remote([sys.executable, str(RAW)], Path("unused"))
    bare = raw.run(body)
    assert bare.status == "outcome_unknown" and bare.error is not None  # unreadable: it may have acted there
    assert bare.error.code == "remote_unreadable"
