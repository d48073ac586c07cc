"""Batch throughput and the Dispatcher's per-call overhead, against floors from the same run.

    python benchmarks/bench_batch.py

1. 1,000 async calls that each sleep 10 ms, at a concurrency of 64: `Dispatcher.adispatch_many`
   against a plain ``asyncio.gather`` of the same coroutines under a semaphore.
2. One call through `Dispatcher.dispatch` (no middleware, no events) against the module-level
   `dispatch`, which is the one-line path.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time

from _timing import time_sync

from tinytools import Dispatcher, Toolbox, ToolCall, dispatch, tool

CALLS = 1_000
CONCURRENCY = 64
SLEEP = 0.01


@tool
async def wait(n: int) -> int:
    await asyncio.sleep(SLEEP)
    return n


async def plain_gather() -> list[int]:
    semaphore = asyncio.Semaphore(CONCURRENCY)

    async def one(n: int) -> int:
        async with semaphore:
            return await wait.fn(n)

    return await asyncio.gather(*(one(n) for n in range(CALLS)))


async def with_dispatcher() -> list[object]:
    dispatcher = Dispatcher([wait], max_concurrency=CONCURRENCY)
    calls = [ToolCall(f"c{n}", "wait", {"n": n}) for n in range(CALLS)]
    return await dispatcher.adispatch_many(calls)


def seconds(make, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        asyncio.run(make())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_ns(fn, repeat: int = 7) -> float:
    """Best of ``repeat`` autoranged timeit runs, in ns per call."""
    return time_sync(fn, repeat=repeat).best


@tool
def lookup(city: str, days: int = 1) -> dict:
    return {"city": city, "days": days}


def main() -> None:
    floor = seconds(plain_gather)
    ours = seconds(with_dispatcher)
    box = Toolbox([lookup])
    call = ToolCall("c1", "lookup", b'{"city": "Paris", "days": 3}')
    dispatcher = Dispatcher(box)
    one = best_ns(lambda: dispatch(call, box))
    through = best_ns(lambda: dispatcher.dispatch(call))
    print(f"{'case':<58} {'time':>10} {'ratio':>7}")
    print(f"{'asyncio.gather + semaphore, 1,000 x 10 ms sleeps, 64 at once':<58} {floor * 1e3:>7.1f} ms {1:>6.2f}x")
    print(f"{'Dispatcher.adispatch_many, same calls':<58} {ours * 1e3:>7.1f} ms {ours / floor:>6.2f}x")
    print(f"{'module-level dispatch, one call':<58} {one:>7,.0f} ns {1:>6.2f}x")
    print(
        f"{'Dispatcher.dispatch, one call (no middleware, no events)':<58} {through:>7,.0f} ns {through / one:>6.2f}x"
    )


if __name__ == "__main__":
    main()
