"""The journal: what each call of a run did, so that no call runs twice.

A `Journal` keeps one `JournalEntry` per call, under its key (the call's run and id, or the act its
tool declares) and unique by run and call id. The dispatcher claims an entry before the tool
runs (``started``), parks it while the call waits (``pending``), and writes the final result
when it ends (``done``). A call that arrives again — the same call id re-sent, or a call of the
same declared act — finds its entry and is answered from it. Two workers claiming the same call
race on one atomic insert: one runs it, the other waits for its result.

`SQLiteJournal` (`sqlite_journal`: standard-library ``sqlite3`` in WAL mode, loaded when a
program first asks for it) is the embedded store; it is safe to share between threads and between
processes on one machine. `MemoryJournal` keeps entries in this process only. Anything with the
`Journal` methods can stand in for either. The table layout every SQL journal keeps (`FIELDS`,
`FORMAT`) and its rows (`row_of`, `entry_of`, `advance_statement`) are here, for each store.

A store that talks over a network offers an `AsyncJournal` as well, its ``async_journal``
attribute: the same methods as coroutines. Async entry points (``adispatch``, ``Dispatcher.adispatch``,
``aresume`` and the rest) await those, so journal I/O never blocks the event loop; sync entry
points, and stores without one, call the `Journal` methods. `JournalFaces` picks the face.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Literal, Protocol

import msgspec
from typing_extensions import override

from tinytools._errors import JournalError
from tinytools._public import publish

__all__ = [
    "CHANGEABLE",
    "FIELDS",
    "FORMAT",
    "LEASE_SECONDS",
    "AsyncJournal",
    "Journal",
    "JournalEntry",
    "JournalError",
    "JournalFaces",
    "MemoryJournal",
    "State",
    "advance_statement",
    "canonical",
    "entry_of",
    "holds",
    "owner_alive",
    "row_of",
    "this_owner",
]

LEASE_SECONDS = 30.0
"""How long a claim holds without renewal, by default (``Dispatcher(lease_seconds=...)``)."""

_SORTED = msgspec.json.Encoder(order="sorted").encode


def canonical(value: Any) -> bytes:
    """A value as canonical JSON (sorted keys, no spaces): what keys and comparisons read."""
    return _SORTED(value)


State = Literal["started", "pending", "done"]
"""Where a journaled call stands: running (or died running), waiting, or ended."""


class JournalEntry(msgspec.Struct, kw_only=True):
    """One call's record in the journal."""

    key: str
    """The call's key: from its run and call id, or from the act its tool's ``idempotency_key`` names."""
    run_id: str
    """The run the call belongs to."""
    call_id: str
    """The provider's call id."""
    tool: str
    """The tool's name."""
    arguments: bytes
    """The validated arguments, as canonical JSON."""
    state: State = "started"
    """Running, waiting or ended."""
    owner: str = ""
    """Who runs the call (`this_owner` of its process)."""
    step: int = 0
    """Counts the entry's changes; a pending call's handle names the step it was made at."""
    pending: bytes | None = None
    """A waiting call's `Pending` record and what its resumption needs, as JSON."""
    result: bytes | None = None
    """The final `ToolResult`, as JSON, once the call ended."""
    updated: float = 0.0
    """When the entry last changed (seconds since the epoch)."""
    lease: float = 0.0
    """Until when (seconds since the epoch) ``owner`` holds a call it runs; it renews the lease while
    the tool runs. Past it, a worker on any host may take the call over (see `holds`)."""


class Journal(Protocol):
    """Where a dispatcher records its calls. Every method is atomic with respect to the others.

    The dispatcher uses all of them. An application may read with `waiting` (every run's calls
    that wait: an inbox across runs; `Dispatcher.pending` lists one run's with their handles) and
    `get`; it changes entries only through the dispatcher (`resume`, `expire`, `cancel_pending`),
    so that every change stays a compare-and-set on the entry's step.

    A store may also have an ``async_journal`` attribute: an `AsyncJournal` over the same entries,
    which async entry points await instead of calling these methods.
    """

    def claim(self, entry: JournalEntry) -> JournalEntry | None:
        """Record ``entry`` unless its key or its run and call id is already there.

        Returns None when ``entry`` was recorded (the caller runs the call), else the entry
        already recorded: by run and call id first, then by key.
        """
        ...

    def get(self, key: str) -> JournalEntry | None:
        """The entry with this idempotency key, or None."""
        ...

    def advance(self, key: str, step: int, **changes: object) -> bool:
        """Change the entry if it is still at ``step`` (its step then becomes ``step + 1``).

        Returns whether it changed: False when another worker changed it first. ``changes`` name
        `JournalEntry` fields (``state``, ``owner``, ``pending``, ``result``, ``lease``).
        """
        ...

    def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        """Extend ``owner``'s lease on the entry to ``until`` if it is still at ``step`` and ``owner``'s.

        The step does not change (a renewal is no change of the call). Returns whether it held.
        """
        ...

    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        """The pending entries, of one run or of all."""
        ...

    def release(self, key: str, step: int) -> bool:
        """Forget the entry if it is still at ``step`` (its call never started); whether it was."""
        ...

    def cached(self, key: str, now: float) -> bytes | None:
        """A reusable result stored under ``key`` that has not expired by ``now``."""
        ...

    def cache(self, key: str, result: bytes, expires_at: float) -> None:
        """Store a reusable result under ``key`` until ``expires_at``."""
        ...


class AsyncJournal(Protocol):
    """A journal's methods as coroutines, for a store whose I/O must not block an event loop.

    Each means what the `Journal` method of the same name means, with the same atomicity. A
    store offers one as its ``async_journal`` attribute, beside its sync methods; both faces
    see the same entries. Its coroutines may be awaited on more than one event loop (a sync
    batch runs its calls on a loop of the calling thread), so a store keeps what is bound to a
    loop, such as connections, per loop.
    """

    async def claim(self, entry: JournalEntry) -> JournalEntry | None:
        """`Journal.claim`."""
        ...

    async def get(self, key: str) -> JournalEntry | None:
        """`Journal.get`."""
        ...

    async def advance(self, key: str, step: int, **changes: object) -> bool:
        """`Journal.advance`."""
        ...

    async def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        """`Journal.waiting`."""
        ...

    async def release(self, key: str, step: int) -> bool:
        """`Journal.release`."""
        ...

    async def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        """`Journal.renew`."""
        ...

    async def cached(self, key: str, now: float) -> bytes | None:
        """`Journal.cached`."""
        ...

    async def cache(self, key: str, result: bytes, expires_at: float) -> None:
        """`Journal.cache`."""
        ...


class JournalFaces:
    """A journal as the pipeline awaits it, on whichever entry point.

    The store's `AsyncJournal` on async entry points when it offers one, else its sync methods
    wrapped as coroutines that never suspend (so the sync driver, which runs the pipeline without
    a loop, can await them too).
    """

    __slots__ = ("blocking", "native", "store")

    def __init__(self, store: Journal):
        self.store = store
        """The `Journal`: what sync code outside a call reads (an inbox, a cancellation's check)."""
        self.blocking: AsyncJournal = _Blocking(store)
        native = getattr(store, "async_journal", None)
        self.native: AsyncJournal | None = native
        """The store's own async face, or None."""

    def on(self, asynchronous: bool) -> AsyncJournal:
        """The face for a driver: the store's async face where the loop must not block and it has one."""
        native = self.native
        return native if asynchronous and native is not None else self.blocking


class _Blocking:
    """A `Journal`'s sync methods as an `AsyncJournal` whose coroutines return without suspending."""

    __slots__ = ("store",)

    def __init__(self, store: Journal):
        self.store = store

    async def claim(self, entry: JournalEntry) -> JournalEntry | None:
        return self.store.claim(entry)

    async def get(self, key: str) -> JournalEntry | None:
        return self.store.get(key)

    async def advance(self, key: str, step: int, **changes: object) -> bool:
        return self.store.advance(key, step, **changes)

    async def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        return self.store.waiting(run_id)

    async def release(self, key: str, step: int) -> bool:
        return self.store.release(key, step)

    async def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        return self.store.renew(key, step, owner, until)

    async def cached(self, key: str, now: float) -> bytes | None:
        return self.store.cached(key, now)

    async def cache(self, key: str, result: bytes, expires_at: float) -> None:
        self.store.cache(key, result, expires_at)


def _boot_time(pid: int) -> str:
    """When process ``pid`` started (Linux ``/proc``), so a reused pid is not taken for its owner."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _host_name() -> str:
    """This machine's name (``os.uname``; ``platform`` where there is none, as on Windows)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import platform  # Windows only: platform compiles a dozen patterns on import

    return platform.node()


_HOST = os.environ.get("TINYTOOLS_HOST") or _host_name()
"""The host an owner names: the machine's name, or ``TINYTOOLS_HOST`` where names repeat (containers)."""


def this_owner() -> str:
    """This process, as an entry's owner: host, pid and the process's start time (read once per process)."""
    pid = os.getpid()
    known = _OWNER.get(pid)
    if known is None:  # a forked child is another process: its own pid and start time
        known = _OWNER[pid] = f"{_HOST.replace(':', '_')}:{pid}:{_boot_time(pid)}"
    return known


_OWNER: dict[int, str] = {}
"""`this_owner` by pid: reading the start time costs a file read, and dispatchers are made per run."""


def holds(entry: JournalEntry, now: float | None = None) -> bool:
    """Whether the owner of an entry may still be running its call.

    On this host, whether the owner's process is alive (a dead one is known at once). On another
    host, whether its lease has not expired: past it, the call may be taken over from any host.
    """
    host = entry.owner.partition(":")[0]
    if host == _HOST.replace(":", "_"):
        return owner_alive(entry.owner)
    return entry.lease > (time.time() if now is None else now)


def owner_alive(owner: str) -> bool:
    """Whether the process that owns an entry may still be running it.

    A process on another host is assumed alive: nothing here can tell (`holds` reads its lease).
    """
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    here = _HOST.replace(":", "_")
    if host != here or not pid_text.isdigit():
        return host != here
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not started or _boot_time(pid) in ("", started)


class MemoryJournal(Journal):
    """A journal in this process's memory: calls are remembered until the process ends."""

    def __init__(self) -> None:
        self._entries: dict[str, JournalEntry] = {}
        self._ids: dict[tuple[str, str], str] = {}
        self._cache: dict[str, tuple[bytes, float]] = {}
        self._lock = threading.Lock()

    @override
    def claim(self, entry: JournalEntry) -> JournalEntry | None:
        with self._lock:
            known = self._ids.get((entry.run_id, entry.call_id))
            existing = self._entries.get(known if known is not None else entry.key)
            if existing is not None:
                return msgspec.structs.replace(existing)
            entry.updated = time.time()
            self._entries[entry.key] = msgspec.structs.replace(entry)
            self._ids[entry.run_id, entry.call_id] = entry.key
            return None

    @override
    def get(self, key: str) -> JournalEntry | None:
        with self._lock:
            entry = self._entries.get(key)
            return None if entry is None else msgspec.structs.replace(entry)

    @override
    def advance(self, key: str, step: int, **changes: object) -> bool:
        if not CHANGEABLE.issuperset(changes):
            raise ValueError(f"an entry's {sorted(set(changes) - CHANGEABLE)} cannot change")
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.step != step:
                return False
            self._entries[key] = msgspec.structs.replace(entry, step=step + 1, updated=time.time(), **changes)
            return True

    @override
    def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.step != step or entry.owner != owner:
                return False
            entry.lease = until
            return True

    @override
    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        with self._lock:
            return [
                msgspec.structs.replace(entry)
                for entry in self._entries.values()
                if entry.state == "pending" and (run_id is None or entry.run_id == run_id)
            ]

    @override
    def release(self, key: str, step: int) -> bool:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.step != step:
                return False
            del self._entries[key]
            self._ids.pop((entry.run_id, entry.call_id), None)
            return True

    @override
    def cached(self, key: str, now: float) -> bytes | None:
        with self._lock:
            stored = self._cache.get(key)
            return stored[0] if stored is not None and stored[1] > now else None

    @override
    def cache(self, key: str, result: bytes, expires_at: float) -> None:
        with self._lock:
            if len(self._cache) >= _PRUNE_AT:  # forget what expired before growing further
                now = time.time()
                self._cache = {k: kept for k, kept in self._cache.items() if kept[1] > now}
            self._cache[key] = (result, expires_at)


_PRUNE_AT = 10_000
"""Reused results a `MemoryJournal` holds before it drops the expired ones."""
FIELDS = (
    "key", "run_id", "call_id", "tool", "arguments", "state", "owner", "step", "pending", "result", "updated", "lease",
)  # fmt: skip
"""The journal table's columns, in order: `JournalEntry`'s fields. Every SQL journal keeps this layout."""
FORMAT = "2"
"""The table layout's version, kept in the ``tinytools_meta`` table (format 1 had no ``lease``)."""
CHANGEABLE = frozenset({"state", "owner", "pending", "result", "lease"})
"""The fields `Journal.advance` may change."""


def advance_statement(names: tuple[str, ...], mark: str) -> str:
    """The SQL of `Journal.advance` changing ``names``, with ``mark`` as its parameter placeholder.

    Its parameters: the new values, the time, the key, the step it must still be at.

    Raises:
        ValueError: A name is not a field `Journal.advance` may change.
    """
    if not CHANGEABLE.issuperset(names):
        raise ValueError(f"an entry's {sorted(set(names) - CHANGEABLE)} cannot change")
    assignments = ", ".join(f"{name} = {mark}" for name in names)
    changed = f"{assignments}, step = step + 1, updated = {mark}"
    return f"UPDATE tinytools_journal SET {changed} WHERE key = {mark} AND step = {mark}"


def row_of(entry: JournalEntry) -> tuple[object, ...]:
    """An entry as a table row, in `FIELDS` order."""
    return (
        entry.key, entry.run_id, entry.call_id, entry.tool, entry.arguments, entry.state, entry.owner, entry.step,
        entry.pending, entry.result, entry.updated, entry.lease,
    )  # fmt: skip


def entry_of(row: tuple[object, ...]) -> JournalEntry:
    """A table row, in `FIELDS` order, as an entry (text where bytes belong is read as its UTF-8)."""
    values = dict(zip(FIELDS, row, strict=True))
    for name in ("arguments", "pending", "result"):
        value = values[name]
        if isinstance(value, str):  # text another program wrote: read as bytes, and refused where decoded
            values[name] = value.encode("utf-8", "surrogatepass")
        elif value is not None:
            values[name] = bytes(value)  # type: ignore[call-overload]
    return JournalEntry(**values)  # type: ignore[arg-type]


publish("tinytools", Journal, AsyncJournal, JournalEntry, MemoryJournal)
