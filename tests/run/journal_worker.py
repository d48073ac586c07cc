"""A worker process for tests/run/test_journal.py: runs journaled calls and prints each result.

    python journal_worker.py JOURNAL EFFECTS MODE [ARG]

``JOURNAL`` is an SQLite file, or ``postgres:`` and a DSN for a `PostgresJournal`. The environment
may give ``TINYTOOLS_HOST`` (the host this worker says it is) and ``TT_LEASE_SECONDS``.
``MODE`` is ``batch`` (the 200 calls of `calls`, in chunks, in order), ``race`` (the same calls,
shuffled by ``ARG`` as a seed), ``defer`` (one call an approver defers: prints its handle),
``inbox`` (three deferred calls, one of them given a secret) or ``resume`` (resumes the handle
``ARG``, with the secret). Every final result is printed as one JSON line as soon as
it is known. The tools record each side effect in the ``EFFECTS`` SQLite file, one row per act,
so a call that ran twice shows as two rows.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated

from tinytools import (
    Dispatcher,
    IdempotencyKey,
    Injected,
    Journal,
    RunContext,
    SQLiteJournal,
    ToolCall,
    ToolPolicy,
    tool,
)
from tinytools.policy import Approval, PolicyMiddleware, require_approval

EFFECTS = Path(sys.argv[2]) if __name__ == "__main__" else Path("effects.db")
CALLS = 200
RUN = "the-run"
KEY = "the signing key"


def _act(kind: str, n: int, key: str) -> None:
    with contextlib.closing(sqlite3.connect(EFFECTS, timeout=30, isolation_level=None)) as db, db:
        db.execute("INSERT INTO effects VALUES (?, ?, ?)", (kind, n, key))


@tool
def charge(n: int, key: IdempotencyKey) -> str:
    """Charge once (not idempotent): the act, then a little more work."""
    _act("charge", n, key)
    time.sleep(0.002)
    return f"charged {n}"


@tool
def transfer(n: int, key: IdempotencyKey) -> str:
    """A slower act that is not idempotent."""
    time.sleep(0.01)
    _act("transfer", n, key)
    time.sleep(0.01)
    return f"transferred {n}"


@tool(idempotent=True)
def refresh(n: int, key: IdempotencyKey) -> str:
    """An idempotent act: running it again is harmless."""
    _act("refresh", n, key)
    return f"refreshed {n}"


@tool(policy=ToolPolicy().with_access(approval_required=True))
def release(n: int, key: IdempotencyKey) -> str:
    """An act that waits for a person's approval."""
    _act("release", n, key)
    return f"released {n}"


SECRET = "sk-live-0123456789abcdef"


@tool(policy=ToolPolicy().with_access(approval_required=True))
def wire(n: int, note: str, api_key: Annotated[str, Injected("api_key", secret=True)]) -> str:
    """Wire money with a secret key, once a person approves."""
    _act("wire", n, api_key[-4:])
    return f"wired {n}"


def calls() -> list[ToolCall]:
    """The same 200 calls in every process: three tools, fast and slow."""
    names = ["charge", "transfer", "refresh", "charge"]
    return [ToolCall(f"call-{n}", names[n % 4], {"n": n}) for n in range(CALLS)]


def prepare(effects: Path) -> None:
    with contextlib.closing(sqlite3.connect(effects)) as db, db:
        db.execute("CREATE TABLE IF NOT EXISTS effects (kind TEXT, n INTEGER, key TEXT)")


def open_journal(target: str) -> Journal:
    """The journal a worker is told to use: an SQLite file, or ``postgres:DSN``."""
    if target.startswith("postgres:"):
        from tinytools.postgres import PostgresJournal

        return PostgresJournal(target.removeprefix("postgres:"))
    return SQLiteJournal(target)


def main() -> None:
    journal, mode = open_journal(sys.argv[1]), sys.argv[3]
    lease = float(os.environ.get("TT_LEASE_SECONDS", "30"))
    later = PolicyMiddleware([require_approval(lambda request: Approval.defer("A person decides."))])
    dispatcher = Dispatcher(
        [charge, transfer, refresh, release, wire], journal=journal, signing_key=KEY,
        context=RunContext(run_id=RUN), middleware=[later], max_concurrency=4, lease_seconds=lease,
    )  # fmt: skip
    if mode == "defer":
        waiting = dispatcher.dispatch(ToolCall("defer-1", "release", {"n": 1}))
        print(waiting.to_json().decode(), flush=True)
        return
    if mode == "inbox":
        for n in (1, 2):
            dispatcher.dispatch(ToolCall(f"inbox-{n}", "release", {"n": n}))
        dispatcher.dispatch(ToolCall("inbox-3", "wire", {"n": 3, "note": f"key {SECRET}"}), inject={"api_key": SECRET})
        return
    if mode == "resume":
        answer = dispatcher.resume(sys.argv[4], {"approved": True}, inject={"api_key": SECRET})
        print(answer.to_json().decode(), flush=True)
        return
    todo = calls()
    if mode == "race":
        random.Random(int(sys.argv[4])).shuffle(todo)
    for start in range(0, len(todo), 8):
        for result in dispatcher.dispatch_many(todo[start : start + 8]):
            print(result.to_json().decode(), flush=True)


if __name__ == "__main__":
    main()
