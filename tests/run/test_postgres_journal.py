"""`PostgresJournal` against a real PostgreSQL server, with real worker processes on different "hosts".

- Crash and take-over: a worker presenting itself as host A runs 200 journaled calls and is killed
  with SIGKILL at a random moment, ten times over; a worker presenting itself as host B runs the
  same calls on the same journal. A's process cannot be seen from B's "host", so B waits out A's
  leases and then follows the dead-owner rules: every call id ends in one final result, no
  non-idempotent act (a row in a separate SQLite file) happens twice, and nothing waits for the
  600 s bound.
- Two workers (two hosts) race on the same 200 calls: each call acts exactly once.
- A worker on another host that renews its lease is waited for, not taken over.
- ``adispatch`` of 100 concurrent journaled calls never blocks the loop on the journal.
- Bad input: an unreachable server, a foreign table of the same name, a newer format, connections
  dropped between and during calls.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tinytools import Dispatcher, JournalError, RunContext, ToolCall, tool
from tinytools.postgres import PostgresJournal

from . import journal_worker
from .journal_worker import CALLS
from .test_journal import WORKER, _acts, _finish, _results, each_call_ended_once


def _start(dsn: str, effects: Path, host: str, *extra: str, lease: float = 0.5) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(WORKER.parents[2]), os.environ.get("PYTHONPATH", "")]),
        "TINYTOOLS_HOST": host,
        "TT_LEASE_SECONDS": str(lease),
    }
    command = [sys.executable, str(WORKER), f"postgres:{dsn}", str(effects), *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


@pytest.mark.parametrize("trial", range(10))
def test_a_worker_killed_on_one_host_is_taken_over_from_another(postgres_dsn: str, tmp_path: Path, trial: int) -> None:
    effects = tmp_path / "effects.db"
    journal_worker.prepare(effects)
    PostgresJournal(postgres_dsn).close()  # the tables, made before either worker opens them
    first = _start(postgres_dsn, effects, "host-a", "batch")
    assert first.stdout is not None
    heard = [first.stdout.readline() for _ in range(random.Random(trial).randint(1, CALLS - 16))]
    time.sleep(random.Random(trial).uniform(0, 0.02))
    first.send_signal(signal.SIGKILL)
    before = _results(b"".join(heard) + first.communicate()[0])
    assert len(before) < CALLS
    after = _results(_finish(_start(postgres_dsn, effects, "host-b", "batch"), seconds=90))
    each_call_ended_once(before, after, effects)  # host B waited out host A's leases, then took over


def test_two_workers_on_two_hosts_racing_on_the_same_calls_act_once_each(postgres_dsn: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.db"
    journal_worker.prepare(effects)
    PostgresJournal(postgres_dsn).close()
    workers = [_start(postgres_dsn, effects, f"host-{seed}", "race", str(seed), lease=5) for seed in (1, 2)]
    one, two = (_results(_finish(worker)) for worker in workers)
    assert sorted(one) == sorted(two) == sorted(f"call-{n}" for n in range(CALLS))
    for call_id in one:
        assert (one[call_id].status, one[call_id].output) == (two[call_id].status, two[call_id].output)
        assert one[call_id].status == "succeeded"
    acts = _acts(effects)
    assert len(acts) == CALLS and set(acts.values()) == {1}


SLOW = """
import os, sys, time
from tinytools import Dispatcher, RunContext, ToolCall, tool
from tinytools.postgres import PostgresJournal

@tool
def slow(n: int) -> str:
    '''Work for a while.'''
    time.sleep(float(sys.argv[2]))
    return f"done {n}"

journal = PostgresJournal(sys.argv[1])
dispatcher = Dispatcher([slow], journal=journal, context=RunContext(run_id="r"), lease_seconds=0.4)
print(dispatcher.dispatch(ToolCall("c1", "slow", {"n": 1})).to_json().decode(), flush=True)
"""


def _slow_elsewhere(dsn: str, seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TINYTOOLS_HOST": "elsewhere"}
    return subprocess.Popen([sys.executable, "-c", SLOW, dsn, str(seconds)], stdout=subprocess.PIPE, env=env)


def _wait_for_claim(journal: PostgresJournal, dispatcher: Dispatcher) -> None:
    deadline = time.monotonic() + 30
    while journal.get(dispatcher.journal_stage.call_key("c1")) is None:
        assert time.monotonic() < deadline, "the other worker never claimed the call"
        time.sleep(0.02)


@tool(timeout=5)  # bounds how long a call waits for another worker's (35 s), were leases not to work
def slow(n: int) -> str:
    """Work for a while (this host's copy)."""
    return f"here {n}"


def test_a_live_worker_on_another_host_keeps_its_call_by_renewing_its_lease(postgres_dsn: str) -> None:
    other = _slow_elsewhere(postgres_dsn, 2.0)  # five leases long: it must renew to keep the call
    journal = PostgresJournal(postgres_dsn)
    here = Dispatcher([slow], journal=journal, context=RunContext(run_id="r"), lease_seconds=0.4)
    _wait_for_claim(journal, here)
    result = here.dispatch(ToolCall("c1", "slow", {"n": 1}))  # waits for the other worker's end
    assert (result.status, result.output) == ("succeeded", "done 1")
    out, _ = other.communicate(timeout=60)
    assert b'"output":"done 1"' in out
    journal.close()


def test_a_call_whose_worker_died_elsewhere_is_taken_over_once_its_lease_expires(postgres_dsn: str) -> None:
    other = _slow_elsewhere(postgres_dsn, 60.0)
    journal = PostgresJournal(postgres_dsn)
    here = Dispatcher([slow], journal=journal, context=RunContext(run_id="r"), lease_seconds=0.4)
    _wait_for_claim(journal, here)
    other.send_signal(signal.SIGKILL)
    other.communicate(timeout=10)
    result = here.dispatch(ToolCall("c1", "slow", {"n": 1}))
    assert result.status == "outcome_unknown" and result.error is not None  # it may have acted: not run again
    assert result.error.code == "outcome_unknown", result
    journal.close()


def test_concurrent_async_calls_never_block_the_loop_on_the_journal(postgres_dsn: str) -> None:
    journal = PostgresJournal(postgres_dsn, max_size=8)
    log: list[tuple[str, int]] = []
    real = journal.async_journal

    class Logged:  # the journal's own async face, each operation's start and end written down
        def __getattr__(self, name: str) -> Any:
            method = getattr(real, name)

            async def logged(*args: Any, **kwargs: Any) -> Any:
                number = len(log)
                log.append(("start", number))
                try:
                    return await method(*args, **kwargs)
                finally:
                    log.append(("end", number))

            return logged

    journal.async_journal = Logged()  # type: ignore[assignment]

    @tool
    async def double(n: int) -> int:
        """Double."""
        return 2 * n

    dispatcher = Dispatcher([double], journal=journal, context=RunContext(run_id="r"), max_concurrency=100)

    async def run() -> list[Any]:
        stop = asyncio.Event()

        async def heartbeat() -> None:
            while not stop.is_set():
                log.append(("tick", 0))
                await asyncio.sleep(0)

        beat = asyncio.create_task(heartbeat())
        try:
            return await dispatcher.adispatch_many([ToolCall(f"c{n}", "double", {"n": n}) for n in range(100)])
        finally:
            stop.set()
            await beat

    results = asyncio.run(run())
    assert [r.output for r in results] == [2 * n for n in range(100)]
    outstanding: dict[int, bool] = {}
    for kind, number in log:
        if kind == "start":
            outstanding[number] = False
        elif kind == "tick":
            outstanding = dict.fromkeys(outstanding, True)
        else:
            assert outstanding.pop(number), "the loop did not run while a journal operation was outstanding"
    assert sum(1 for kind, _ in log if kind == "start") >= 200  # every call claimed and recorded
    journal.close()


def test_an_unreachable_server_is_a_journal_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="cannot reach"):
        PostgresJournal(f"host={tmp_path} port=1 dbname=none user=none", timeout=2)


def test_a_foreign_table_of_the_same_name_or_a_newer_format_is_refused(postgres_dsn: str) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tinytools_journal (id SERIAL PRIMARY KEY, note TEXT)")
    with pytest.raises(JournalError, match="not a tinytools journal"):
        PostgresJournal(postgres_dsn)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE tinytools_journal")
    PostgresJournal(postgres_dsn).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tinytools_meta SET value = '9' WHERE name = 'format'")
    with pytest.raises(JournalError, match="format '9'"):
        PostgresJournal(postgres_dsn)


def _drop_connections(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'"
        ).fetchall()
    return len(rows)


def test_connections_dropped_between_and_during_calls_lose_nothing(postgres_dsn: str) -> None:
    journal = PostgresJournal(postgres_dsn, min_size=2, max_size=2)
    dropped: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add, while the journal's connections are dropped under it."""
        if a == 2:
            dropped.append(_drop_connections(postgres_dsn))
        return a + b

    dispatcher = Dispatcher([add], journal=journal, context=RunContext(run_id="r"))
    assert dispatcher.dispatch(ToolCall("c1", "add", {"a": 1, "b": 1})).output == 2
    assert _drop_connections(postgres_dsn) >= 1  # between calls
    assert dispatcher.dispatch(ToolCall("c2", "add", {"a": 1, "b": 2})).output == 3
    during = dispatcher.dispatch(ToolCall("c3", "add", {"a": 2, "b": 2}))  # its end is recorded on a new connection
    assert (during.status, during.output) == ("succeeded", 4) and dropped and dropped[0] >= 1
    again = dispatcher.dispatch(ToolCall("c3", "add", {"a": 2, "b": 2}))
    assert (again.status, again.output) == ("succeeded", 4)  # answered from the journal: it was recorded
    journal.close()
