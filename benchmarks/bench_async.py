"""The async path against the sync one and a bare thread hop, in the same run.

    python benchmarks/bench_async.py

Rows (µs per call, medians of alternating rounds, arguments as JSON text; a round is 20,000 calls
of the in-thread paths, long enough to outlast this machine's bursts of noise, and 2,000 hops).
The hop rows take turns at going first: a hop costs two thread wake-ups, and the hop row
measured right after the 40,000 in-thread calls reads about 1.3x the others, whichever it is.

- ``dispatch``, a sync tool: the express path, the floor of this table.
- ``adispatch``, the same tool written ``async``: awaited in the caller's task (goal: at most 1.5x
  the floor).
- ``adispatch``, the sync tool: read on the loop, run on a pool thread, finished on the loop;
  against ``loop.run_in_executor(None, fn, ...)`` of the bare function in the same run (goal: at
  most that hop; stretch goal: half of it).
- The least any hand-off to a thread does: one thread of its own, fed by a ``queue.SimpleQueue``
  and answering with ``call_soon_threadsafe``, calling the bare function. No tool layer can hop for
  less; its ratio to ``run_in_executor`` says how far below that hop a lighter hand-off could go
  on this machine.
"""

from __future__ import annotations

import asyncio
import gc
import queue
import statistics
import threading
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


_INBOX: queue.SimpleQueue = queue.SimpleQueue()


def _worker() -> None:
    """The bare hand-off's thread: run the function, wake the loop with its value."""
    while True:
        waiter, fn, args = _INBOX.get()
        waiter.get_loop().call_soon_threadsafe(waiter.set_result, fn(*args))


async def _bare_worker() -> float:
    loop = asyncio.get_running_loop()
    fn = add.fn
    start = time.perf_counter()
    for _ in range(HOPS):
        waiter = loop.create_future()
        _INBOX.put((waiter, fn, (1, 2)))
        await waiter
    return (time.perf_counter() - start) / HOPS * 1e6


async def main() -> None:
    dispatcher = Dispatcher([add, aadd])
    rows: dict[str, list[float]] = {
        "dispatch, sync tool (floor)": [],
        "adispatch, async tool": [],
        "adispatch, sync tool": [],
        "bare run_in_executor hop": [],
        "bare worker-thread hop": [],
    }
    threading.Thread(target=_worker, daemon=True).start()
    hops = [
        ("adispatch, sync tool", lambda: _async(dispatcher, "add", HOPS)),
        ("bare run_in_executor hop", _hop),
        ("bare worker-thread hop", _bare_worker),
    ]
    for round_ in range(ROUNDS + 2):  # nine rounds: each hop row goes first three times
        if round_ < ROUNDS:
            rows["dispatch, sync tool (floor)"].append(_sync(dispatcher))
            rows["adispatch, async tool"].append(await _async(dispatcher, "aadd", CALLS))
        turn = round_ % len(hops)
        for label, measure in hops[turn:] + hops[:turn]:  # the hop rows take turns at going first
            gc.collect()
            rows[label].append(await measure())
    median = {label: statistics.median(values) for label, values in rows.items()}
    floor = median["dispatch, sync tool (floor)"]
    print(f"{'path':<30}{'µs/call':>10}{'vs floor':>10}")
    for label, value in median.items():
        print(f"{label:<30}{value:>10.1f}{value / floor:>9.2f}x")
    executor, worker = median["bare run_in_executor hop"], median["bare worker-thread hop"]
    hop = median["adispatch, sync tool"] / executor
    print(f"\nasync tool / sync dispatch: {median['adispatch, async tool'] / floor:.2f}x (goal: at most 1.5x)")
    print(f"sync tool from adispatch / bare run_in_executor: {hop:.2f}x (goal: at most 1x; stretch 0.5x)")
    print(f"bare worker-thread hop / bare run_in_executor: {worker / executor:.2f}x (the least a hop costs here)")
    print(f"sync tool from adispatch / bare worker-thread hop: {median['adispatch, sync tool'] / worker:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
