"""A database per MCP session, for tests/providers/test_mcp_sessions.py (served by ``tinytools serve-mcp``).

``open_database`` is the ``--inject`` factory: a generator that opens a `Database`, yields it
and closes it. Each open and close appends one JSON line to ``sessions.jsonl`` beside this file
(the tests copy the file into a folder of their own), with what the factory was told of the
session. ``query`` takes the database; ``ping`` takes nothing injected.

Run as a script, ``python mcp_session_tools.py --stateful PORT`` serves stateful streamable HTTP
on 127.0.0.1 (``serve-mcp --http`` serves stateless).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from tinytools import Injected, Toolbox, ToolError, tool
from tinytools.providers.mcp import SessionContext

LOG = Path(__file__).with_name("sessions.jsonl")
_NUMBERS = itertools.count(1)


class Database:
    """Stands for a connection that must be closed."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.closed = False


def _log(entry: dict[str, Any]) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def open_database(context: SessionContext) -> Iterator[dict[str, Any]]:
    """Open one database for the session, and close it when the session ends."""
    database = Database(next(_NUMBERS))
    _log(
        {
            "event": "open",
            "database": database.number,
            "session": context.number,
            "transport": context.transport,
            "session_id": context.session_id,
            "tenant": context.headers.get("x-tenant"),
            "principal": None if context.principal is None else context.principal.display_name,
        }
    )
    try:
        yield {"db": database}
    finally:
        database.closed = True
        _log({"event": "close", "database": database.number})


@tool
def query(sql: str, *, db: Annotated[Database, Injected]) -> str:
    """Run a query on the session's database."""
    if db.closed:
        raise ToolError("the database is closed")
    return f"{db.number}: {sql}"


@tool
def ping() -> str:
    """Answer pong (no database needed)."""
    return "pong"


toolbox = Toolbox([query, ping])

if __name__ == "__main__":
    from tinytools.providers.mcp import serve_http

    serve_http(
        toolbox, "127.0.0.1", int(sys.argv[sys.argv.index("--stateful") + 1]), stateless=False, inject=open_database
    )
