"""The stdio MCP server scripts the provider tests start, and the environment they start in.

A server subprocess gets ``PYTHONPATH`` pointing at the tinytools this process imported and at
this checkout, so it runs the same code and can import the ``tests`` package.
"""

from __future__ import annotations

import os
from pathlib import Path

import tinytools

HERE = Path(__file__).resolve().parent
TOOLS_SERVER = HERE / "mcp_server_tools.py"
"""Serves the weather, arithmetic, policy and progress tools of the server tests."""
MODEL_INPUT_SERVER = HERE / "mcp_model_input_server.py"
"""Serves the conversion-fault tools of ``tests/faults.py``, ``nested`` and ``chatty``."""
TINYTOOLS_ROOT = str(Path(tinytools.__file__).resolve().parent.parent)
"""Where the tinytools under test lives."""
CHECKOUT = str(HERE.parent.parent)
"""The folder that holds the ``tests`` package."""
WATCHDOG = 10.0
"""Seconds a call may run before the test fails instead of waiting on."""


def server_env() -> dict[str, str]:
    """The environment variables a server subprocess needs on top of its own."""
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys([TINYTOOLS_ROOT, CHECKOUT]))}
