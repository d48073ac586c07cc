"""Timing helpers shared by the benchmark scripts: sync and async per-call timers, batch timers,
fresh-process import timers and a tracemalloc meter.

Every per-call timer works the same way: ``gc.collect()``, autorange the number of calls so one
repeat lasts at least 0.2 s, then run several repeats with the collector off (as ``timeit``
does) and keep each repeat's ns per call. Callers report the median and keep the best.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import subprocess
import sys
import time
import timeit
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Sample", "time_async", "time_import", "time_imports", "time_once", "time_sync", "traced_bytes"]

MIN_REPEAT_SECONDS = 0.2


@dataclass(frozen=True)
class Sample:
    """Repeated measurements of one case, in the unit of its section."""

    values: tuple[float, ...]
    """One value per repeat."""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def best(self) -> float:
        return min(self.values)


def time_sync(fn: Callable[[], object], *, repeat: int = 7) -> Sample:
    """ns per call of ``fn``: timeit autorange, then ``repeat`` repeats."""
    gc.collect()
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = timer.repeat(repeat=repeat, number=number)
    return Sample(tuple(run / number * 1e9 for run in runs))


def time_async(fn: Callable[[], Awaitable[object]], *, repeat: int = 7) -> Sample:
    """ns per call of the coroutine function ``fn``, every call awaited inside one event loop.

    The loop is made once; each repeat awaits ``fn()`` ``number`` times in a plain ``for``
    loop, so no repeat pays for starting a loop. ``number`` is autoranged as timeit does.
    """
    loop = asyncio.new_event_loop()

    async def run(number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            await fn()
        return time.perf_counter() - start

    def measure(number: int) -> float:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return loop.run_until_complete(run(number))
        finally:
            if enabled:
                gc.enable()

    try:
        gc.collect()
        number = _autorange(measure)
        runs = [measure(number) for _ in range(repeat)]
    finally:
        loop.close()
    return Sample(tuple(run / number * 1e9 for run in runs))


def _autorange(measure: Callable[[int], float]) -> int:
    """The first of 1, 2, 5, 10, 20, 50, ... calls that take at least MIN_REPEAT_SECONDS."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            number = step * scale
            if measure(number) >= MIN_REPEAT_SECONDS:
                return number
        scale *= 10


def time_once(make: Callable[[], Any], run: Callable[[Any], Any], *, repeat: int = 5) -> Sample:
    """Seconds taken by ``run(make())``, ``make`` untimed, ``repeat`` times.

    ``run`` may return an awaitable; it is then awaited on a fresh event loop, and the time
    includes only the awaiting, not the loop's start.
    """
    values = []
    for _ in range(repeat):
        state = make()
        gc.collect()
        loop = asyncio.new_event_loop()
        try:
            start = time.perf_counter()
            outcome = run(state)
            if asyncio.iscoroutine(outcome):
                loop.run_until_complete(outcome)
            values.append(time.perf_counter() - start)
        finally:
            loop.close()
        del state
    return Sample(tuple(values))


def time_import(statement: str, *, runs: int = 9) -> Sample:
    """ms taken by ``statement`` in fresh interpreters (this one's executable), one per run.

    Bytecode caching stays on (PYTHONDONTWRITEBYTECODE is dropped from the environment) and a
    first, untimed run writes the cache, as after a ``pip install``.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    program = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    values = []
    for run in range(runs + 1):
        out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env)
        if run:
            values.append(float(out.stdout.strip().splitlines()[-1]) * 1e3)
    return Sample(tuple(values))


def time_imports(statements: list[str], *, runs: int = 21) -> list[Sample]:
    """`time_import` of several statements, their fresh interpreters taking turns run by run.

    Taking turns spreads the machine's drift over every statement alike, so their ratios hold
    on a noisy machine where timing one after the other would not.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    values: list[list[float]] = [[] for _ in statements]
    for run in range(runs + 1):
        for index, statement in enumerate(statements):
            program = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
            out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env)
            if run:  # the first round writes the bytecode caches
                values[index].append(float(out.stdout.strip().splitlines()[-1]) * 1e3)
    return [Sample(tuple(found)) for found in values]


def traced_bytes(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still allocated (tracemalloc) after ``build()``, with what it returned kept alive.

    ``build`` may return an awaitable; it is awaited on a fresh loop, which is closed before
    the count so the loop itself is not counted.
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        loop = asyncio.new_event_loop()
        outcome = build()
        if asyncio.iscoroutine(outcome):
            outcome = loop.run_until_complete(outcome)
        loop.close()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, outcome
