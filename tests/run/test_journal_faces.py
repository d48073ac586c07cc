"""A journal with an async face: async entry points await it and never block the loop on journal I/O.

`TwoFaced` is a store as a networked journal would be written: sync methods for sync callers, and
an ``async_journal`` whose coroutines hand each operation to a thread (as a driver's network round
trip suspends) over the same SQLite file. A heartbeat task on the loop logs a tick whenever it
runs; every operation of the async face logs its start and end. Each async-face operation must
see a tick while it is outstanding (the loop was free), no sync method may run on a thread whose
loop is running, and sync entry points must use the sync face alone.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tinytools import (
    Dispatcher,
    JournalEntry,
    RunContext,
    SQLiteJournal,
    ToolCall,
    ToolPolicy,
    tool,
)
from tinytools.policy import Approval, PolicyMiddleware, require_approval

METHODS = ("claim", "get", "advance", "waiting", "release", "cached", "cache")


class TwoFaced:
    """An SQLite journal behind a sync face and an async face, logging which face each operation used."""

    def __init__(self, path: Path, log: list[tuple[str, ...]]):
        self.store = SQLiteJournal(path)
        self.log = log
        self.lock = threading.Lock()
        self.sync_on_loop: list[str] = []
        self.async_journal = _AsyncFace(self)

    def _sync(self, name: str, *args: Any, **changes: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            self.sync_on_loop.append(name)  # a blocking call on a thread whose loop is running
        with self.lock:
            self.log.append(("sync", name))
        return getattr(self.store, name)(*args, **changes)

    def claim(self, entry: JournalEntry) -> JournalEntry | None:
        return self._sync("claim", entry)  # type: ignore[no-any-return]

    def get(self, key: str) -> JournalEntry | None:
        return self._sync("get", key)  # type: ignore[no-any-return]

    def advance(self, key: str, step: int, **changes: object) -> bool:
        return self._sync("advance", key, step, **changes)  # type: ignore[no-any-return]

    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        return self._sync("waiting", run_id)  # type: ignore[no-any-return]

    def release(self, key: str, step: int) -> bool:
        return self._sync("release", key, step)  # type: ignore[no-any-return]

    def cached(self, key: str, now: float) -> bytes | None:
        return self._sync("cached", key, now)  # type: ignore[no-any-return]

    def cache(self, key: str, result: bytes, expires_at: float) -> None:
        self._sync("cache", key, result, expires_at)


class _AsyncFace:
    def __init__(self, outer: TwoFaced):
        self.outer = outer
        self.count = 0

    async def _io(self, name: str, *args: Any, **changes: Any) -> Any:
        self.count += 1
        number = self.count
        self.outer.log.append(("start", str(number)))
        try:
            return await asyncio.to_thread(getattr(self.outer.store, name), *args, **changes)
        finally:
            self.outer.log.append(("end", str(number)))

    async def claim(self, entry: JournalEntry) -> JournalEntry | None:
        return await self._io("claim", entry)  # type: ignore[no-any-return]

    async def get(self, key: str) -> JournalEntry | None:
        return await self._io("get", key)  # type: ignore[no-any-return]

    async def advance(self, key: str, step: int, **changes: object) -> bool:
        return await self._io("advance", key, step, **changes)  # type: ignore[no-any-return]

    async def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        return await self._io("waiting", run_id)  # type: ignore[no-any-return]

    async def release(self, key: str, step: int) -> bool:
        return await self._io("release", key, step)  # type: ignore[no-any-return]

    async def cached(self, key: str, now: float) -> bytes | None:
        return await self._io("cached", key, now)  # type: ignore[no-any-return]

    async def cache(self, key: str, result: bytes, expires_at: float) -> None:
        await self._io("cache", key, result, expires_at)


RAN: list[str] = []


@tool
def bump(n: int) -> int:
    """Add one (sync, so it runs on a pool thread)."""
    RAN.append(f"bump {n}")
    return n + 1


@tool
async def double(n: int) -> int:
    """Double (async, on the loop)."""
    RAN.append(f"double {n}")
    return 2 * n


@tool(idempotency_key=lambda arguments: arguments["order"])
def pay(order: str, amount: int) -> str:
    """Pay for an order once, whatever the call."""
    RAN.append(f"pay {order}")
    return f"paid {amount}"


@tool(policy=ToolPolicy.read_only(), cache_ttl=60)
def price(item: str) -> int:
    """Look a price up (reused for a minute)."""
    RAN.append(f"price {item}")
    return len(item)


@tool(policy=ToolPolicy().with_access(approval_required=True))
def deploy(service: str) -> str:
    """Deploy a service, once a person approves."""
    RAN.append(f"deploy {service}")
    return f"deployed {service}"


TOOLS = [bump, double, pay, price, deploy]
APPROVE_DEPLOYS = PolicyMiddleware([require_approval(lambda request: Approval.defer("A person decides."))])


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def _calls() -> list[ToolCall]:
    calls = [ToolCall(f"b{i}", "bump", {"n": i}) for i in range(8)]
    calls += [ToolCall(f"d{i}", "double", {"n": i}) for i in range(8)]
    calls += [ToolCall("p1", "pay", {"order": "o1", "amount": 5}), ToolCall("p2", "pay", {"order": "o1", "amount": 5})]
    calls.append(ToolCall("q1", "price", {"item": "tea"}))
    return calls


def _ticked_during_every_operation(log: list[tuple[str, ...]]) -> bool:
    """Whether the heartbeat ticked between the start and the end of each async-face operation."""
    open_since: dict[str, bool] = {}
    for kind, *rest in log:
        if kind == "start":
            open_since[rest[0]] = False
        elif kind == "tick":
            for number in open_since:
                open_since[number] = True
        elif kind == "end" and not open_since.pop(rest[0]):
            return False
    return True


async def _with_heartbeat(log: list[tuple[str, ...]], work: Any) -> Any:
    stop = asyncio.Event()

    async def heartbeat() -> None:
        while not stop.is_set():
            log.append(("tick",))
            await asyncio.sleep(0)

    beating = asyncio.create_task(heartbeat())
    try:
        return await work
    finally:
        stop.set()
        await beating


def test_async_entry_points_await_the_async_face_and_the_loop_stays_free(tmp_path: Path) -> None:
    log: list[tuple[str, ...]] = []
    store = TwoFaced(tmp_path / "journal.db", log)
    dispatcher = Dispatcher(TOOLS, journal=store, context=RunContext(run_id="r1"), max_concurrency=8)

    async def turn() -> Any:
        first = await dispatcher.adispatch_many(_calls())
        again = await dispatcher.adispatch_many(
            [
                ToolCall("b3", "bump", {"n": 3}),
                ToolCall("d5", "double", {"n": 5}),
                ToolCall("q2", "price", {"item": "tea"}),
            ]
        )  # re-sent ids are answered from the journal, a new id of a cached read from the cache
        return first, again

    first, again = asyncio.run(_with_heartbeat(log, turn()))
    assert [r.status for r in first + again] == ["succeeded"] * (len(first) + len(again))
    assert [r.output for r in again] == [4, 10, 3]
    assert sorted(RAN) == sorted([f"bump {i}" for i in range(8)] + [f"double {i}" for i in range(8)] + [
        "pay o1", "price tea"])  # fmt: skip
    assert store.sync_on_loop == []
    assert not any(kind == "sync" for kind, *_ in log)
    assert store.async_journal.count >= 2 * len(first)  # every call claimed and recorded through the async face
    assert _ticked_during_every_operation(log)


def test_a_pending_call_parks_and_resumes_through_the_async_face(tmp_path: Path) -> None:
    log: list[tuple[str, ...]] = []
    store = TwoFaced(tmp_path / "journal.db", log)
    dispatcher = Dispatcher(TOOLS, journal=store, signing_key="k", middleware=[APPROVE_DEPLOYS])

    async def turn() -> Any:
        parked = await dispatcher.adispatch(ToolCall("c1", "deploy", {"service": "api"}))
        assert parked.status == "pending" and parked.pending is not None
        return await dispatcher.aresume(parked.pending.handle, {"approved": True})

    final = asyncio.run(_with_heartbeat(log, turn()))
    assert (final.status, final.output, RAN) == ("succeeded", "deployed api", ["deploy api"])
    assert store.sync_on_loop == [] and not any(kind == "sync" for kind, *_ in log)
    assert _ticked_during_every_operation(log)
    assert store.store.get(dispatcher.journal_stage.call_key("c1")).state == "done"  # type: ignore[union-attr]


def test_sync_entry_points_use_the_sync_face_of_the_same_store(tmp_path: Path) -> None:
    log: list[tuple[str, ...]] = []
    store = TwoFaced(tmp_path / "journal.db", log)
    dispatcher = Dispatcher(TOOLS, journal=store, signing_key="k", middleware=[APPROVE_DEPLOYS])
    results = [dispatcher.dispatch(call) for call in _calls()]
    assert all(r.status == "succeeded" for r in results)
    parked = dispatcher.dispatch(ToolCall("c1", "deploy", {"service": "api"}))
    assert parked.pending is not None
    assert dispatcher.resume(parked.pending.handle, {"approved": True}).output == "deployed api"
    assert store.async_journal.count == 0
    assert {name for kind, name in log if kind == "sync"} >= {"claim", "advance", "get", "cached", "cache"}

    # a sync batch runs its calls side by side on a loop of this thread: that loop must not block either
    again = dispatcher.dispatch_many([ToolCall("b0", "bump", {"n": 0}), ToolCall("b9", "bump", {"n": 9})])
    assert [r.output for r in again] == [1, 10] and RAN.count("bump 0") == 1
    assert store.sync_on_loop == []

    async def later() -> Any:  # the same entries, read through the other face
        return await dispatcher.adispatch(ToolCall("b1", "bump", {"n": 1}))

    assert asyncio.run(later()).output == 2 and RAN.count("bump 1") == 1
    assert store.async_journal.count >= 1 and store.sync_on_loop == []
