"""Tools served over stdio by tests/providers/test_mcp_server.py (run as a script)."""

from __future__ import annotations

from typing import Any, Literal

from tinytools import Toolbox, ToolError, tool


@tool(idempotent=True)
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Look up the current weather.

    Args:
        city: City name.
        unit: Temperature unit.
    """
    if city == "Atlantis":
        raise ToolError("no weather station in Atlantis", code="unknown_city")
    return {"city": city, "temperature": 21.5, "unit": unit}


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def liar(x: int) -> int:
    """Declares an integer, returns text."""
    return "not a number"  # type: ignore[return-value]


toolbox = Toolbox([get_weather, add, liar])

if __name__ == "__main__":
    from tinytools.providers import mcp

    mcp.serve(toolbox, name="tinytools-test", version="1.0")
