"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) against tinytools.

The suite and Node 22 come from the npm registry, installed once under ``benchmarks/.cache``.
Its server scenarios run against ``tinytools serve-mcp tests/providers/conformance_tools.py
--http`` in a real subprocess; its client scenarios run ``tests/providers/conformance_client.py``
(tinytools' `connect` and a dispatcher) against the suite's own servers. The suite is the one with
scenarios for both protocol revisions: the 2025 handshake, and 2026-07-28's sessionless requests,
questions asked as ``input_required`` and the tasks extension. A scenario runs at the revision the
suite picks for it, or at the one named after ``@``. Every scenario of what tinytools offers is
here; each must pass every check but those named in `NOT_PASSED`, with the reason.

Left out, as features tinytools does not have: resources, prompts, completions, logging and
caching hints on them (server), sampling and roots (either side), two questions asked at once
(``input-required-result-multiple-input-requests``), a tool that requires a task
(``tasks-required-task-error``: a client without the tasks extension is given the pending record
instead), a call that asks and then goes on as a task (``tasks-mrtr-composition``: a question and a
task are each a pending call's whole wait), elicitation asked by a tool mid-call (the server asks
through pending calls instead), and OAuth (client). The test skips, saying why, only when npm is
missing or the registry cannot be reached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .npm import installed
from .servers import HERE, server_env
from .test_mcp_http import serving_cli

VERSION = "0.2.0-alpha.12"
SUITE = f"@modelcontextprotocol/conformance@{VERSION}"
TOOL_SCENARIOS = [
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
]
"""The scenarios of both revisions: each runs at 2025-11-25 and at 2026-07-28."""
SERVER_SCENARIOS = [
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    *TOOL_SCENARIOS,
    *(f"{scenario}@2026-07-28" for scenario in TOOL_SCENARIOS),
    "server-sse-polling",
    "server-sse-multiple-streams",
    "server-sse-multiple-streams@2026-07-28",
    "json-schema-2020-12",
    "json-schema-2020-12@2026-07-28",
    "dns-rebinding-protection",
    "http-header-validation",
    "http-custom-header-server-validation",
    "server-stateless",
    "input-required-result-basic-elicitation",
    "input-required-result-request-state",
    "input-required-result-multi-round",
    "input-required-result-result-type",
    "input-required-result-tampered-state",
    "input-required-result-unsupported-methods",
    "input-required-result-validate-input",
    "input-required-result-missing-input-response",
    "input-required-result-ignore-extra-params",
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-mrtr-input",
]
CLIENT_SCENARIOS = [
    "initialize",
    "tools_call",
    "tools_call@2026-07-28",
    "sse-retry",
    "request-metadata",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "sep-2322-client-request-state",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "json-schema-2020-12-preservation@2026-07-28",
]
NOT_PASSED = {
    # its fixture tool needs sampling, which tinytools does not offer
    "server-stateless": {"sep-2575-server-rejects-undeclared-capability", "sep-2575-missing-capability-http-400"},
    # two questions at once: a tinytools call asks one question at a time
    "tasks-mrtr-input": {"tasks-mrtr-partial-fulfillment"},
    # answers sent with no requestState: an answer is taken only for a question the server asked (the
    # state names it), or a client could answer an approval before it was asked; the suite's SHOULD
    "input-required-result-ignore-extra-params": {"sep-2322-ignore-unexpected-params"},
}
"""Checks of a listed scenario that do not pass, and why; every other check must."""


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the suite: Node 22 and the suite's script, installed if need be."""
    script = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
    prefix, node = installed(f"mcp-conformance-{VERSION}", [SUITE], script)
    return [str(node), str(prefix / script)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tools = HERE / "conformance_tools.py"
    with serving_cli(tmp_path_factory.mktemp("server") / "stderr.txt", tools=tools) as (url, _):
        yield url


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **server_env(), "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=180, env=env)


def _chosen(scenario: str) -> list[str]:
    """The suite's arguments that choose ``scenario``, at the revision named after ``@`` if one is."""
    name, _, revision = scenario.partition("@")
    return ["--scenario", name, *(["--spec-version", revision] if revision else [])]


def _not_passed(results: Path) -> set[str]:
    """The ids of the checks the suite wrote to ``results`` that failed or warned."""
    checks = [check for path in results.glob("*/checks.json") for check in json.loads(path.read_text())]
    assert checks, f"the suite wrote no checks under {results}"
    return {check["id"] for check in checks if check["status"] in ("FAILURE", "WARNING")}


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_the_server_passes_the_conformance_scenario(
    suite: list[str], served: str, scenario: str, tmp_path: Path
) -> None:
    ran = _run([*suite, "server", "--url", served, *_chosen(scenario), "-o", str(tmp_path)])
    assert _not_passed(tmp_path) == NOT_PASSED.get(scenario, set()), ran.stdout[-3000:] + ran.stderr[-2000:]


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_the_client_passes_the_conformance_scenario(suite: list[str], scenario: str, tmp_path: Path) -> None:
    client = f"{sys.executable} {HERE / 'conformance_client.py'}"
    ran = _run([*suite, "client", "--command", client, *_chosen(scenario), "-o", str(tmp_path)])
    assert _not_passed(tmp_path) == NOT_PASSED.get(scenario, set()), ran.stdout[-3000:] + ran.stderr[-2000:]
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]  # and every call the client made succeeded
