"""A bare MCP server over stdio, written line by line: it answers what no SDK server would send.

Run as ``python mcp_raw_server.py``. It answers ``initialize`` and ``tools/list`` (``ask`` and
``ask_bare``), and answers every ``tools/call`` with the protocol's own waiting result: a ``CallToolResult`` whose
``resultType`` is ``input_required`` (with an empty content for ``ask``, none at all for
``ask_bare``, which no SDK reads as a result).
"""

from __future__ import annotations

import json
import sys


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        })  # fmt: skip
    elif method == "tools/list":
        tools = [{"name": name, "inputSchema": {"type": "object"}} for name in ("ask", "ask_bare")]
        answer(request_id, {"tools": tools})
    elif method == "tools/call":
        waiting = {"resultType": "input_required", "inputRequests": {}, "requestState": "s"}
        answer(request_id, {**waiting, "content": []} if message["params"]["name"] == "ask" else waiting)
    else:
        answer(request_id, {})
