"""The MCP server scripts the provider tests start, the environment they start in, `serving_http`, `run_within`.

A server subprocess gets ``PYTHONPATH`` pointing at the tinytools this process imported and at
this checkout, so it runs the same code and can import the ``tests`` package.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

import tinytools

HERE = Path(__file__).resolve().parent
TOOLS_SERVER = HERE / "mcp_server_tools.py"
"""Serves the weather, arithmetic, policy and progress tools of the server tests."""
MODEL_INPUT_SERVER = HERE / "mcp_model_input_server.py"
"""Serves the conversion-fault tools of ``tests/faults.py``, ``nested`` and ``chatty``."""
TINYTOOLS_ROOT = str(Path(tinytools.__file__).resolve().parent.parent)
"""Where the tinytools under test lives."""
CHECKOUT = str(HERE.parent.parent)
"""The folder that holds the ``tests`` package."""
WATCHDOG = 10.0
"""Seconds a call may run before the test fails instead of waiting on."""


def server_env() -> dict[str, str]:
    """The environment variables a server subprocess needs on top of its own."""
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys([TINYTOOLS_ROOT, CHECKOUT]))}


@contextlib.contextmanager
def serving_http(argv: list[str], *extra: str) -> Iterator[str]:
    """Run ``argv`` (a server script and its arguments) over HTTP on a free port; yield its MCP endpoint.

    The script is started as ``argv --http PORT extra...`` and killed at the end.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [sys.executable, *argv, "--http", str(port), *extra]
    process = subprocess.Popen(command, env={**os.environ, **server_env()})
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(10)


def run_within(function: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``anyio.run`` of ``function(*args)``, failed after a minute rather than hung."""

    async def within() -> Any:
        with anyio.fail_after(60):
            return await function(*args)

    return anyio.run(within)
