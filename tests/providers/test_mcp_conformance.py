"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) against tinytools.

The suite and Node 22 come from the npm registry, installed once under ``benchmarks/.cache``.
Its server scenarios run against ``tinytools serve-mcp tests/providers/conformance_tools.py
--http`` in a real subprocess; its client scenarios run ``tests/providers/conformance_client.py``
(tinytools' `connect` and a dispatcher) against the suite's own servers. Every scenario of what
tinytools offers is here and must pass. Left out, as features tinytools does not have: resources,
prompts, completions and logging (server), sampling and elicitation asked by a tool mid-call (the
server asks through pending calls instead), resumable SSE streams of stateful sessions, and OAuth
(client). The test skips, saying why, only when npm is missing or the registry cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from .npm import installed
from .servers import HERE, server_env
from .test_mcp_http import serving_cli

SUITE = "@modelcontextprotocol/conformance@0.1.16"
SERVER_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "dns-rebinding-protection",
]
CLIENT_SCENARIOS = ["initialize", "tools_call", "sse-retry"]


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the suite: Node 22 and the suite's script, installed if need be."""
    script = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
    prefix, node = installed("mcp-conformance", [SUITE], script)
    return [str(node), str(prefix / script)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tools = HERE / "conformance_tools.py"
    with serving_cli(tmp_path_factory.mktemp("server") / "stderr.txt", tools=tools) as (url, _):
        yield url


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **server_env(), "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_the_server_passes_the_conformance_scenario(suite: list[str], served: str, scenario: str) -> None:
    ran = _run([*suite, "server", "--url", served, "--scenario", scenario])
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert " 0 failed" in ran.stdout + ran.stderr


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_the_client_passes_the_conformance_scenario(suite: list[str], scenario: str) -> None:
    client = f"{sys.executable} {HERE / 'conformance_client.py'}"
    ran = _run([*suite, "client", "--command", client, "--scenario", scenario])
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "OVERALL: PASSED" in ran.stdout + ran.stderr  # the suite reports client scenarios on stderr
