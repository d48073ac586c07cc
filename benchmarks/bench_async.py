"""The async path against the sync one and a bare thread hop, in the same run.

    python benchmarks/bench_async.py

Rows (µs per call, medians of alternating rounds, arguments as JSON text; a round is 20,000 calls
of the in-thread paths, long enough to outlast this machine's bursts of noise, and 2,000 hops).
The two hop rows take turns at going first: a hop costs two thread wake-ups, and the hop row
measured right after the 40,000 in-thread calls reads about 1.3x the other, whichever it is.

- ``dispatch``, a sync tool: the express path, the floor of this table.
- ``adispatch``, the same tool written ``async``: awaited in the caller's task (goal: at most 1.5x
  the floor).
- ``adispatch``, the sync tool: read on the loop, run on a pool thread, finished on the loop;
  against ``loop.run_in_executor(None, fn, ...)`` of the bare function in the same run (goal: at
  most that hop).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time

from tinytools import Dispatcher, ToolCall, tool

ROUNDS = 7
CALLS = 20_000
"""Calls per round of the paths that stay on the caller's thread (about 2 µs each)."""
HOPS = 2_000
"""Calls per round of the paths that hop to a thread (about 100 µs each)."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def aadd(a: int, b: int) -> int:
    """Add two integers, as a coroutine."""
    return a + b


def _calls(name: str, count: int) -> list[ToolCall]:
    return [ToolCall(f"c{n}", name, '{"a": 1, "b": 2}') for n in range(count)]


def _sync(dispatcher: Dispatcher) -> float:
    calls = _calls("add", CALLS)
    start = time.perf_counter()
    for call in calls:
        dispatcher.dispatch(call)
    return (time.perf_counter() - start) / CALLS * 1e6


async def _async(dispatcher: Dispatcher, name: str, count: int) -> float:
    calls = _calls(name, count)
    start = time.perf_counter()
    for call in calls:
        await dispatcher.adispatch(call)
    return (time.perf_counter() - start) / count * 1e6


async def _hop() -> float:
    loop = asyncio.get_running_loop()
    fn = add.fn
    start = time.perf_counter()
    for _ in range(HOPS):
        await loop.run_in_executor(None, fn, 1, 2)
    return (time.perf_counter() - start) / HOPS * 1e6


async def main() -> None:
    dispatcher = Dispatcher([add, aadd])
    rows: dict[str, list[float]] = {
        "dispatch, sync tool (floor)": [],
        "adispatch, async tool": [],
        "adispatch, sync tool": [],
        "bare run_in_executor hop": [],
    }
    hops = [("adispatch, sync tool", lambda: _async(dispatcher, "add", HOPS)), ("bare run_in_executor hop", _hop)]
    for round_ in range(ROUNDS):
        rows["dispatch, sync tool (floor)"].append(_sync(dispatcher))
        rows["adispatch, async tool"].append(await _async(dispatcher, "aadd", CALLS))
        for label, measure in hops if round_ % 2 else hops[::-1]:  # the hop rows take turns at going first
            gc.collect()
            rows[label].append(await measure())
    median = {label: statistics.median(values) for label, values in rows.items()}
    floor = median["dispatch, sync tool (floor)"]
    print(f"{'path':<30}{'µs/call':>10}{'vs floor':>10}")
    for label, value in median.items():
        print(f"{label:<30}{value:>10.1f}{value / floor:>9.2f}x")
    hop = median["adispatch, sync tool"] / median["bare run_in_executor hop"]
    print(f"\nasync tool / sync dispatch: {median['adispatch, async tool'] / floor:.2f}x (goal: at most 1.5x)")
    print(f"sync tool from adispatch / bare run_in_executor: {hop:.2f}x (goal: at most 1x; stretch 0.5x)")


if __name__ == "__main__":
    asyncio.run(main())
