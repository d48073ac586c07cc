"""tinytools without pydantic: the same schemas and results as with it, and pydantic never imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.schema import plain_defs
from tinytools import Toolbox, ToolCall, dispatch, tool

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
sys.modules["pydantic"] = None  # `import pydantic` now fails, as where it is not installed
from tests.schema import plain_defs
from tinytools import ToolCall, Toolbox, dispatch, tool
tools = {name: tool(fn, name=name, description="d") for name, fn in plain_defs.DEFINITIONS.items()}
out = {}
for name, made in tools.items():
    result = dispatch(ToolCall(id=name, name=name, arguments=plain_defs.CALLS[name]), Toolbox([made]))
    out[name] = [made.input_schema, made.output_schema, result.status, result.output]
out["pydantic loaded"] = sys.modules.get("pydantic") is not None
print(json.dumps(out))
"""


def read_here() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, fn in plain_defs.DEFINITIONS.items():
        made = tool(fn, name=name, description="d")
        result = dispatch(ToolCall(id=name, name=name, arguments=plain_defs.CALLS[name]), Toolbox([made]))
        out[name] = [made.input_schema, made.output_schema, result.status, result.output]
    return json.loads(json.dumps(out))  # type: ignore[no-any-return]


def test_schemas_and_calls_are_the_same_without_pydantic() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    there = json.loads(done.stdout)
    assert there.pop("pydantic loaded") is False
    here = read_here()
    assert there == here
    assert here["search"][2] == "succeeded" and here["search"][3]["level"] == "int"
    assert "$defs" in here["search"][0] and here["half"][3] == 1.5 and here["scaler"][3] == 6.0


def test_the_peer_cases_pass_where_pydantic_is_not_installed(tmp_path: Path) -> None:
    """The ported peer cases, in a process whose site-packages is this one's less pydantic."""
    site = tmp_path / "site-packages"
    site.mkdir()
    packages = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    for entry in packages.iterdir():
        if "pydantic" not in entry.name.lower():
            (site / entry.name).symlink_to(entry)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/schema/test_peer_cases.py"],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": f"{ROOT}{os.pathsep}{site}",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },  # other packages' plugins may need pydantic
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout
