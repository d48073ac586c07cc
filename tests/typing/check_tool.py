"""Checked by mypy in tests/test_typing.py, against tinytools installed from its wheel.

``@tool`` keeps the function's signature; the toolbox functions take what the README says.
Names loaded on first use keep their types, and a misspelt name is still an error.
"""

from typing_extensions import assert_type, reveal_type

import tinytools
from tinytools import Dispatcher, Toolbox, ToolCall, ToolResult, dispatch, tool
from tinytools.executors import shutdown_shared_pool


@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool(name="sub")
def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


@tool
async def fetch(url: str) -> bytes:
    """Fetch a URL."""
    return url.encode()


class Notes:
    def read(self, title: str) -> str:
        """Read a note."""
        return title


assert_type(add(1, 2), int)
assert_type(subtract(3, b=1), int)
reveal_type(subtract)  # N: Revealed type is "tinytools._tool.Tool[[a: int, b: int], int]"
reveal_type(fetch)  # N: Revealed type is "tinytools._tool.Tool[[url: str], typing.Coroutine[Any, Any, bytes]]"
add("x")  # E: Argument 1 to "__call__" of "Tool" has incompatible type "str"; expected "int"  [arg-type]
subtract(1)  # E: Missing positional argument "b" in call to "__call__" of "Tool"  [call-arg]

box = Toolbox.merge(Toolbox([add]), Toolbox.from_object(Notes(), prefix="notes_").renamed({"notes_read": "read"}))
assert_type(box.prefixed("x_").filtered(lambda item: item.name != "x_read"), Toolbox)
assert_type(dispatch(ToolCall("c1", "add", {"a": 1}), add), ToolResult)
assert_type(Dispatcher(add).dispatch(ToolCall("c2", "add", '{"a": 1}')), ToolResult)
Toolbox.from_object(Notes(), include="read", prefix=1)  # E: Argument "prefix" to "from_object" of "Toolbox" has incompatible type "int"; expected "str | None"  [arg-type]
reveal_type(tinytools.SQLiteJournal(":memory:"))  # N: Revealed type is "tinytools._run.sqlite_journal.SQLiteJournal"
assert_type(shutdown_shared_pool(), None)
misspelt = tinytools.Dispacher  # E: Module has no attribute "Dispacher"; maybe "Dispatcher"?  [attr-defined]
