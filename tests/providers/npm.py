"""Packages from the npm registry for the tests that run real JavaScript peers, with Node 22 beside them.

Each set is installed once under ``benchmarks/.cache/<name>`` (kept between runs, ignored by git);
a test that needs one skips, saying why, only when npm is missing or the registry cannot be reached.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .servers import HERE

CACHE = HERE.parent.parent / "benchmarks" / ".cache"
NODE = "node@22"


def installed(name: str, packages: list[str], marker: str) -> tuple[Path, Path]:
    """The install folder of ``packages`` (and Node 22), and its ``node``; ``marker`` is a file it must hold."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not on this machine: {', '.join(packages)} and Node 22 come from the npm registry")
    prefix = CACHE / name
    node = prefix / "node_modules" / ".bin" / "node"
    if not (node.exists() and (prefix / marker).exists()):
        prefix.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *packages, NODE]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"could not install {', '.join(packages)} from the npm registry: {done.stderr[-500:]}")
    return prefix, node
