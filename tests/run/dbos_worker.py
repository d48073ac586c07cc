"""A DBOS application for tests/run/test_dbos.py (run as a script): one workflow of three tool calls.

    python dbos_worker.py FOLDER [crash]

The DBOS system database, the tinytools journal and the tools' record of what they did live in
FOLDER. With ``crash``, the ``pay`` tool kills its process right after it acts: the workflow is
left mid-step. Run again without it, DBOS recovers the workflow at launch and this prints its result.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from tinytools import SQLiteJournal, ToolCall, tool
from tinytools.dbos import DBOSDispatcher

FOLDER = Path(sys.argv[1])
CRASH = "crash" in sys.argv[2:]
WORKFLOW = "turn-1"


def _did(what: str) -> None:
    with open(FOLDER / "acts.log", "a") as log:
        log.write(what + "\n")
        log.flush()
        os.fsync(log.fileno())


@tool(idempotent=True)
def search(q: str) -> str:
    """Search (idempotent)."""
    _did(f"search {q}")
    return f"found {q}"


@tool
def pay(amount: int) -> str:
    """Pay (not idempotent): the process may die right after the payment."""
    _did(f"pay {amount}")
    if CRASH:
        os._exit(3)
    return f"paid {amount}"


@tool
def notify(who: str) -> str:
    """Tell someone."""
    _did(f"notify {who}")
    return f"told {who}"


journal = SQLiteJournal(FOLDER / "journal.db")


@DBOS.workflow()
def turn(calls: list[ToolCall]) -> list[str]:
    dispatcher = DBOSDispatcher([search, pay, notify], journal=journal)
    return [result.to_json().decode() for result in dispatcher.dispatch_many(calls)]


CALLS = [
    ToolCall("c1", "search", {"q": "invoice 7"}),
    ToolCall("c2", "pay", {"amount": 120}),
    ToolCall("c3", "notify", {"who": "finance"}),
]

if __name__ == "__main__":
    DBOS(
        config={
            "name": "tinytools-test",
            "system_database_url": f"sqlite:///{FOLDER / 'dbos.sqlite'}",
            "application_version": "tinytools-test-1",
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.01,
        }
    )
    DBOS.launch()  # recovers the workflow a crashed run left pending
    if CRASH:
        with SetWorkflowID(WORKFLOW):
            turn(CALLS)
    else:
        print(json.dumps(DBOS.retrieve_workflow(WORKFLOW).get_result()), flush=True)
    DBOS.destroy()
