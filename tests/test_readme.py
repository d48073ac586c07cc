"""The README's code runs as written, and its Guarantees table names tests that exist.

Every ```python block of README.md runs, in order, in one namespace: a later block may use what an
earlier one defined (the README defines its own stand-ins, such as the weather service). A block
whose first line is ``# not run: <reason>`` needs what a test cannot have (an API key, a
cluster); it is compiled, its imports of tinytools are run, and each call it makes of a
tinytools module (``adapter.export_tools(toolbox, strict=True)``) must name a function that
takes those arguments. New blocks are picked up as they are written.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Guarantees") : README.index("## Providers")]
LEGEND = dict(re.findall(r"`([A-Z]{1,2})`\s+(?:is\s+)?`(tests/[\w/]+\.py)`", SECTION))
NAMED = re.findall(r"`([A-Z]{1,2})::(test_\w+)`", SECTION)

BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"\A# not run: (\S.*)$", re.MULTILINE)
MOST_NOT_RUN = 3
"""How many blocks may be left unrun; past that the README is not showing code that runs."""


def blocks() -> list[tuple[int, str]]:
    """Every python block, with the README line it starts on."""
    return [(README.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in BLOCK.finditer(README)]


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
            pytest.fail(f"{where}: {module.__name__}.{node.func.attr}(...) as the README calls it: {exc}")
        checked += 1
    return checked


def test_the_readme_has_python_blocks_and_few_that_do_not_run() -> None:
    found = blocks()
    assert len(found) >= 10
    skipped = [line for line, source in found if NOT_RUN.match(source)]
    assert len(skipped) <= MOST_NOT_RUN, skipped


def test_every_python_block_runs_in_order() -> None:
    module = types.ModuleType("readme")  # blocks run as the code of one module, as a reader pastes them
    sys.modules["readme"] = module
    printed = io.StringIO()
    try:
        for line, source in blocks():
            reason = NOT_RUN.match(source)
            code = compile(source, f"README.md:{line}", "exec", dont_inherit=True)
            if reason:
                imported: dict[str, Any] = {}
                exec(compile(tinytools_imports(source), f"README.md:{line}", "exec", dont_inherit=True), imported)
                check_library_calls(source, imported, f"README.md:{line}")
                continue
            with contextlib.redirect_stdout(printed), warnings.catch_warnings():
                warnings.simplefilter("error")  # a reader's copy should not warn either
                try:
                    exec(code, module.__dict__)
                except Exception as exc:
                    pytest.fail(f"the block at README.md:{line} raised {exc!r}")
    finally:
        del sys.modules["readme"]


def test_the_legend_names_files_that_exist() -> None:
    assert len(LEGEND) >= 10
    missing = [path for path in LEGEND.values() if not (ROOT / path).is_file()]
    assert not missing


def test_every_test_the_table_names_is_defined_where_the_legend_says() -> None:
    assert len(NAMED) >= 40
    sources = {key: (ROOT / path).read_text(encoding="utf-8") for key, path in LEGEND.items()}
    missing = [
        f"{key}::{name}"
        for key, name in NAMED
        if key not in sources or re.search(rf"^(async )?def {name}\(", sources[key], re.MULTILINE) is None
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
