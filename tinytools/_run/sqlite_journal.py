"""`SQLiteJournal`: the journal in an SQLite file, shared by the threads and processes of one machine.

Its own module so that ``sqlite3`` loads when a program first asks for this store (``import
tinytools`` does not load it). The table layout and its rows are `journals`', shared with every SQL
store.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path

from typing_extensions import override

from tinytools._errors import JournalError
from tinytools._public import publish
from tinytools._run.journals import FIELDS, FORMAT, Journal, JournalEntry, advance_statement, entry_of, row_of

__all__ = ["SQLiteJournal"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tinytools_journal (
    key TEXT PRIMARY KEY, run_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
    arguments BLOB NOT NULL, state TEXT NOT NULL, owner TEXT NOT NULL, step INTEGER NOT NULL,
    pending BLOB, result BLOB, updated REAL NOT NULL, lease REAL NOT NULL DEFAULT 0,
    UNIQUE (run_id, call_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tinytools_journal_waiting ON tinytools_journal (run_id) WHERE state = 'pending';
CREATE TABLE IF NOT EXISTS tinytools_cache (key TEXT PRIMARY KEY, result BLOB NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tinytools_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO tinytools_meta VALUES ('format', '2');
"""
_UPGRADE_1 = """
ALTER TABLE tinytools_journal ADD COLUMN lease REAL NOT NULL DEFAULT 0;
UPDATE tinytools_meta SET value = '2' WHERE name = 'format';
"""
_INSERT = f"INSERT OR IGNORE INTO tinytools_journal VALUES ({', '.join('?' * len(FIELDS))})"


class SQLiteJournal(Journal):
    """A journal in an SQLite file (WAL mode), shared by the threads and processes that open it.

    Args:
        path: The file; made if it does not exist.
        timeout: Seconds to wait for another writer's lock before failing.

    Raises:
        JournalError: The file is not an SQLite database, is corrupt, or holds another
            program's tables under tinytools' names, or a journal of another format.

    Each change is its own transaction, committed before the call goes on: a process killed at
    any moment leaves every call it started recorded (``synchronous=NORMAL``: safe against a
    process crash; an operating system crash may lose the last changes).
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._updates: dict[tuple[str, ...], str] = {}
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path} cannot be opened as a tinytools journal: {exc}") from None
        weakref.finalize(self, self._db.close)  # a journal dropped unclosed closes its file when collected
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            (found,) = self._db.execute("SELECT value FROM tinytools_meta WHERE name = 'format'").fetchone()
            columns = [row[1] for row in self._db.execute("PRAGMA table_info(tinytools_journal)")]
            if found == "1" and tuple(columns) == FIELDS[:-1]:  # a journal this library wrote before leases
                self._db.executescript(f"BEGIN IMMEDIATE; {_UPGRADE_1} COMMIT;")
                found, columns = FORMAT, list(FIELDS)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise JournalError(f"{self.path} is not a usable tinytools journal: {exc}") from None
        if found != FORMAT or tuple(columns) != FIELDS:
            self._db.close()
            raise JournalError(f"{self.path} holds a journal of another format, or another program's tables")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> SQLiteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, sql: str, parameters: Iterable[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(parameters)).fetchall()
            except (sqlite3.DatabaseError, UnicodeEncodeError) as exc:
                raise JournalError(f"the journal {self.path} failed: {_reason(exc)}") from None

    @override
    def claim(self, entry: JournalEntry) -> JournalEntry | None:
        entry.updated = time.time()
        if self._changed(_INSERT, row_of(entry)):
            return None
        found = self._select("run_id = ? AND call_id = ?", (entry.run_id, entry.call_id)) or self._select(
            "key = ?", (entry.key,)
        )
        if not found:  # removed between the two statements: try once more
            return self.claim(entry)
        return found[0]

    @override
    def get(self, key: str) -> JournalEntry | None:
        found = self._select("key = ?", (key,))
        return found[0] if found else None

    @override
    def advance(self, key: str, step: int, **changes: object) -> bool:
        names = tuple(changes)
        sql = self._updates.get(names)
        if sql is None:
            sql = self._updates[names] = advance_statement(names, "?")
        return self._changed(sql, (*changes.values(), time.time(), key, step))

    @override
    def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        sql = "UPDATE tinytools_journal SET lease = ? WHERE key = ? AND step = ? AND owner = ?"
        return self._changed(sql, (until, key, step, owner))

    @override
    def waiting(self, run_id: str | None = None) -> list[JournalEntry]:
        if run_id is None:
            return self._select("state = 'pending'", ())
        return self._select("state = 'pending' AND run_id = ?", (run_id,))

    @override
    def release(self, key: str, step: int) -> bool:
        return bool(
            self._execute("DELETE FROM tinytools_journal WHERE key = ? AND step = ? RETURNING key", (key, step))
        )

    @override
    def cached(self, key: str, now: float) -> bytes | None:
        rows = self._execute("SELECT result FROM tinytools_cache WHERE key = ? AND expires > ?", (key, now))
        return bytes(rows[0][0]) if rows else None  # type: ignore[call-overload]

    @override
    def cache(self, key: str, result: bytes, expires_at: float) -> None:
        self._execute("INSERT OR REPLACE INTO tinytools_cache VALUES (?, ?, ?)", (key, result, expires_at))

    def _changed(self, sql: str, parameters: tuple[object, ...]) -> bool:
        """Run one statement that writes; whether it changed a row."""
        with self._lock:
            try:
                return self._db.execute(sql, parameters).rowcount > 0
            except (sqlite3.DatabaseError, UnicodeEncodeError) as exc:
                raise JournalError(f"the journal {self.path} failed: {_reason(exc)}") from None

    def _select(self, where: str, parameters: tuple[object, ...]) -> list[JournalEntry]:
        rows = self._execute(f"SELECT {', '.join(FIELDS)} FROM tinytools_journal WHERE {where}", parameters)
        return [entry_of(row) for row in rows]


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeEncodeError):  # a run or call id holding a lone surrogate, which SQLite cannot keep
        return "an id or name is not Unicode text (it holds a lone surrogate)"
    return str(exc)


publish("tinytools", SQLiteJournal)
