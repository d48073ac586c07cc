"""Executors: throughput of a CPU-bound tool over 1, 2 and 4 workers, and per-call overhead.

    pip install -e ".[dask]" && python benchmarks/bench_executors.py [--quick]

1. Throughput: a batch of calls to a pure-Python CPU-bound tool through
   `Dispatcher.dispatch_many`, with ``max_concurrency`` equal to the workers. The floor is the
   same batch run inline (sync tools in threads, so the GIL serialises them). Then a
   `ProcessPoolExecutor` and a Dask `LocalCluster` (processes, one thread each) with 1, 2 and 4
   workers. The ratio is calls per second against the floor: above 1 is faster. The "bare"
   column is the same work without tinytools (a loop of direct calls inline, ``executor.map``
   otherwise), timed in alternation with ours, so a busy machine shows in both.
2. Overhead: one `Dispatcher.dispatch` at a time of a tool that returns its argument. The floor
   is the same call inline; each executor's row adds the round trip to a worker and back.
   On Dask a non-idempotent tool also pays one scheduler round trip for its at-most-once mark.

Tools are imported from this file by module name (``bench_executors``), as a worker must find
them: a Dask worker cannot import a ``__main__``.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from tinytools import Dispatcher, ToolCall, tool

SPIN = 1_500_000
"""Loop iterations of one CPU-bound call (about 0.08 s in CPython on the 2-core machine)."""


@tool
def crunch(n: int) -> int:
    """Burn CPU in pure Python (holds the GIL throughout)."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


@tool
def echo(n: int) -> int:
    """Return the argument: all cost is overhead."""
    return n


@tool(idempotent=True)
def echo_idempotent(n: int) -> int:
    """The same, idempotent: Dask needs no at-most-once mark for it."""
    return n


def plain_crunch(n: int) -> int:
    """The CPU-bound work without tinytools."""
    return crunch.fn(n)


def plain_echo(n: int) -> int:
    """What the executor alone costs: submit a function, wait for its result."""
    return n


@contextmanager
def process_pool(workers: int) -> Iterator[Executor]:
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"))
    try:
        yield pool
    finally:
        pool.shutdown()


@contextmanager
def dask_cluster(workers: int) -> Iterator[Executor]:
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client.get_executor()


def throughput(here: Any, executor: Executor | None, workers: int, calls: int, repeat: int) -> tuple[float, float]:
    """Best calls per second of a batch through tinytools, and of the same work bare."""
    sizes = [SPIN + i for i in range(calls)]  # distinct, so Dask cannot answer one from memory
    batch = [ToolCall(f"c{i}", "crunch", {"n": n}) for i, n in enumerate(sizes)]

    def ours() -> None:
        results = Dispatcher([here.crunch], executor=executor, max_concurrency=workers).dispatch_many(batch)
        assert all(r.status == "succeeded" for r in results), results

    def bare() -> None:
        if executor is None:
            [here.plain_crunch(n) for n in sizes]
        else:
            list(executor.map(here.plain_crunch, sizes))

    ours()  # warm the workers: imports, first calls
    bare()
    best_ours = best_bare = float("inf")
    for _ in range(repeat):
        for run, is_ours in ((bare, False), (ours, True)):
            gc.collect()
            start = time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            if is_ours:
                best_ours = min(best_ours, elapsed)
            else:
                best_bare = min(best_bare, elapsed)
    return calls / best_ours, calls / best_bare


def per_call_us(tools: list[Any], executor: Executor | None, name: str, number: int, repeat: int) -> float:
    """Median of ``repeat`` runs of the mean µs of one sequential dispatch."""
    dispatcher = Dispatcher(tools, executor=executor)
    call = ToolCall("c1", name, {"n": 7})
    for _ in range(20):
        dispatcher.dispatch(call)
    runs = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        for _ in range(number):
            dispatcher.dispatch(call)
        runs.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(runs)


def raw_us(executor: Executor, fn: Callable[[int], int], number: int, repeat: int) -> float:
    """Median of ``repeat`` runs of the mean µs of ``executor.submit(fn, n).result()``.

    Each call gets a new argument: Dask would otherwise answer a repeated pure call from memory.
    """
    arguments = iter(range(1 << 62))
    for _ in range(20):
        executor.submit(fn, next(arguments)).result()
    runs = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        for _ in range(number):
            executor.submit(fn, next(arguments)).result()
        runs.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(runs)


def row(case: str, value: str, ratio: float, bare: str = "") -> None:
    print(f"{case:<52} {value:>14} {bare:>10} {ratio:>7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    args = parser.parse_args()
    import bench_executors as here  # the tools by an importable name

    calls, repeat, number = (8, 1, 50) if args.quick else (16, 3, 200)
    engines: list[tuple[str, Callable[[int], AbstractContextManager[Executor]]]] = [("process pool", process_pool)]
    try:
        import distributed  # noqa: F401

        engines.append(("Dask LocalCluster", dask_cluster))
    except ImportError:
        print('(Dask rows skipped: pip install "tinytools[dask]")')

    print(f"CPU-bound tool, {calls} calls of ~{SPIN:,} loop steps; {os.cpu_count()} cores; Python {sys.version[:6]}")
    print(f"{'case':<52} {'calls/s':>14} {'bare':>10} {'ratio':>7}")
    floor, bare = throughput(here, None, 4, calls, repeat)
    row("inline (threads, one GIL)", f"{floor:.2f}", 1.0, f"{bare:.2f}")
    for label, engine in engines:
        for workers in (1, 2, 4):
            with engine(workers) as executor:
                rate, bare = throughput(here, executor, workers, calls, repeat)
            row(f"{label}, {workers} worker{'s' * (workers > 1)}", f"{rate:.2f}", rate / floor, f"{bare:.2f}")

    print()
    print(f"{'one call at a time, a tool that returns its argument':<52} {'µs per call':>14} {'':>10} {'ratio':>7}")
    inline = per_call_us([here.echo], None, "echo", number * 20, repeat)
    row("inline", f"{inline:,.1f}", 1.0)
    for label, engine in engines:
        with engine(1) as executor:
            raw = raw_us(executor, here.plain_echo, number, repeat)
            row(f"{label}, 1 worker: bare submit().result()", f"{raw:,.1f}", raw / inline)
            tools = [here.echo, here.echo_idempotent]
            cost = per_call_us(tools, executor, "echo", number, repeat)
            row(f"{label}, 1 worker: Dispatcher.dispatch", f"{cost:,.1f}", cost / inline)
            if label.startswith("Dask"):
                cost = per_call_us(tools, executor, "echo_idempotent", number, repeat)
                row(f"{label}, 1 worker, idempotent tool (no mark)", f"{cost:,.1f}", cost / inline)


if __name__ == "__main__":
    main()
