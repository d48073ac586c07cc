"""Tools that stream: generator tools on every entry point, their pieces as events, their end.

Each piece is a `ToolOutputChunk` between `ToolStarted` and `ToolCompleted`; the output is what
the generator returned, else the text joined, else the last piece. A generator that raises
mid-stream fails with what it sent so far reported; one that never ends is stopped at its timeout
(``outcome_unknown`` for a tool that is not idempotent) and closed at its next piece. The MCP
server sends pieces as progress messages, and ``tinytools call`` prints them as they come.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    CancellationToken,
    Dispatcher,
    Injected,
    MemoryArtifactStore,
    Progress,
    ToolCall,
    ToolCompleted,
    ToolEvent,
    ToolOutput,
    ToolOutputChunk,
    ToolProgress,
    ToolStarted,
    tool,
)
from tinytools._run.stream_boundary import EVENT_COST

from .paths import DISPATCHER_ENTRIES, ENTRIES, run_call

STEPS: list[int] = []


@tool
def words(n: int) -> Iterator[str]:
    """Say n words, one at a time."""
    for index in range(n):
        yield f"w{index} "


@tool
async def numbers(n: int) -> AsyncIterator[int]:
    """Count to n, one number at a time."""
    for index in range(n):
        await asyncio.sleep(0)
        yield index


@tool
def summed(n: int) -> Iterator[int]:
    """Stream the numbers, then return a summary."""
    total = 0
    for index in range(n):
        total += index
        yield index
    return ToolOutput(total, content=f"{n} numbers, total {total}")  # type: ignore[return-value]


@tool
def breaks(n: int) -> Iterator[str]:
    """Fail after n pieces."""
    for index in range(n):
        yield f"p{index}"
    raise RuntimeError("the source went away")


@tool(timeout=0.3)
def endless() -> Iterator[int]:
    """Never end."""
    index = 0
    while True:
        STEPS.append(index)
        time.sleep(0.01)
        yield index
        index += 1


@tool
def leaky(token: Annotated[str, Injected("token", secret=True)]) -> Iterator[str]:
    """Stream a secret by mistake."""
    yield f"the key is {token}"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("name", "expected"), [("words", "w0 w1 w2 "), ("numbers", 2), ("summed", 3)])
def test_a_generator_tool_runs_to_its_output_on_every_entry_point(entry: str, name: str, expected: Any) -> None:
    result = run_call(entry, [words, numbers, summed], ToolCall("c", name, {"n": 3}))
    assert (result.status, result.output) == ("succeeded", expected)
    if name == "summed":
        assert result.text() == "3 numbers, total 3"


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_each_piece_is_an_event_in_order_between_start_and_completion(entry: str) -> None:
    for name in ("words", "numbers"):
        seen: list[ToolEvent] = []
        run_call(entry, [words, numbers], ToolCall("c", name, {"n": 3}), on_event=seen.append)
        kinds = [type(event) for event in seen]
        assert kinds == [ToolStarted, ToolOutputChunk, ToolOutputChunk, ToolOutputChunk, ToolCompleted]
        pieces = [event.data for event in seen if isinstance(event, ToolOutputChunk)]
        assert pieces == (["w0 ", "w1 ", "w2 "] if name == "words" else [0, 1, 2])
        assert {event.kind for event in seen if isinstance(event, ToolOutputChunk)} == {
            "text" if name == "words" else "value"
        }


def test_pieces_from_a_worker_thread_arrive_in_order() -> None:
    seen: list[ToolEvent] = []
    results = Dispatcher([words], on_event=seen.append).dispatch_many(
        [ToolCall(f"c{n}", "words", {"n": 20}) for n in range(4)]
    )
    assert [result.output for result in results] == ["".join(f"w{i} " for i in range(20))] * 4
    for n in range(4):
        mine = [event.data for event in seen if isinstance(event, ToolOutputChunk) and event.call_id == f"c{n}"]
        assert mine == [f"w{i} " for i in range(20)]


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_generator_that_raises_mid_stream_fails_and_never_succeeds(entry: str) -> None:
    result = run_call(entry, [breaks], ToolCall("c", "breaks", {"n": 2}))
    assert result.status == "failed" and result.error is not None and result.error.code == "tool_error"
    assert "the source went away" not in result.text()  # an unexposed exception stays generic


@pytest.mark.parametrize("entry", ["dispatch", "Dispatcher.adispatch", "Dispatcher.dispatch_many"])
def test_a_generator_that_never_ends_is_stopped_at_its_timeout(entry: str) -> None:
    STEPS.clear()
    result = run_call(entry, [endless], ToolCall("c", "endless", {}))
    assert result.status == "outcome_unknown" and result.error is not None and result.error.code == "timeout"
    time.sleep(0.2)
    reached = len(STEPS)
    time.sleep(0.2)
    assert len(STEPS) <= reached + 1  # closed at its next piece: it no longer runs


def test_pieces_are_scrubbed_of_secrets() -> None:
    seen: list[ToolEvent] = []
    dispatcher = Dispatcher([leaky], on_event=seen.append)
    result = dispatcher.dispatch(ToolCall("c", "leaky", {}), inject={"token": "sk-live-1234567890abcdef"})
    assert "1234567890" not in result.text()
    assert all("1234567890" not in str(event.data) for event in seen if isinstance(event, ToolOutputChunk))


def test_the_mcp_server_sends_pieces_as_progress_messages() -> None:
    from mcp import Client

    from tinytools.providers.mcp import build_server

    heard: list[str | None] = []

    async def talk() -> Any:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(message)

        async with Client(build_server([words]), mode="legacy") as client:
            return await client.call_tool("words", {"n": 3}, progress_callback=on_progress)

    result = asyncio.run(talk())
    assert result.structured_content == {"result": "w0 w1 w2 "}
    assert heard == ["w0 ", "w1 ", "w2 "]


STREAM_FILE = '''
from collections.abc import Iterator
from tinytools import tool

@tool
def words(n: int) -> Iterator[str]:
    """Say n words."""
    for index in range(n):
        yield f"w{index}"
'''


def test_tinytools_call_prints_pieces_as_they_come(tmp_path: Path) -> None:
    target = tmp_path / "streaming.py"
    target.write_text(STREAM_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "tinytools", "call", str(target), '{"name": "words", "arguments": {"n": 3}}'],
        capture_output=True,
        timeout=60,
        env={**os.environ},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().splitlines() == ["words> w0", "words> w1", "words> w2"]
    assert json.loads(done.stdout)["output"] == "w0w1w2"


def test_no_stream_thread_is_left_running() -> None:
    before = threading.active_count()
    Dispatcher([words]).dispatch_many([ToolCall(f"c{n}", "words", {"n": 5}) for n in range(8)])
    assert threading.active_count() <= before + 8  # pool threads may stay; none per stream


def test_a_thread_pool_executor_streams_and_a_process_pool_refuses_at_once() -> None:
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from tinytools import ToolDefinitionError

    seen: list[ToolEvent] = []
    with ThreadPoolExecutor(2) as pool:
        result = Dispatcher([words], executor=pool, on_event=seen.append).dispatch(ToolCall("c", "words", {"n": 3}))
    assert result.output == "w0 w1 w2 "
    assert [event.data for event in seen if isinstance(event, ToolOutputChunk)] == ["w0 ", "w1 ", "w2 "]
    with ProcessPoolExecutor(1) as pool, pytest.raises(ToolDefinitionError, match="streams its output"):
        Dispatcher([words], executor=pool)


# --- a stream is scrubbed as a stream, and held to the budget -----------------------------------

SECRET = "sk-live-Z9q7Xw3Lm2"
SPLITS: list[list[Any]] = []


@tool
def drip(token: Annotated[str, Injected("token", secret=True)]) -> Iterator[Any]:
    """Stream the pieces a test chose, the secret among them."""
    yield from SPLITS[-1]


@tool
async def adrip(token: Annotated[str, Injected("token", secret=True)]) -> AsyncIterator[Any]:
    """Stream the pieces a test chose, from the loop."""
    for piece in SPLITS[-1]:
        yield piece


@tool
def emits(token: Annotated[str, Injected("token", secret=True)], progress: Progress) -> str:
    """Emit the pieces a test chose through `Progress.emit`."""
    for piece in SPLITS[-1]:
        progress.emit("row", piece)
    return "done"


def _forwarded(seen: list[ToolEvent]) -> str:
    """What a client concatenating the forwarded pieces reads."""
    return "".join(
        event.data if isinstance(event.data, str) else json.dumps(event.data)
        for event in seen
        if isinstance(event, ToolOutputChunk)
    )


def _shows_secret(text: str, secret: str) -> bool:
    return any(secret[i : i + 8] in text for i in range(len(secret) - 7))


@settings(max_examples=60, deadline=None)
@given(
    secret=st.text(alphabet="abcdefghijkXYZ0123456789-_", min_size=8, max_size=24),
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=30),
    name=st.sampled_from(["drip", "adrip", "emits"]),
    before=st.text(alphabet="xyz ", max_size=10),
)
def test_a_secret_split_across_pieces_never_reaches_a_sink(
    secret: str, cuts: list[int], name: str, before: str
) -> None:
    text, pieces, at = before + secret + " and more", [], 0
    for cut in cuts:
        if at < len(text):
            pieces.append(text[at : at + cut])
            at += cut
    pieces.append(text[at:])
    SPLITS.append(pieces)
    seen: list[ToolEvent] = []
    result = Dispatcher([drip, adrip, emits], on_event=seen.append).dispatch(
        ToolCall("c", name, {}), inject={"token": secret}
    )
    assert result.status == "succeeded"
    assert not _shows_secret(_forwarded(seen), secret) and not _shows_secret(result.text(), secret)
    assert _forwarded(seen).endswith("and more")  # what is not the secret goes on


@dataclasses.dataclass
class Row:
    key: str


@pytest.mark.parametrize("name", ["drip", "adrip", "emits"])
@pytest.mark.parametrize(
    "piece",
    [(SECRET, 1), Row(SECRET), SECRET.encode(), {"nested": [SECRET]}, [SECRET[:5], SECRET[5:]]],
    ids=["tuple", "dataclass", "bytes", "dict", "split list"],
)
def test_every_kind_of_piece_is_scrubbed_through_the_encoding_of_outputs(name: str, piece: Any) -> None:
    SPLITS.append([piece])
    seen: list[ToolEvent] = []
    Dispatcher([drip, adrip, emits], on_event=seen.append).dispatch(ToolCall("c", name, {}), inject={"token": SECRET})
    forwarded = _forwarded(seen)
    assert forwarded and not _shows_secret(forwarded, SECRET)
    assert not _shows_secret(forwarded, base64.b64encode(SECRET.encode()).decode())


@tool
def flood(n: int) -> Iterator[str]:
    """Stream n pieces of 100 bytes."""
    for _ in range(n):
        yield "x" * 100


@tool
def flood_then_sum(n: int):  # type: ignore[no-untyped-def]  # no output schema: its result's text is all it says
    """Stream n pieces of 100 bytes, then return a short summary."""
    for _ in range(n):
        yield "y" * 100
    return f"{n} pieces"  # type: ignore[return-value]


def test_pieces_count_against_the_budget_and_the_result_says_so() -> None:
    seen: list[ToolEvent] = []
    dispatcher = Dispatcher([flood, flood_then_sum], on_event=seen.append, max_inline_output_bytes=10_000)
    result = dispatcher.dispatch(ToolCall("c", "flood", {"n": 20_000}))  # 2 MB
    assert len(_forwarded(seen).encode()) <= 10_000
    assert result.error is not None and result.error.code == "output_too_large"
    assert "were not forwarded" in result.text() and len(result.text().encode()) < 11_000
    seen.clear()
    summary = dispatcher.dispatch(ToolCall("d", "flood_then_sum", {"n": 200}))
    assert len(_forwarded(seen).encode()) <= 10_000
    assert summary.status == "succeeded" and summary.output == "200 pieces"
    assert "200 pieces" in summary.text() and "bytes of them were not forwarded" in summary.text()
    (note,) = [event for event in seen if isinstance(event, ToolProgress) and event.call_id == "d"]
    assert "were not forwarded" in (note.message or "")  # the stream's last word says it too
    seen.clear()
    typed = dispatcher.dispatch(ToolCall("e", "flood", {"n": 2_000}))  # str output schema: output stays structured
    assert typed.error is not None or typed.content is None
    assert any(isinstance(event, ToolProgress) and "not forwarded" in (event.message or "") for event in seen)


def test_a_stream_past_the_budget_keeps_no_more_than_the_budget_in_memory() -> None:
    import tracemalloc

    dispatcher = Dispatcher([flood], max_inline_output_bytes=10_000)
    tracemalloc.start()
    try:
        result = dispatcher.dispatch(ToolCall("c", "flood", {"n": 200_000}))  # 20 MB of pieces
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.error is not None and result.error.code == "output_too_large"
    assert "20000000 bytes" in result.text()
    assert peak < 5_000_000  # the pieces were not all kept


def test_a_stream_past_the_budget_goes_to_the_artifact_store_whole() -> None:
    store = MemoryArtifactStore()
    result = Dispatcher([flood], max_inline_output_bytes=10_000, artifacts=store).dispatch(
        ToolCall("c", "flood", {"n": 500})
    )
    assert result.status == "succeeded" and len(store.get(result.artifacts[0].key)) == 50_002  # JSON of the text


def test_the_mcp_server_forwards_no_more_than_the_budget_of_a_stream() -> None:
    from mcp import Client

    from tinytools.providers.mcp import build_server

    heard: list[str] = []

    async def talk() -> Any:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(message or "")

        server = build_server(
            [flood],
            dispatcher_factory=lambda on_event: Dispatcher([flood], max_inline_output_bytes=5_000, on_event=on_event),
        )
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("flood", {"n": 2_000}, progress_callback=on_progress)

    result = asyncio.run(talk())
    assert result.is_error and len("".join(heard).encode()) <= 5_000 and len(heard) <= 50


# --- what the review of the stream boundary found -----------------------------------------------


@tool
def many(n: int, size: int) -> Iterator[str]:
    """Stream n pieces of ``size`` characters."""
    for _ in range(n):
        yield "z" * size


@pytest.mark.parametrize("size", [0, 1])
def test_tiny_and_empty_pieces_are_bounded_in_number_too(size: int) -> None:
    seen: list[ToolEvent] = []
    dispatcher = Dispatcher([many, drip], on_event=seen.append, max_inline_output_bytes=10_000)
    dispatcher.dispatch(ToolCall("c", "many", {"n": 50_000, "size": size}))
    chunks = [event for event in seen if isinstance(event, ToolOutputChunk)]
    assert len(chunks) <= 10_000 // EVENT_COST
    SPLITS.append([""] * 40_000 + ["x"])  # held behind a secret's window: nothing piles up
    seen.clear()
    result = dispatcher.dispatch(ToolCall("d", "drip", {}), inject={"token": SECRET})
    assert result.status == "succeeded" and len([e for e in seen if isinstance(e, ToolOutputChunk)]) <= 1


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_a_secret_streamed_as_small_byte_chunks_is_withheld(cut: int) -> None:
    data = SECRET.encode()
    SPLITS.append([data[i : i + cut] for i in range(0, len(data), cut)])
    seen: list[ToolEvent] = []
    Dispatcher([drip], on_event=seen.append).dispatch(ToolCall("c", "drip", {}), inject={"token": SECRET})
    forwarded = [event.data for event in seen if isinstance(event, ToolOutputChunk)]
    joined = b"".join(base64.b64decode(piece) for piece in forwarded if piece != "[redacted]")
    assert not _shows_secret(joined.decode("utf-8", "replace"), SECRET)
    assert not _shows_secret("".join(str(piece) for piece in forwarded), base64.b64encode(data).decode())


@tool
def reports(token: Annotated[str, Injected("token", secret=True)], progress: Progress) -> str:
    """Report progress messages a test chose."""
    for index, message in enumerate(SPLITS[-1]):
        progress.progress(index, message=message)
    return "done"


def test_progress_messages_are_scrubbed_as_one_stream_and_held_to_the_budget() -> None:
    SPLITS.append([SECRET[i : i + 4] for i in range(0, len(SECRET), 4)] + [" end"])
    seen: list[ToolEvent] = []
    dispatcher = Dispatcher([reports], on_event=seen.append, max_inline_output_bytes=2_000)
    dispatcher.dispatch(ToolCall("c", "reports", {}), inject={"token": SECRET})
    said = "".join(event.message or "" for event in seen if isinstance(event, ToolProgress))
    assert not _shows_secret(said, SECRET) and said.endswith("end")
    SPLITS.append(["m" * 100_000] * 50)
    seen.clear()
    dispatcher.dispatch(ToolCall("d", "reports", {}), inject={"token": SECRET})
    assert sum(len(event.message or "") for event in seen if isinstance(event, ToolProgress)) <= 2_000


def test_pieces_emitted_from_many_threads_arrive_once_each() -> None:
    from concurrent.futures import ThreadPoolExecutor

    @tool
    def fan(token: Annotated[str, Injected("token", secret=True)], progress: Progress) -> str:
        """Emit from four threads at once."""
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: [progress.emit("row", f"{n}-{i}") for i in range(1000)], range(4)))
        return "done"

    seen: list[ToolEvent] = []
    Dispatcher([fan], on_event=seen.append, max_inline_output_bytes=None).dispatch(
        ToolCall("c", "fan", {}), inject={"token": SECRET}
    )
    rows = [event.data for event in seen if isinstance(event, ToolOutputChunk)]
    assert sorted(rows) == sorted(f"{n}-{i}" for n in range(4) for i in range(1000))


def test_a_piece_made_after_its_attempt_timed_out_never_reaches_the_retry() -> None:
    tries: list[int] = []

    @tool(timeout=0.2, idempotent=True, retries=1)
    def late(token: CancellationToken) -> Iterator[str]:
        """The first attempt yields only after its timeout."""
        tries.append(len(tries) + 1)
        mine = len(tries)
        if mine == 1:
            token.wait(10)
        yield f"attempt {mine}"

    seen: list[ToolEvent] = []
    result = Dispatcher([late], on_event=seen.append).dispatch(ToolCall("c", "late", {}))
    assert result.output == "attempt 2"
    assert [event.data for event in seen if isinstance(event, ToolOutputChunk)] == ["attempt 2"]


STREAM_SURROGATE = '''
import os
from collections.abc import Iterator
from tinytools import tool

@tool
def names(n: int) -> Iterator[str]:
    """Stream file names, one of which is not Unicode."""
    yield "report-1.txt"
    yield os.fsdecode(b"report-\\xff.txt")
'''


def test_a_piece_no_json_can_carry_never_stops_the_mcp_server(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    target = tmp_path / "names_tools.py"
    target.write_text(STREAM_SURROGATE)
    heard: list[str] = []

    async def talk() -> Any:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(message or "")

        server = StdioServerParameters(command=sys.executable, args=["-m", "tinytools", "serve-mcp", str(target)])
        async with Client(server, mode="legacy") as client:
            first = await client.call_tool("names", {"n": 2}, progress_callback=on_progress)
            second = await client.call_tool("names", {"n": 2})
            return first, second

    first, second = asyncio.run(talk())
    assert first.is_error  # its output is not Unicode text: invalid_output
    assert heard[0] == "report-1.txt" and heard[1] == "report-\ufffd.txt"
    assert second is not None  # the server still answers
