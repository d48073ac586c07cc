"""Tools served over stdio by tests/providers/test_mcp_server.py and test_mcp_stdio.py (run as a script).

``asserted``, ``looked_up`` and ``validated`` come from ``tests/faults.py``: each takes a class
whose construction raises, with text that must never reach the client. ``nested`` takes any
JSON value, and ``chatty`` prints to stdout, which must not reach the client's stream.
"""

from __future__ import annotations

from typing import Any

from tests.faults import asserted, looked_up, validated
from tinytools import Toolbox, tool


@tool
def nested(value: Any = None) -> str:
    """Take any JSON value."""
    return "ok"


@tool
def chatty() -> str:
    """Print a stray line to stdout, then answer."""
    print("stray")
    return "said"


toolbox = Toolbox([asserted, looked_up, validated, nested, chatty])

if __name__ == "__main__":
    from tinytools.providers import mcp

    mcp.serve(toolbox, name="tinytools-model-input", version="1.0")
