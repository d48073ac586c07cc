"""Shared fixtures: the schema cases loaded with and without future annotations."""

from __future__ import annotations

import itertools
import sys
import types
from collections.abc import Iterator
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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server's DSN: the one CI started, else one of our own for the session."""
    import os

    from tests.postgres_server import DSN_ENV, ThrowawayServer, server_binaries

    given = os.environ.get(DSN_ENV)
    if given:
        yield given
        return
    binaries = server_binaries()
    if binaries is None:
        pytest.skip(f"these tests need PostgreSQL: install Debian's postgresql package, or set {DSN_ENV}")
    server = ThrowawayServer(binaries)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(postgres_server: str) -> str:
    """A DSN of a schema of this test's own, on the session's server."""
    from tests.postgres_server import schema_dsn

    return schema_dsn(postgres_server)
