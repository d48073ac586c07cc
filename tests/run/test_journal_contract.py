"""One contract, every journal: `MemoryJournal`, `SQLiteJournal` and `PostgresJournal` (sync and async faces).

Each case speaks to a journal through `Face`, which calls either the `Journal` methods or, for a
store with an ``async_journal``, its coroutines, so the async face meets the same cases.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tinytools import JournalEntry, MemoryJournal, SQLiteJournal

KINDS = ["memory", "sqlite", "postgres", "postgres-async"]


class Face:
    """A journal's methods, called on its sync face or run to their end on its async one."""

    def __init__(self, store: Any, asynchronous: bool) -> None:
        self.store = store
        self.asynchronous = asynchronous

    def __getattr__(self, name: str) -> Any:
        if not self.asynchronous:
            return getattr(self.store, name)
        method = getattr(self.store.async_journal, name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


@pytest.fixture(params=KINDS)
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Face]:
    kind = request.param
    if kind == "memory":
        yield Face(MemoryJournal(), False)
        return
    if kind == "sqlite":
        store = SQLiteJournal(tmp_path / "journal.db")
        yield Face(store, False)
        store.close()
        return
    from tinytools.postgres import PostgresJournal

    store = PostgresJournal(request.getfixturevalue("postgres_dsn"))
    yield Face(store, kind == "postgres-async")
    store.close()


def entry(key: str = "k1", call_id: str = "c1", run_id: str = "r1", **fields: Any) -> JournalEntry:
    return JournalEntry(key=key, run_id=run_id, call_id=call_id, tool="add", arguments=b'{"a":1}', **fields)


def test_a_claim_records_an_entry_once(journal: Face) -> None:
    mine = entry(owner="host:1:0", lease=123.5)
    assert journal.claim(mine) is None
    found = journal.get("k1")
    assert found is not None
    assert (found.key, found.run_id, found.call_id, found.tool, found.arguments) == (
        "k1",
        "r1",
        "c1",
        "add",
        b'{"a":1}',
    )
    assert (found.state, found.owner, found.step, found.lease) == ("started", "host:1:0", 0, 123.5)
    assert found.updated > 0
    again = journal.claim(entry(owner="other:2:0"))
    assert again is not None and again.owner == "host:1:0"  # the first claim stands


def test_a_claim_finds_a_call_by_its_run_and_call_id_first_then_by_key(journal: Face) -> None:
    assert journal.claim(entry("k1", "c1")) is None
    by_ids = journal.claim(entry("k2", "c1"))  # another key, the same call
    assert by_ids is not None and by_ids.key == "k1"
    by_key = journal.claim(entry("k1", "c2"))  # the same key (an act), another call
    assert by_key is not None and by_key.call_id == "c1"
    assert journal.claim(entry("k3", "c1", run_id="r2")) is None  # another run: another call
    assert journal.get("k2") is None


def test_advance_is_a_compare_and_set_on_the_step(journal: Face) -> None:
    journal.claim(entry())
    assert journal.advance("k1", 0, state="pending", pending=b"\x00\xff raw", lease=0.0) is True
    assert journal.advance("k1", 0, state="done") is False  # someone moved it first
    moved = journal.get("k1")
    assert moved is not None and (moved.state, moved.step, moved.pending) == ("pending", 1, b"\x00\xff raw")
    assert journal.advance("k1", 1, state="done", result=b"{}", pending=None, owner="me:3:0") is True
    done = journal.get("k1")
    assert done is not None and (done.state, done.step, done.result, done.pending, done.owner) == (
        "done", 2, b"{}", None, "me:3:0",
    )  # fmt: skip
    assert journal.advance("missing", 0, state="done") is False
    with pytest.raises(ValueError, match="cannot change"):
        journal.advance("k1", 2, tool="other")


def test_renew_extends_only_the_owners_lease_and_keeps_the_step(journal: Face) -> None:
    journal.claim(entry(owner="a:1:0", lease=10.0))
    assert journal.renew("k1", 0, "a:1:0", 99.0) is True
    assert journal.renew("k1", 0, "b:2:0", 500.0) is False  # not the owner
    assert journal.renew("k1", 1, "a:1:0", 500.0) is False  # not at that step
    renewed = journal.get("k1")
    assert renewed is not None and (renewed.lease, renewed.step) == (99.0, 0)


def test_waiting_lists_pending_entries_of_one_run_or_all(journal: Face) -> None:
    for n, run in enumerate(["r1", "r1", "r2", "r2"]):
        journal.claim(entry(f"k{n}", f"c{n}", run_id=run))
    for key in ("k0", "k2", "k3"):
        journal.advance(key, 0, state="pending", pending=b"{}")
    assert sorted(e.key for e in journal.waiting("r1")) == ["k0"]
    assert sorted(e.key for e in journal.waiting("r2")) == ["k2", "k3"]
    assert sorted(e.key for e in journal.waiting()) == ["k0", "k2", "k3"]


def test_release_forgets_an_entry_at_its_step_only(journal: Face) -> None:
    journal.claim(entry())
    assert journal.release("k1", 1) is False
    assert journal.release("k1", 0) is True
    assert journal.get("k1") is None
    assert journal.claim(entry(owner="again:1:0")) is None  # the call may be made again


def test_cached_results_expire(journal: Face) -> None:
    now = time.time()
    journal.cache("r", b"first", now + 60)
    assert journal.cached("r", now) == b"first"
    journal.cache("r", b"second", now + 60)
    assert journal.cached("r", now) == b"second"
    assert journal.cached("r", now + 61) is None
    assert journal.cached("nothing", now) is None


def test_text_that_is_not_ascii_round_trips(journal: Face) -> None:
    assert journal.claim(entry("ключ", "звонок-☎", run_id="прогон")) is None
    found = journal.get("ключ")
    assert found is not None and (found.call_id, found.run_id) == ("звонок-☎", "прогон")


def test_of_many_racing_claims_of_one_call_exactly_one_wins(journal: Face) -> None:
    barrier = threading.Barrier(8)

    def claim(n: int) -> JournalEntry | None:
        barrier.wait()
        return journal.claim(entry(f"k{n}", "c1", owner=f"w{n}:1:0"))

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(claim, range(8)))
    winners = [n for n, answer in enumerate(answers) if answer is None]
    assert len(winners) == 1
    assert all(answer.owner == f"w{winners[0]}:1:0" for answer in answers if answer is not None)
