"""A bare MCP server over stdio, written line by line: it answers what no SDK server would send.

Run as ``python mcp_raw_server.py``. It answers ``initialize`` and ``tools/list`` (``ask`` and
``ask_bare``), and answers every ``tools/call`` with the protocol's own waiting result: a ``CallToolResult`` whose
``resultType`` is ``input_required`` (with an empty content for ``ask``, none at all for
``ask_bare``, which no SDK reads as a result).

Run as ``python mcp_raw_server.py STARTS REFUSED [linger] [stubborn] [silent]``, it also fails as no SDK
server does on purpose. Each start appends its process id to the file STARTS (a test tells a
restart, and whether a process still runs). REFUSED is the method answered with an error (``*``
every request, ``none`` none). The first start's ``tools/call`` closes its pipes and lingers,
ignoring SIGTERM: its client sees a drop that the SDK takes about 4 s to stop; a later start
answers as above. ``linger``: a thread that is not a daemon keeps the process alive after its
input closes; ``stubborn``: SIGTERM is ignored from the start (the SDK kills it last);
``silent``: a later start reads nothing and answers nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

starts, refused, *options = sys.argv[1:] or ["", "none"]
first = bool(starts) and not os.path.exists(starts)
if starts:
    with open(starts, "a") as file:
        file.write(f"{os.getpid()}\n")


def linger() -> None:
    threading.Thread(target=time.sleep, args=(60,)).start()  # not a daemon: it outlives the server's input


if "linger" in options:
    linger()
if "stubborn" in options:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "silent" in options and starts and not first:
    time.sleep(60)


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def refuse(request_id: object) -> None:
    error = {"code": -32603, "message": "not today"}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if refused in ("*", method):
        refuse(request_id)
    elif method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        })  # fmt: skip
    elif method == "tools/list":
        tools = [{"name": name, "inputSchema": {"type": "object"}} for name in ("ask", "ask_bare")]
        answer(request_id, {"tools": tools})
    elif method == "tools/call" and first:  # dropped: the pipes closed, the process lingering
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        linger()
        os.close(1)
        os.close(0)
        time.sleep(60)
    elif method == "tools/call":
        waiting = {"resultType": "input_required", "inputRequests": {}, "requestState": "s"}
        answer(request_id, {**waiting, "content": []} if message["params"]["name"] == "ask" else waiting)
    else:
        answer(request_id, {})
