"""Type checkers see `@tool`'s signature in tinytools as users install it: from the wheel, with py.typed.

The wheel is built from this tree (``pip wheel --no-build-isolation``, with the hatchling of the
test extra, so no network), installed into a fresh virtual environment that has nothing else, and
mypy checks ``tests/typing/check_tool.py`` from a folder outside the tree with that environment's
interpreter: the only tinytools it can find is the installed one. Without the ``py.typed`` marker,
mypy would treat the package as untyped and every check there would fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")
pytest.importorskip("hatchling")

ROOT = Path(__file__).resolve().parents[1]
CHECKS = Path(__file__).with_name("typing") / "check_tool.py"


def run(*command: str | Path, cwd: Path = ROOT) -> None:
    subprocess.run([str(part) for part in command], cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh venv holding only tinytools, installed from a wheel of this tree."""
    work = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", work / "dist")
    (wheel,) = (work / "dist").glob("tinytools-*.whl")
    assert "tinytools/py.typed" in zipfile.ZipFile(wheel).namelist()
    run(sys.executable, "-m", "venv", "--without-pip", work / "venv")
    python = work / "venv" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel)
    return python


def expectations(text: str, marker: str) -> dict[int, str]:
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = re.search(rf"# {marker}: (.*)$", line)
        if match:
            found[number] = match.group(1)
    return found


def test_tool_keeps_the_signature_for_type_checkers_of_the_installed_package(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snippet = tmp_path / "check_tool.py"
    shutil.copy(CHECKS, snippet)
    monkeypatch.chdir(tmp_path)  # no tinytools source on mypy's path, no project config
    monkeypatch.delenv("MYPYPATH", raising=False)
    stdout, stderr, status = api.run(
        [
            str(snippet.name),
            "--python-executable",
            str(installed),
            "--strict",
            "--no-incremental",
            "--show-error-codes",
            "--hide-error-context",
            "--no-error-summary",
        ]
    )
    errors, notes = {}, {}
    for line in stdout.splitlines():
        match = re.match(r"check_tool\.py:(\d+): (error|note): (.*)$", line)
        if match and match.group(2) == "error":
            errors[int(match.group(1))] = match.group(3)
        elif match and match.group(3).startswith("Revealed type"):
            notes[int(match.group(1))] = match.group(3)
    text = CHECKS.read_text()
    assert errors == expectations(text, "E"), stdout + stderr
    assert notes == expectations(text, "N"), stdout + stderr
    assert status == 1
