"""`PostgresJournal`: the journal in PostgreSQL, shared by workers on any number of machines.

    pip install "tinytools[postgres]"

    from tinytools import Dispatcher, RunContext
    from tinytools.postgres import PostgresJournal

    journal = PostgresJournal("postgresql://agent@db.internal/agents")
    dispatcher = Dispatcher(tools, journal=journal, context=RunContext(run_id="run-42"))

The same contract as `SQLiteJournal` (`tinytools.Journal`): a call is claimed by one atomic
``INSERT ... ON CONFLICT DO NOTHING`` (unique by key and by run and call id), every change is a
compare-and-set on the entry's step, pending entries wait in the same table, reusable results in
``tinytools_cache``. The tables live in the connection's current schema (``search_path``) with the
layout `tinytools._run.journals.FIELDS` names, and ``tinytools_meta`` keeps their format.

Workers on other hosts see each other through leases (`tinytools._run.leases`): the worker running
a call renews its lease while the tool runs, and a call whose lease expired is taken over from any
host. Give each machine a distinct ``TINYTOOLS_HOST`` where host names repeat (containers).

Connections come from a pool (``psycopg_pool``), opened when the journal is made: an unreachable
server, a table of the same name that is not a journal, or a journal of a newer format is a
`JournalError` then. Connections are not pinged before use (that would double every round trip):
a statement that fails because its connection dropped is tried once more on another connection.
Each is safe to send twice: a change is a compare-and-set on the step, and a claim that landed
before its connection dropped is known again by its owner and its time. Async entry points
use `async_journal`, which runs the same statements on the pool's connections in worker threads,
so the event loop never waits on the network and one journal serves any number of loops.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tinytools._errors import JournalError
from tinytools._run.journals import FIELDS, FORMAT, Journal, JournalEntry, advance_statement, entry_of, row_of
from tinytools.providers._common import require

__all__ = ["PostgresJournal"]

T = TypeVar("T")

_COLUMNS = ", ".join(FIELDS)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tinytools_journal (
        key TEXT PRIMARY KEY, run_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
        arguments BYTEA NOT NULL, state TEXT NOT NULL, owner TEXT NOT NULL, step BIGINT NOT NULL,
        pending BYTEA, result BYTEA, updated DOUBLE PRECISION NOT NULL,
        lease DOUBLE PRECISION NOT NULL DEFAULT 0, UNIQUE (run_id, call_id))""",
    """CREATE INDEX IF NOT EXISTS tinytools_journal_waiting ON tinytools_journal (run_id) WHERE state = 'pending'""",
    """CREATE TABLE IF NOT EXISTS tinytools_cache (
        key TEXT PRIMARY KEY, result BYTEA NOT NULL, expires DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tinytools_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
)
_SETUP_LOCK = 0x7469_6E79_746F_6F6C
"""The advisory lock two workers making the tables at once take turns on ("tinytool" in hex)."""
_INSERT = (
    f"INSERT INTO tinytools_journal ({_COLUMNS}) VALUES ({', '.join(['%s'] * len(FIELDS))}) ON CONFLICT DO NOTHING"
)
_SELECT = f"SELECT {_COLUMNS} FROM tinytools_journal WHERE "


class PostgresJournal(Journal):
    """A journal in PostgreSQL (see the module): pass it as ``Dispatcher(journal=...)``.

    Args:
        conninfo: A libpq connection string or URL (``postgresql://user@host/db``).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most (calls beyond wait for one).
        timeout: Seconds to wait for the server when opening, and for a free connection.

    Raises:
        ImportError: ``psycopg`` is not installed (``pip install "tinytools[postgres]"``).
        JournalError: The server cannot be reached, or its tables are not a journal this version
            reads.
    """

    def __init__(self, conninfo: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 10.0) -> None:
        psycopg = require("psycopg", "postgres")
        pool = require("psycopg_pool", "postgres")
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error, pool.PoolTimeout)
        self._dropped: tuple[type[BaseException], ...] = (psycopg.OperationalError,)
        self.timeout = timeout
        self._pool = pool.ConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": True},
            name="tinytools-journal",
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except self._errors as exc:
            self._pool.close()
            raise JournalError(f"the PostgreSQL journal cannot reach its server: {_reason(exc)}") from None
        try:
            self._setup()
        except BaseException:
            self._pool.close()
            raise
        self._threads = concurrent.futures.ThreadPoolExecutor(max_size, thread_name_prefix="tinytools-journal")
        self.async_journal = _AsyncPostgres(self)
        """The same journal for async entry points: each statement runs off the event loop."""
        self._updates: dict[tuple[str, ...], str] = {}

    def close(self) -> None:
        """Close the pool's connections."""
        self._pool.close()
        self._threads.shutdown(wait=False)

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        """Make the tables if they are missing, and check that they are a journal of this format."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
                table, *rest = _SCHEMA
                conn.execute(table)
                columns = conn.execute(
                    "SELECT column_name FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = 'tinytools_journal'"
                    " ORDER BY ordinal_position"
                ).fetchall()
                if tuple(name for (name,) in columns) != FIELDS:
                    raise JournalError(
                        "the table tinytools_journal in this schema is not a tinytools journal (its columns "
                        "differ); use another schema (search_path) or database"
                    )
                for statement in rest:
                    conn.execute(statement)
                conn.execute("INSERT INTO tinytools_meta VALUES ('format', %s) ON CONFLICT DO NOTHING", (FORMAT,))
                found = conn.execute("SELECT value FROM tinytools_meta WHERE name = 'format'").fetchone()
        except self._errors as exc:
            raise JournalError(f"the PostgreSQL journal could not be set up: {_reason(exc)}") from None
        if found is None or found[0] != FORMAT:
            written = "none" if found is None else repr(found[0])
            raise JournalError(f"the PostgreSQL journal is of format {written}; this version reads format {FORMAT}")

    def _run(self, work: Callable[[Any], T]) -> T:
        """Run ``work(connection)``; once more, after the pool drops its dead connections, if this one dropped."""
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    return work(conn)
            except self._dropped as exc:
                if attempt == 2:
                    raise JournalError(f"the PostgreSQL journal failed: {_reason(exc)}") from None
                with contextlib.suppress(*self._errors):
                    self._pool.check()  # the others may have dropped with it (a server restart, a failover)
            except self._errors as exc:
                raise JournalError(f"the PostgreSQL journal failed: {_reason(exc)}") from None
        raise AssertionError("unreachable")

    def claim(self, entry: JournalEntry) -> JournalEntry | None:
        """`tinytools.Journal.claim`."""
        entry.updated = time.time()
        row = row_of(entry)

        def claim(conn: Any) -> JournalEntry | bool | None:
            if conn.execute(_INSERT, row).rowcount:
                return None
            found = conn.execute(_SELECT + "run_id = %s AND call_id = %s", (entry.run_id, entry.call_id)).fetchone()
            found = found or conn.execute(_SELECT + "key = %s", (entry.key,)).fetchone()
            if found is None:
                return False  # removed meanwhile: try again
            kept = entry_of(found)
            if (kept.key, kept.owner, kept.updated, kept.step) == (entry.key, entry.owner, entry.updated, 0):
                return None  # our own claim, which landed before its connection dropped
            return kept

        while True:
            found = self._run(claim)
            if found is not False:
                return found  # type: ignore[return-value]

    def get(self, key: str) -> JournalEntry | None:
        """`tinytools.Journal.get`."""
        row = self._run(lambda conn: conn.execute(_SELECT + "key = %s", (key,)).fetchone())
        return None if row is None else entry_of(row)

    def advance(self, key: str, step: int, **changes: object) -> bool:
        """`tinytools.Journal.advance`."""
        names = tuple(changes)
        sql = self._updates.get(names)
        if sql is None:
            sql = self._updates[names] = advance_statement(names, "%s")
        parameters = (*changes.values(), time.time(), key, step)
        return bool(self._run(lambda conn: conn.execute(sql, parameters).rowcount))  # a compare-and-set: safe twice

    def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        """`tinytools.Journal.renew`."""
        sql = "UPDATE tinytools_journal SET lease = %s WHERE key = %s AND step = %s AND owner = %s"
        return bool(self._run(lambda conn: conn.execute(sql, (until, key, step, owner)).rowcount))

    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        """`tinytools.Journal.waiting`."""
        if run_id is None:
            rows = self._run(lambda conn: conn.execute(_SELECT + "state = 'pending'").fetchall())
        else:
            rows = self._run(
                lambda conn: conn.execute(_SELECT + "state = 'pending' AND run_id = %s", (run_id,)).fetchall()
            )
        return [entry_of(row) for row in rows]

    def release(self, key: str, step: int) -> bool:
        """`tinytools.Journal.release`."""
        sql = "DELETE FROM tinytools_journal WHERE key = %s AND step = %s"
        return bool(self._run(lambda conn: conn.execute(sql, (key, step)).rowcount))

    def cached(self, key: str, now: float) -> bytes | None:
        """`tinytools.Journal.cached`."""
        sql = "SELECT result FROM tinytools_cache WHERE key = %s AND expires > %s"
        row = self._run(lambda conn: conn.execute(sql, (key, now)).fetchone())
        return None if row is None else bytes(row[0])

    def cache(self, key: str, result: bytes, expires_at: float) -> None:
        """`tinytools.Journal.cache`."""
        sql = (
            "INSERT INTO tinytools_cache VALUES (%s, %s, %s)"
            " ON CONFLICT (key) DO UPDATE SET result = EXCLUDED.result, expires = EXCLUDED.expires"
        )
        self._run(lambda conn: conn.execute(sql, (key, result, expires_at)))


class _AsyncPostgres:
    """`PostgresJournal`'s methods as coroutines: each statement runs on a worker thread of the journal."""

    __slots__ = ("journal",)

    def __init__(self, journal: PostgresJournal):
        self.journal = journal

    async def _off_loop(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.journal._threads, functools.partial(method, *args, **kwargs))

    async def claim(self, entry: JournalEntry) -> JournalEntry | None:
        return await self._off_loop(self.journal.claim, entry)

    async def get(self, key: str) -> JournalEntry | None:
        return await self._off_loop(self.journal.get, key)

    async def advance(self, key: str, step: int, **changes: object) -> bool:
        return await self._off_loop(self.journal.advance, key, step, **changes)

    async def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        return await self._off_loop(self.journal.renew, key, step, owner, until)

    async def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        return await self._off_loop(self.journal.waiting, run_id)

    async def release(self, key: str, step: int) -> bool:
        return await self._off_loop(self.journal.release, key, step)

    async def cached(self, key: str, now: float) -> bytes | None:
        return await self._off_loop(self.journal.cached, key, now)

    async def cache(self, key: str, result: bytes, expires_at: float) -> None:
        await self._off_loop(self.journal.cache, key, result, expires_at)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
