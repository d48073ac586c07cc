"""tinytools without pydantic: the same schemas and results as with it, and pydantic never imported."""

from __future__ import annotations

import json
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
