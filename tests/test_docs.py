"""The docs' code runs as written, the site builds, and the Guarantees page names tests that exist.

Every ```python block of a page (README.md, and every page under docs/) runs, in order, in one
namespace of that page's own: a later block may use what an earlier one of the same page defined,
and each page defines its own stand-ins (the weather service, a scripted model). A line
``--8<-- "file"`` in a block is pymdownx.snippets' include, as the site renders it: the named file
under docs/snippets/ is the block's code there. A block whose first line is ``# not run: <reason>``
needs what a test cannot have (an API key, a cluster); it is compiled, its imports of tinytools
are run, and each call it makes of a tinytools module (``adapter.export_tools(toolbox,
strict=True)``) must name a function that takes those arguments. New pages and blocks are picked
up as they are written.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import os
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.test_public_api import PUBLIC_MODULES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SNIPPETS = DOCS / "snippets"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
GUARANTEES = (DOCS / "guarantees.md").read_text(encoding="utf-8")
NAMED = re.findall(r"^- `(tests/[\w/]+\.py)::(test_\w+)`$", GUARANTEES, re.MULTILINE)

BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)
NOT_RUN = re.compile(r"\A# not run: (\S.*)$", re.MULTILINE)
MOST_NOT_RUN = 3
"""How many blocks of the whole site may be left unrun; past that the docs are not showing code that runs."""


def name_of(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def included(name: str) -> Path:
    """The file a snippet include names, looked up where mkdocs.yml's ``base_path`` says: docs/snippets/, then ."""
    return next((folder / name for folder in (SNIPPETS, ROOT) if (folder / name).is_file()), SNIPPETS / name)


def expand(source: str) -> str:
    """The block as the site shows it: each snippet include replaced by the file it names."""
    return INCLUDE.sub(lambda match: included(match.group(1)).read_text(encoding="utf-8").rstrip("\n"), source)


def blocks(page: Path) -> list[tuple[int, str]]:
    """Every python block of a page, with the line it starts on, includes expanded."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, match.start(1)) + 1, expand(match.group(1))) for match in BLOCK.finditer(text)]


def tinytools_imports(source: str) -> str:
    """The block's ``import``/``from ... import`` statements that name tinytools."""
    tree = ast.parse(source)
    kept = [
        node
        for node in tree.body
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tinytools"))
        or (isinstance(node, ast.Import) and any(alias.name.startswith("tinytools") for alias in node.names))
    ]
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def check_library_calls(source: str, namespace: dict[str, Any], where: str) -> int:
    """Every ``module.function(...)`` call on a tinytools module exists and takes those arguments.

    Returns how many calls were checked.
    """
    checked = 0
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        module = namespace.get(owner.id) if isinstance(owner, ast.Name) else None
        if not (isinstance(module, types.ModuleType) and module.__name__.startswith("tinytools")):
            continue
        function = getattr(module, node.func.attr, None)
        assert callable(function), f"{where}: {module.__name__} has no {node.func.attr}"
        keywords = {keyword.arg: None for keyword in node.keywords if keyword.arg is not None}
        try:
            inspect.signature(function).bind(*[None] * len(node.args), **keywords)
        except TypeError as exc:
            pytest.fail(f"{where}: {module.__name__}.{node.func.attr}(...) as the docs call it: {exc}")
        checked += 1
    return checked


PAGES_WITH_CODE = [page for page in PAGES if blocks(page)]


def test_the_site_shows_code_and_little_that_does_not_run() -> None:
    found = [(page, line, source) for page in PAGES for line, source in blocks(page)]
    assert len(found) >= 40
    skipped = [f"{name_of(page)}:{line}" for page, line, source in found if NOT_RUN.match(source)]
    assert len(skipped) <= MOST_NOT_RUN, skipped


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=name_of)
def test_every_python_block_of_a_page_runs_in_order(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a page that writes a file (a journal, a database) writes it here
    module = types.ModuleType("page")  # a page's blocks run as the code of one module, as a reader pastes them
    sys.modules["page"] = module
    printed = io.StringIO()
    try:
        for line, source in blocks(page):
            where = f"{name_of(page)}:{line}"
            reason = NOT_RUN.match(source)
            code = compile(source, where, "exec", dont_inherit=True)
            if reason:
                imported: dict[str, Any] = {}
                exec(compile(tinytools_imports(source), where, "exec", dont_inherit=True), imported)
                check_library_calls(source, imported, where)
                continue
            with contextlib.redirect_stdout(printed), warnings.catch_warnings():
                warnings.simplefilter("error")  # a reader's copy should not warn either
                try:
                    exec(code, module.__dict__)
                except Exception as exc:
                    pytest.fail(f"the block at {where} raised {exc!r}")
    finally:
        del sys.modules["page"]


def test_snippet_includes_name_files_that_exist() -> None:
    named = {match for page in PAGES for match in INCLUDE.findall(page.read_text(encoding="utf-8"))}
    assert named
    assert all(included(name).is_file() for name in named), named


REFERENCE_PAGE = {
    "tinytools": "tinytools",
    "tinytools.policy": "policy",
    "tinytools.providers": "providers",
    "tinytools.providers.openai": "providers",
    "tinytools.providers.openai_responses": "providers",
    "tinytools.providers.anthropic": "providers",
    "tinytools.providers.gemini": "providers",
    "tinytools.providers.mcp": "mcp",
    "tinytools.formats": "formats",
    "tinytools.executors": "executors",
    "tinytools.postgres": "postgres",
    "tinytools.dbos": "dbos",
}
"""Which page of the API reference documents each public module."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``mkdocs build --strict`` makes it: a broken link, include or reference fails the build."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def test_the_site_builds_strictly_and_lists_every_page(site: Path) -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert pages == set(re.findall(r": ([\w/-]+\.md)$", nav, re.MULTILINE))
    assert (site / "index.html").is_file()


def test_the_reference_documents_every_public_name_and_nothing_internal(site: Path) -> None:
    assert set(REFERENCE_PAGE) == PUBLIC_MODULES
    for module_name, page in REFERENCE_PAGE.items():
        shown = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        anchors = set(re.findall(r'id="(tinytools[\w.]*)"', shown))
        module = importlib.import_module(module_name)
        missing = [name for name in module.__all__ if f"{module_name}.{name}" not in anchors]
        assert not missing, (module_name, missing)
        internal = sorted(anchor for anchor in anchors if "._" in anchor)
        assert not internal, (module_name, internal[:5])


def test_every_promise_names_tests_and_every_test_named_exists() -> None:
    promises = re.split(r"^## ", GUARANTEES, flags=re.MULTILINE)[1:]
    assert len(promises) >= 20
    unproved = [promise.splitlines()[0] for promise in promises if not re.search(r"^- `tests/", promise, re.MULTILINE)]
    assert not unproved
    assert len(NAMED) >= 100
    missing = [
        f"{path}::{name}"
        for path, name in NAMED
        if not (ROOT / path).is_file()
        or re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(encoding="utf-8"), re.MULTILINE) is None
    ]
    assert not missing


def test_calls_of_adapters_in_unrun_blocks_are_checked() -> None:
    imported: dict[str, Any] = {}
    exec("from tinytools.providers import anthropic as adapter", imported)
    assert check_library_calls("adapter.export_tools(toolbox, cache_control={})", imported, "here") == 1
    with pytest.raises(pytest.fail.Exception, match="unexpected keyword argument 'caching'"):
        check_library_calls("adapter.export_tools(toolbox, caching=True)", imported, "here")
    with pytest.raises(AssertionError, match="has no export"):
        check_library_calls("adapter.export(toolbox)", imported, "here")
