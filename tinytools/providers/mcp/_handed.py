"""The handles of pending calls a server handed to clients, and what a sessionless client can take.

A pending call's signed handle goes to a client as an ``input_required`` result's
``requestState`` (a question, `tinytools.providers.mcp._input_required`) or as a task's
``taskId`` (`tinytools.providers.mcp._tasks`). Only a handle the server handed, in that role, is
taken back: the ``_meta`` record of a pending result (which any client may read) names a handle
too, and no client may answer or poll a call through it. The server remembers each handle in
the process that handed it (`Handed`), with the dispatcher that holds the call, so a call parked
in a session's memory is found again. What it keeps is bounded, since any client may make
pending calls: at most `MOST_HANDED` handles and about `MOST_HANDED_BYTES` of their calls, the
expired forgotten first, then the oldest (whose client's later retry is then refused).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["MOST_HANDED", "MOST_HANDED_BYTES", "TASKS", "Handed", "HandedCall", "abilities"]

MOST_HANDED = 4096
"""Most handles one server remembers having handed to clients."""
MOST_HANDED_BYTES = 256 * 1024 * 1024
"""About the most memory the calls of the handed handles may hold (their arguments and dispatchers)."""
TASKS = "io.modelcontextprotocol/tasks"
"""The identifier of MCP's tasks extension (2026-07-28)."""
_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"

Role = Literal["question", "task"]


def abilities(meta: object) -> frozenset[str]:
    """What a sessionless request's ``_meta`` says its client takes (nothing for a 2025 request).

    ``forms``: form-mode elicitation; ``tasks``: the tasks extension.
    """
    capabilities = meta.get(_CAPABILITIES) if isinstance(meta, Mapping) else None
    if not isinstance(capabilities, Mapping):
        return frozenset()
    taken = set()
    elicitation = capabilities.get("elicitation")
    if isinstance(elicitation, Mapping) and (not elicitation or isinstance(elicitation.get("form"), Mapping)):
        taken.add("forms")  # an empty elicitation object means forms
    extensions = capabilities.get("extensions")
    if isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS), Mapping):
        taken.add("tasks")
    return frozenset(taken)


class HandedCall:
    """One handle handed to a client: the dispatcher holding its call, its tool, its role, when, until when.

    A task's ``status`` is the one a client last read, changed at ``updated``.
    """

    __slots__ = ("created", "dispatcher", "expires_at", "role", "status", "tool", "updated", "weight")

    def __init__(self, dispatcher: Any, tool: str, role: Role, expires_at: float, weight: int):
        self.weight = weight
        """About how many bytes the call holds in memory."""
        self.dispatcher = dispatcher
        self.tool = tool
        self.role: Role = role
        self.created = time.time()
        self.expires_at = expires_at
        self.status = ""
        self.updated = self.created


class Handed:
    """The handles a server handed to clients (see the module): the expired go first, then the oldest."""

    __slots__ = ("_handed", "weight")

    def __init__(self) -> None:
        self._handed: dict[str, HandedCall] = {}
        self.weight = 0
        """About how many bytes the calls of the handed handles hold."""

    def add(self, handle: str, dispatcher: Any, tool: str, role: Role, expires_at: float, weight: int) -> HandedCall:
        """Remember a handle handed in ``role`` (one handed before keeps the role it was handed in)."""
        handed = self._handed
        known = handed.get(handle)
        if known is not None:
            return known
        if len(handed) >= MOST_HANDED or self.weight + weight > MOST_HANDED_BYTES:
            now = time.time()
            for stale in [handle for handle, call in handed.items() if call.expires_at <= now]:
                self.forget(stale)
            while handed and (len(handed) >= MOST_HANDED or self.weight + weight > MOST_HANDED_BYTES):
                self.forget(next(iter(handed)))
        made = handed[handle] = HandedCall(dispatcher, tool, role, expires_at, weight)
        self.weight += weight
        return made

    def get(self, handle: object, role: Role) -> HandedCall | None:
        """The call of a handle handed in ``role``, or None."""
        found = self._handed.get(handle) if isinstance(handle, str) else None
        return found if found is not None and found.role == role else None

    def forget(self, handle: str) -> None:
        gone = self._handed.pop(handle, None)
        if gone is not None:
            self.weight -= gone.weight
