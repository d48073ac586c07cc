"""The result cache: a read-only tool's results reused for the same arguments (``@tool(cache_ttl=...)``).

Results are kept in the dispatcher's journal, or in one cache of this process without one, under
a key of the tool and the canonical arguments. A tool made by a factory (a closure, a bound
method) keys its results by a token of its own, so one made per request never reads another's.
"""

from __future__ import annotations

import hashlib
import os
import time
import weakref
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._results import ToolResult
from tinytools._run.journals import JournalFaces, MemoryJournal, canonical

if TYPE_CHECKING:
    from tinytools._run.call_state import CallState
    from tinytools._tool import Tool

__all__ = ["ResultCache"]

_RESULT = msgspec.json.Decoder(ToolResult).decode


class ResultCache:
    """Where one dispatcher's read-only tools keep and reuse their results."""

    __slots__ = ("faces",)

    def __init__(self, journal: JournalFaces | None):
        self.faces = journal if journal is not None else _PROCESS_CACHE
        """The dispatcher's journal, or this process's cache."""

    async def reused(self, state: CallState) -> ToolResult | None:
        """A read-only tool's stored result for the same arguments, if one has not expired."""
        io = self.faces.on(state.scope.driver.asynchronous)
        stored = await io.cached(_key(state.plan.tool, state.arguments), time.time())
        if stored is None:
            return None
        try:
            result = _RESULT(stored)
        except (msgspec.DecodeError, msgspec.ValidationError):  # unreadable: as if nothing were kept
            return None
        return msgspec.structs.replace(result, call_id=state.call.id, elapsed=perf_counter_ns() - state.start)

    async def keep(self, state: CallState, result: ToolResult) -> None:
        """Store a read-only tool's succeeded result for its ``cache_ttl``."""
        ttl = state.plan.tool.options.cache_ttl
        if result.status != "succeeded" or ttl is None:
            return
        io = self.faces.on(state.scope.driver.asynchronous)
        await io.cache(_key(state.plan.tool, state.arguments), result.to_json(), time.time() + ttl)


def _key(tool: Tool[..., Any], arguments: Any) -> str:
    prefix = _PREFIXES.get(tool)
    if prefix is None:  # once per tool: which function's results these are
        fn = tool.fn
        where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        local = "<locals>" in where or getattr(fn, "__closure__", None) or getattr(fn, "__self__", None) is not None
        if local or not hasattr(fn, "__qualname__"):
            where += f"@{os.urandom(12).hex()}"  # made by a factory: its results are this tool's own
        prefix = _PREFIXES[tool] = f"{tool.name}\0{where}\0".encode()
    return hashlib.sha256(prefix + canonical(arguments)).hexdigest()


_PROCESS_CACHE = JournalFaces(MemoryJournal())
"""Reused results of dispatchers without a journal: shared by the whole process."""
_PREFIXES: weakref.WeakKeyDictionary[Tool[..., Any], bytes] = weakref.WeakKeyDictionary()
"""Each cached tool's key prefix: its name and which function's results they are."""
