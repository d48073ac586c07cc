from __future__ import annotations

import subprocess
import sys

import pytest

import tinytools


def test_all_matches_what_the_package_exposes() -> None:
    public = {name for name in dir(tinytools) if not name.startswith("_")}  # names loaded on first use too
    modules = {name for name in public if type(getattr(tinytools, name)).__name__ == "module"}
    assert set(tinytools.__all__) == public - modules
    constants_first = sorted(tinytools.__all__, key=lambda name: (not name.isupper(), name))  # as ruff sorts it
    assert tinytools.__all__ == constants_first


def test_dir_of_a_public_package_lists_the_names_it_loads_on_first_use() -> None:
    import tinytools.executors

    for package in (tinytools, tinytools.executors):
        assert set(package.__all__) <= set(dir(package)), package.__name__


PUBLIC_MODULES = {
    "tinytools",
    "tinytools.policy",
    "tinytools.formats",
    "tinytools.executors",
    "tinytools.providers",
    "tinytools.providers.openai",
    "tinytools.providers.openai_responses",
    "tinytools.providers.anthropic",
    "tinytools.providers.gemini",
    "tinytools.providers.mcp",
    "tinytools.postgres",
    "tinytools.dbos",
}
"""What a user imports; every other module is marked internal by a leading underscore in its path."""


def _modules() -> list[str]:
    import pkgutil

    return ["tinytools"] + [info.name for info in pkgutil.walk_packages(tinytools.__path__, "tinytools.")]


def test_every_module_is_public_or_marked_internal() -> None:
    unmarked = [
        name
        for name in _modules()
        if name not in PUBLIC_MODULES
        and name != "tinytools.__main__"
        and not any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert unmarked == [], f"modules neither public nor marked internal: {unmarked}"
    assert all(name in _modules() for name in PUBLIC_MODULES)


def test_every_public_name_reports_a_public_module() -> None:
    import importlib
    import inspect

    internal = []
    for module_name in sorted(PUBLIC_MODULES):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ not in PUBLIC_MODULES:
                internal.append(f"{module_name}.{name} ({obj.__module__})")
    assert internal == [], f"public names that say they live in an internal module: {internal}"


def test_public_classes_still_read_their_annotations() -> None:
    import msgspec

    result = tinytools.ToolResult(call_id="c", name="t", status="succeeded", output={"a": 1})
    assert msgspec.json.decode(result.to_json(), type=tinytools.ToolResult) == result
    assert (
        tinytools.ToolResult.__module__ == "tinytools"
        and repr(tinytools.Dispatcher) == "<class 'tinytools.Dispatcher'>"
    )


def test_every_module_declares_all() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(tinytools.__path__, "tinytools."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        assert hasattr(module, "__all__"), info.name


def test_import_loads_no_optional_package() -> None:
    code = (
        "import sys, tinytools\n"
        "optional = ('pydantic', 'openai', 'anthropic', 'mcp', 'google', 'annotated_types', 'rich', 'tqdm', 'psycopg',"
        " 'opentelemetry', 'dbos')\n"
        "bad = [m for m in optional if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_leaves_what_a_first_use_needs_for_that_use() -> None:
    """The validator's code generator, the docstring reader, strict mode and asyncio load when used."""
    code = (
        "import sys, tinytools\n"
        "later = ('fastjsonschema', 'docstring_parser', 'tinytools._schema.strict_mode', 'tinytools._schema.codegen',"
        " 'asyncio')\n"
        "print(','.join(m for m in later if m in sys.modules))\n"
        "@tinytools.tool\n"
        "def f(x: int) -> int:\n"
        "    '''Double.\n\n    Args:\n        x: A number.\n    '''\n"
        "    return 2 * x\n"
        "assert tinytools.dispatch(tinytools.ToolCall('c', 'f', '{\"x\": \"no\"}'), [f]).status == 'failed'\n"
        "print(','.join(m for m in ('fastjsonschema', 'docstring_parser') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["", "fastjsonschema,docstring_parser"]


SUBSYSTEMS = (
    "sqlite3", "socket", "hmac", "hashlib", "logging", "json", "pathlib",
    "tinytools._run.sqlite_journal", "tinytools._run.journal_stage", "tinytools._run.pending_calls",
    "tinytools._run.handles", "tinytools._search", "tinytools._exports", "tinytools.formats",
    "tinytools.providers", "tinytools.executors._pools", "tinytools.executors._placement",
    "tinytools._schema.patterns", "tinytools._schema.backtracking", "tinytools._schema.anchors",
    "copy", "dataclasses", "ipaddress", "urllib.parse",
)  # fmt: skip
"""What a plain ``@tool`` + ``dispatch`` program never needs: journals, pending calls, search, exports, formats...

and the standard modules only some tools' types need (dataclasses, addresses, a mutable default's copies).

(A batch needs asyncio, which brings ``socket`` and ``logging`` with it.)"""

PLAIN_PROGRAM = '''
import sys, tinytools
from tinytools import Dispatcher, ToolCall, Toolbox, dispatch, tool

@tool
def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b

tools = Toolbox([add])
assert dispatch(ToolCall("c1", "add", '{"a": 2}'), tools).output == 3
run = Dispatcher(tools, on_event=lambda event: None)
assert run.dispatch(ToolCall("c2", "add", '{"a": 1, "b": 2}')).output == 3
'''


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nprint(','.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.strip().splitlines()[-1].split(","))


def test_a_plain_program_loads_no_subsystem() -> None:
    loaded = _loaded_after(PLAIN_PROGRAM)
    assert not loaded & set(SUBSYSTEMS)
    assert not {name for name in loaded if name.startswith(("tinytools.providers.", "tinytools.formats."))}


@pytest.mark.parametrize(
    ("first_use", "loads"),
    [
        ("tinytools.SQLiteJournal(':memory:')", {"sqlite3", "tinytools._run.sqlite_journal"}),
        ("Dispatcher(tools, journal=tinytools.MemoryJournal())", {"tinytools._run.journal_stage", "hmac"}),
        ("run.pending()", {"tinytools._run.journal_stage"}),
        ("run.expire()", {"tinytools._run.pending_calls"}),
        ("tools.search('add')", {"tinytools._search"}),
        ("tools.fingerprint()", {"tinytools._exports", "hashlib"}),
        ("dispatch(ToolCall('c9', 'add', '{\"a\": [1]}'), tools)", {"json"}),
        ("from tinytools.formats import render_tools; render_tools(tools)", {"tinytools.formats"}),
        (
            "tinytools.Tool.from_schema('p', 'P.', {'type': 'object', 'properties': "
            "{'s': {'type': 'string', 'pattern': '^a'}}, 'additionalProperties': False}, lambda s: s)",
            {"tinytools._schema.patterns", "tinytools._schema.backtracking"},
        ),
    ],
    ids=["sqlite", "journal", "inbox", "expiry", "search", "fingerprint", "invalid-call", "formats", "pattern"],
)
def test_each_subsystem_loads_on_its_first_use(first_use: str, loads: set[str]) -> None:
    before = _loaded_after(PLAIN_PROGRAM)
    after = _loaded_after(PLAIN_PROGRAM + first_use + "\n")
    assert loads <= after - before


def test_arguments_errors_survive_pickle_and_copy() -> None:
    import copy
    import pickle

    from tinytools._errors import schema_failure

    made = [
        tinytools.ArgumentsError("bad", pointer="/x", keyword="type", parameter="x"),
        tinytools.ArgumentsError(reason="bad", pointer="/x"),
        schema_failure("bad", "/x", "maximum", "x", {"type": "integer"}),
    ]
    for error in made:
        for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
            assert type(again) is tinytools.ArgumentsError and again.args == ("bad",)
            assert (again.reason, again.pointer, again.parameter) == (error.reason, error.pointer, error.parameter)
            assert str(again) == str(error)


def _every_public_error() -> list[BaseException]:
    from tinytools.executors import ExecutorError, RemoteToolError

    return [
        tinytools.InjectionError(tool="t", parameter="p", key="k"),
        tinytools.TransferError(tool="t", parameter="p", executor="process", reason="r", injected=True),
        tinytools.ToolNotFound("serch", ["search"], "search"),
        tinytools.PendingError("m", code="bad_handle", pointer="/x"),
        ExecutorError("worker_lost", "the worker died", may_have_acted=True),
        RemoteToolError("ValueError", "bad", "Traceback ..."),
        tinytools.ToolDefinitionError("bad", tool="t", parameter="p"),
        tinytools.NeedsInput("Which?", {"type": "string"}, ttl=3, state="s", name="n"),
        tinytools.ToolError("m", code="c"),
    ]


@pytest.mark.parametrize("error", _every_public_error(), ids=lambda error: type(error).__name__)
def test_every_error_survives_pickle_and_copy_with_its_attributes(error: BaseException) -> None:
    # a worker process's error reaches its parent pickled: a constructor with required
    # keywords must not stop it (the pool reported a broken process instead)
    import copy
    import pickle

    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(again) is type(error) and again.args == error.args
        assert vars(again) == vars(error) and str(again) == str(error)


def test_the_run_packages_docstring_names_every_module_of_it() -> None:
    from pathlib import Path

    import tinytools._run as run

    folder = Path(run.__file__).parent
    unnamed = [p.stem for p in folder.glob("*.py") if p.stem != "__init__" and f"`{p.stem}`" not in (run.__doc__ or "")]
    assert unnamed == [], f"modules of tinytools._run its docstring does not name: {unnamed}"
