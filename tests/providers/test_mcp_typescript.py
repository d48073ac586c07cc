"""The TypeScript MCP SDKs against tinytools: their clients against ``serve-mcp``, their servers under `connect`.

The SDKs are the npm registry's: v1 (``@modelcontextprotocol/sdk``, the 2025 handshake) and v2
(``@modelcontextprotocol/client`` and ``server``, the 2026-07-28 protocol). A TypeScript client
(``typescript/client.mjs``) lists the tools of ``tinytools serve-mcp`` over HTTP and over stdio,
makes a valid, an invalid and a progress-reporting call, then aborts a ten-minute call and
reads, on the same open connection, that the tool saw its token set. A TypeScript server
(``typescript/server.mjs``) is consumed by `connect`, whose dispatcher checks arguments against
the server's schema before sending them, reads results back and forwards progress.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tinytools import Dispatcher, ToolCall, ToolStarted
from tinytools.providers.mcp import connect

from .npm import installed
from .servers import HERE, server_env
from .test_mcp_http import TOOLS, serving_cli

PACKAGES = [
    "@modelcontextprotocol/sdk@1.32.2",
    "@modelcontextprotocol/client@2.4.0",
    "@modelcontextprotocol/server@2.4.0",
]
SCRIPTS = HERE / "typescript"


@pytest.fixture(scope="module")
def node() -> tuple[Path, Path]:
    """The install folder (the scripts copied in, so their imports resolve there) and Node 22."""
    prefix, node = installed("mcp-typescript", PACKAGES, "node_modules/@modelcontextprotocol/server/package.json")
    for script in SCRIPTS.glob("*.mjs"):
        shutil.copy(script, prefix / script.name)
    return prefix, node


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_cli(tmp_path_factory.mktemp("server") / "stderr.txt") as (url, _):
        yield url


def _client(node: tuple[Path, Path], *args: str) -> dict[str, Any]:
    prefix, binary = node
    env = {**os.environ, **server_env()}
    ran = subprocess.run(
        [str(binary), str(prefix / "client.mjs"), *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return dict(json.loads(ran.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("sdk", ["v1", "v2"])
def test_a_typescript_client_lists_calls_and_cancels(
    node: tuple[Path, Path], served: str, sdk: str, transport: str
) -> None:
    target = [served] if transport == "http" else [sys.executable, "-m", "tinytools", "serve-mcp", str(TOOLS)]
    seen = _client(node, sdk, transport, *target)
    assert seen["tools"][:3] == ["get_weather", "greet", "count"]
    assert seen["weather"]["structuredContent"] == {"city": "Oslo", "temperature": 21.5, "unit": "c"}
    assert seen["invalid"]["isError"] is True
    assert "argument 'unit' at /unit" in seen["invalid"]["content"][0]["text"]
    assert seen["count"]["structuredContent"] == {"result": sdk}
    steps = [f"{sdk} {step}" for step in (1, 2, 3)]
    # in order; the v1 client over stdio may drop a notification that comes just before its answer
    assert len(seen["heard"]) >= 2 and seen["heard"] == steps[: len(seen["heard"])]
    assert seen["running"]["now"] == seen["before"]["now"] + 1
    assert seen["abandoned"] == "aborted"
    assert seen["after"] == {"now": seen["before"]["now"], "cancelled": seen["before"]["cancelled"] + 1}
    assert seen["end"] == {"result": "cancelled"}  # the tool saw its token set while the client was connected


async def _consume(node: tuple[Path, Path], sdk: str) -> tuple[Any, list[Any], list[Any]]:
    prefix, binary = node
    heard: list[Any] = []

    async def on_event(event: Any) -> None:
        heard.append(event)

    async with connect([str(binary), str(prefix / "server.mjs"), sdk]) as box:
        dispatcher = Dispatcher(box, on_event=on_event)
        calls = [
            ToolCall("c1", "add", {"a": 2, "b": 3}),
            ToolCall("c2", "add", {"a": "2", "b": 3}),  # refused here, before anything is sent
            ToolCall("c3", "shout", {"text": "hi"}),
            ToolCall("c4", "fail", {}),
        ]
        results = [await dispatcher.adispatch(call) for call in calls]
        return box, results, heard


@pytest.mark.parametrize("sdk", ["v1", "v2"])
def test_a_typescript_server_is_consumed_under_local_enforcement(node: tuple[Path, Path], sdk: str) -> None:
    async def bounded() -> tuple[Any, list[Any], list[Any]]:
        with anyio.fail_after(60):
            return await _consume(node, sdk)

    box, (added, refused, shouted, failed), heard = anyio.run(bounded)
    assert box.names == ["add", "shout", "fail"] and box.protocol_version
    assert (added.status, added.output) == ("succeeded", {"sum": 5})
    assert (refused.status, refused.error.code, refused.error.details["pointer"]) == (
        "failed",
        "invalid_arguments",
        "/a",
    )
    assert (shouted.status, shouted.output) == ("succeeded", "HI")
    assert (failed.status, failed.error.code) == ("failed", "remote_error")
    assert "refused fail" in failed.error.message
    started = [event.call_id for event in heard if isinstance(event, ToolStarted)]
    assert started == ["c1", "c3", "c4"]  # the refused call never started, so nothing was sent
