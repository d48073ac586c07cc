"""The journal's cost per call, against the same dispatcher without one, in the same run.

    python benchmarks/bench_journal.py

1. One sync call at a time (``Dispatcher.dispatch``): a dispatcher with an `SQLiteJournal` (WAL,
   a file in a temporary folder) against one without. Every call has a new id and new
   arguments, so each is claimed and recorded (two committed writes), never answered from the
   journal. Rounds of the two alternate so a noisy machine hits both; the table shows medians.
2. A batch of 1,000 journaled calls (``dispatch_many``), calls per second, against the same
   batch without a journal.
3. A call answered from the journal (the same call sent again), against a fresh call.
4. The floor under the journal: the same two committed SQLite writes a journaled call makes
   (insert the start record, update it with the result), with ``sqlite3`` alone.
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from tinytools import Dispatcher, RunContext, SQLiteJournal, ToolCall, tool

ROUNDS = 9
CALLS = 2_000
BATCH = 1_000


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _per_call_us(dispatcher: Dispatcher, numbers: itertools.count[int], count: int) -> float:
    calls = [ToolCall(f"c{n}", "add", {"a": n, "b": 1}) for n in itertools.islice(numbers, count)]
    dispatch = dispatcher.dispatch
    start = time.perf_counter()
    for call in calls:
        dispatch(call)
    return (time.perf_counter() - start) / count * 1e6


def _batch_per_s(dispatcher: Dispatcher, numbers: itertools.count[int]) -> float:
    calls = [ToolCall(f"b{n}", "add", {"a": n, "b": 2}) for n in itertools.islice(numbers, BATCH)]
    start = time.perf_counter()
    results = dispatcher.dispatch_many(calls)
    elapsed = time.perf_counter() - start
    assert all(result.status == "succeeded" for result in results)
    return BATCH / elapsed


def _sqlite_floor_us(path: Path, count: int) -> float:
    """Two committed writes per call, as the journal makes them, with nothing around them."""
    SQLiteJournal(path).close()  # the journal's own schema and settings
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=NORMAL")
    insert = "INSERT OR IGNORE INTO tinytools_journal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    update = "UPDATE tinytools_journal SET state = ?, result = ?, pending = ?, step = step + 1, updated = ? "
    update += "WHERE key = ? AND step = ?"
    result = b'{"call_id":"c1","name":"add","status":"succeeded","output":2,"elapsed":5000}'
    start = time.perf_counter()
    for n in range(count):
        key = f"{n:040x}"
        db.execute(insert, (key, "floor", f"c{n}", "add", b'{"a":1,"b":1}', "started", "me", 0, None, None, 0.0, 0.0))
        db.execute(update, ("done", result, None, 0.0, key, 0))
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds, calls = (3, 500) if args.quick else (ROUNDS, CALLS)
    with tempfile.TemporaryDirectory() as folder:
        journal = SQLiteJournal(Path(folder) / "journal.db")
        journaled = Dispatcher([add], journal=journal, context=RunContext(run_id="bench"))
        plain = Dispatcher([add], middleware=[], on_event=None)
        bare = Dispatcher([add], on_event=lambda event: None)  # the pipeline without the express path
        numbers = itertools.count()
        times: dict[str, list[float]] = {"no journal (express path)": [], "no journal (pipeline)": [], "journal": []}
        floor_us: list[float] = []
        for index in range(rounds):
            times["no journal (express path)"].append(_per_call_us(plain, numbers, calls))
            times["no journal (pipeline)"].append(_per_call_us(bare, numbers, calls))
            times["journal"].append(_per_call_us(journaled, numbers, calls))
            floor_us.append(_sqlite_floor_us(Path(folder) / f"floor{index}.db", calls))
        repeat = ToolCall("c0", "add", {"a": 0, "b": 1})
        start = time.perf_counter()
        for _ in range(calls):
            journaled.dispatch(repeat)
        answered = (time.perf_counter() - start) / calls * 1e6
        batches = {"no journal": [], "journal": []}
        for _ in range(max(1, rounds // 3)):
            batches["no journal"].append(_batch_per_s(bare, numbers))
            batches["journal"].append(_batch_per_s(journaled, numbers))
        journal.close()
    median = {label: statistics.median(values) for label, values in times.items()}
    floor = median["no journal (pipeline)"]
    print(f"{'one call at a time':<34} {'µs/call':>9} {'vs pipeline':>12}")
    for label, value in median.items():
        print(f"{label:<34} {value:9.1f} {value / floor:11.2f}x")
    print(f"{'answered from the journal':<34} {answered:9.1f} {answered / floor:11.2f}x")
    sqlite_us = statistics.median(floor_us)
    print(f"\njournal overhead per call: {median['journal'] - floor:.1f} µs (goal: at most 60 µs)")
    print(f"  of which the two committed SQLite writes alone: {sqlite_us:.1f} µs")
    print(f"\n{'batch of 1,000 (dispatch_many)':<34} {'calls/s':>9}")
    for label, values in batches.items():
        print(f"{label:<34} {statistics.median(values):9,.0f}")


if __name__ == "__main__":
    main()
