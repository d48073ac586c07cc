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
5. PostgreSQL (`tinytools.postgres.PostgresJournal`), on the server ``TINYTOOLS_POSTGRES_DSN``
   names or a throwaway one started from the machine's server binaries: the overhead per call
   against the same dispatcher without a journal, against the floor of the same two statements
   as bare autocommitted PostgreSQL commands on one connection; and 1,000 journaled calls across
   4 worker processes sharing the journal (calls/s).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sqlite3
import statistics
import sys
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


def _postgres_floor_us(dsn: str, count: int) -> float:
    """The two statements a journaled call makes, as bare autocommitted commands on one connection."""
    import psycopg

    from tinytools.postgres import PostgresJournal

    PostgresJournal(dsn).close()  # the journal's own tables
    insert = (
        "INSERT INTO tinytools_journal VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
    )
    update = "UPDATE tinytools_journal SET state = %s, result = %s, pending = %s, lease = %s, step = step + 1,"
    update += " updated = %s WHERE key = %s AND step = %s"
    result = b'{"call_id":"c1","name":"add","status":"succeeded","output":2,"elapsed":5000}'
    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.perf_counter()
        for n in range(count):
            key = f"floor-{os.getpid()}-{n:032x}-{time.perf_counter_ns()}"
            row = (key, "floor", key, "add", b'{"a":1,"b":1}', "started", "me", 0, None, None, 0.0, 0.0)
            conn.execute(insert, row)
            conn.execute(update, ("done", result, None, 0.0, 0.0, key, 0))
        return (time.perf_counter() - start) / count * 1e6


def _postgres_worker(job: tuple[str, int, int]) -> float:
    """One of the 4 workers: its share of 1,000 journaled calls, in batches of 8; its seconds."""
    dsn, worker, share = job
    from tinytools.postgres import PostgresJournal

    journal = PostgresJournal(dsn)
    dispatcher = Dispatcher([add], journal=journal, context=RunContext(run_id="shared"), max_concurrency=8)
    calls = [ToolCall(f"w{worker}-{n}", "add", {"a": n, "b": worker}) for n in range(share)]
    start = time.perf_counter()
    for first in range(0, share, 8):
        assert all(r.status == "succeeded" for r in dispatcher.dispatch_many(calls[first : first + 8]))
    elapsed = time.perf_counter() - start
    journal.close()
    return elapsed


def _postgres(dsn: str, rounds: int, calls: int) -> None:
    from tinytools.postgres import PostgresJournal

    journal = PostgresJournal(dsn)
    journaled = Dispatcher([add], journal=journal, context=RunContext(run_id="bench-pg"))
    bare = Dispatcher([add], on_event=lambda event: None)
    numbers = itertools.count()
    times: dict[str, list[float]] = {"no journal (pipeline)": [], "PostgresJournal": []}
    floor_us: list[float] = []
    for _ in range(rounds):
        times["no journal (pipeline)"].append(_per_call_us(bare, numbers, calls))
        times["PostgresJournal"].append(_per_call_us(journaled, numbers, calls))
        floor_us.append(_postgres_floor_us(dsn, calls))
    journal.close()
    median = {label: statistics.median(values) for label, values in times.items()}
    overhead = median["PostgresJournal"] - median["no journal (pipeline)"]
    floor = statistics.median(floor_us)
    print(f"\nPostgreSQL, one call at a time      {'µs/call':>9}")
    for label, value in median.items():
        print(f"{label:<34} {value:9.1f}")
    print(f"journal overhead per call: {overhead:.1f} µs; two bare commands: {floor:.1f} µs")
    print(f"  overhead / floor: {overhead / floor:.2f}x (goal: at most 1.5x)")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        start = time.perf_counter()
        pool.map(_postgres_worker, [(dsn, worker, 250) for worker in range(4)])
        wall = time.perf_counter() - start
    print(f"1,000 journaled calls across 4 worker processes: {1000 / wall:,.0f} calls/s (wall, start-up included)")


def _postgres_dsn() -> tuple[str | None, object]:
    """A server for the PostgreSQL rows, and what to stop after (None when there is none here)."""
    dsn = os.environ.get("TINYTOOLS_POSTGRES_DSN")
    if dsn:
        return dsn, None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres_server import ThrowawayServer, server_binaries

    binaries = server_binaries()
    if binaries is None:
        return None, None
    server = ThrowawayServer(binaries)
    return server.start(), server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL rows")
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
    print(f"  overhead / floor: {(median['journal'] - floor) / sqlite_us:.2f}x (goal: at most 1.5x)")
    print(f"\n{'batch of 1,000 (dispatch_many)':<34} {'calls/s':>9}")
    for label, values in batches.items():
        print(f"{label:<34} {statistics.median(values):9,.0f}")
    if args.no_postgres:
        return
    dsn, server = _postgres_dsn()
    if dsn is None:
        print("\nPostgreSQL rows skipped: no TINYTOOLS_POSTGRES_DSN and no server binaries here")
        return
    try:
        _postgres(dsn, rounds, calls)
    finally:
        if server is not None:
            server.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
