from __future__ import annotations

import re
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

CHECKS = Path(__file__).with_name("typing") / "check_tool.py"


def test_tool_keeps_the_signature_for_type_checkers() -> None:
    stdout, _, status = api.run(
        [
            str(CHECKS),
            "--strict",
            "--no-incremental",
            "--show-error-codes",
            "--hide-error-context",
            "--no-error-summary",
        ]
    )
    expected = {}
    for number, line in enumerate(CHECKS.read_text().splitlines(), 1):
        match = re.search(r"# E: (.*)$", line)
        if match:
            expected[number] = match.group(1)
    found = {}
    for line in stdout.splitlines():
        match = re.match(r".*check_tool\.py:(\d+): error: (.*)$", line)
        if match:
            found[int(match.group(1))] = match.group(2)
    assert found == expected, stdout
    assert status == 1
