"""Shared fixtures: the schema cases loaded with and without future annotations."""

from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path

import pytest

CASES = Path(__file__).with_name("cases.py")
_counter = itertools.count()


def load_module(source: str, *, future: bool) -> types.ModuleType:
    """Execute ``source`` as a fresh, importable module, optionally under future annotations."""
    name = f"tinytools_case_{next(_counter)}"
    module = types.ModuleType(name)
    module.__file__ = str(CASES)
    sys.modules[name] = module
    prefix = "from __future__ import annotations\n" if future else ""
    exec(compile(prefix + source, str(CASES), "exec", dont_inherit=True), module.__dict__)
    return module


@pytest.fixture(params=["plain", "future"], scope="session")
def cases(request: pytest.FixtureRequest) -> types.ModuleType:
    """tests/cases.py, once as written and once with ``from __future__ import annotations``."""
    return load_module(CASES.read_text(), future=request.param == "future")


@pytest.fixture(params=["plain", "future"])
def define(request: pytest.FixtureRequest):
    """Define tools from a source snippet, with and without future annotations."""

    def run(source: str) -> types.ModuleType:
        header = "from typing import *\nfrom tinytools import *\nimport dataclasses, enum, datetime\n"
        return load_module(header + source, future=request.param == "future")

    return run
