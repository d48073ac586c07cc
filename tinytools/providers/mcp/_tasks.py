"""Pending calls as tasks of MCP's tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28).

A served call that waits (a background tool's, an external tool's, an approval or a question the
client is not asked, see `tinytools.providers.mcp._input_required`) is answered, for a sessionless
client that declares the extension in its request's capabilities, with a task
(``resultType: "task"``) whose ``taskId`` is the pending call's signed handle:

- ``tasks/get`` is `Dispatcher.poll`: ``working`` while the call waits or runs (the status message
  says what it waits for); ``input_required`` with the form in ``inputRequests`` while it waits for
  an answer a form holds (a client that shows forms, a server that elicits); ``completed`` with the
  call's ``CallToolResult`` once it ended (a tool's failure is a completed task whose result has
  ``isError``); ``failed`` with a JSON-RPC ``error`` when the server failed (an internal error, an
  outcome unknown); ``cancelled`` when it was cancelled;
- ``tasks/update`` answers the form as a retry's ``inputResponses`` answer a question (declining
  cancels a question and denies an approval); it is refused for a task that asks nothing;
- ``tasks/cancel`` is `Dispatcher.cancel_pending`: a running call is told at once and the answer
  does not wait for its end (a call that ended stays as it ended).

Every ``tasks/*`` request must declare the extension (``-32021`` otherwise), name a task this
server handed out (``-32602`` otherwise; the ``_meta`` record's handle is not one), and carry an
``Mcp-Name`` header, when it sends one, equal to its ``taskId`` (``-32020``). The extension is
said at the handshake and in ``server/discover``.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from tinytools._results import ToolResult
from tinytools.providers.mcp._handed import HandedCall

__all__ = ["POLL_INTERVAL_MS", "task_created", "task_now"]

POLL_INTERVAL_MS = 500
"""How often a client is told to poll a task, in milliseconds."""
INTERNAL_ERROR = -32603
"""The JSON-RPC code of a task that failed for the server's reasons (a crash, an outcome unknown)."""


def task_created(handle: str, handed: HandedCall, result: ToolResult) -> dict[str, Any]:
    """The answer to a ``tools/call`` whose call goes on as a task."""
    return {"resultType": "task", **_task(handle, handed, result, "working")}


def task_now(
    handle: str, handed: HandedCall, result: ToolResult, written: dict[str, Any], asking: dict[str, Any] | None
) -> dict[str, Any]:
    """The answer to ``tasks/get``: where the call of ``handle`` stands.

    ``result`` is the call's result now (``written``: as ``tools/call`` would answer it), and
    ``asking`` the ``input_required`` answer that asks the client what it waits for, if it asks.
    """
    if result.status == "pending":
        if asking is not None:
            return {"resultType": "complete", **_task(handle, handed, result, "input_required"), **_asked(asking)}
        return {"resultType": "complete", **_task(handle, handed, result, "working")}
    error = result.error
    if error is not None and error.code == "cancelled":
        return {"resultType": "complete", **_task(handle, handed, result, "cancelled")}
    if result.status == "outcome_unknown" or (error is not None and "error_id" in (error.details or {})):
        failure = {"code": INTERNAL_ERROR, "message": result.text()}  # the server's failure, not the tool's answer
        return {"resultType": "complete", **_task(handle, handed, result, "failed"), "error": failure}
    return {"resultType": "complete", **_task(handle, handed, result, "completed"), "result": written}


def _asked(asking: dict[str, Any]) -> dict[str, Any]:
    return {"inputRequests": asking["inputRequests"]}


def _task(handle: str, handed: HandedCall, result: ToolResult, status: str) -> dict[str, Any]:
    if handed.status != status:
        handed.status, handed.updated = status, time.time()
    task: dict[str, Any] = {
        "taskId": handle,
        "status": status,
        "createdAt": _iso(handed.created),
        "lastUpdatedAt": _iso(handed.updated),
        "ttlMs": max(0, int((handed.expires_at - handed.created) * 1000)),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if status == "working" and result.pending is not None:
        task["statusMessage"] = result.pending.request.message
    elif status == "cancelled":
        task["statusMessage"] = result.text()  # a call cancelled while it ran may have acted: it says so
    return task


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).isoformat().replace("+00:00", "Z")
