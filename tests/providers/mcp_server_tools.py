"""Tools served over stdio by tests/providers/test_mcp_server.py (run as a script)."""

from __future__ import annotations

from typing import Any, Literal

from tinytools import Progress, Toolbox, ToolError, ToolPolicy, tool


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


@tool(policy=ToolPolicy.classified().with_side_effects(["writes_files", "destructive"]))
def wipe(path: str) -> str:
    """Pretend to delete a path."""
    return f"wiped {path}"


@tool(policy=ToolPolicy.read_only().with_side_effects(["network"]))
async def crawl(pages: int, progress: Progress) -> int:
    """Pretend to crawl pages, reporting progress."""
    for page in range(1, pages + 1):
        progress.progress(page, total=pages, message=f"page {page}")
    return pages


toolbox = Toolbox([get_weather, add, liar, wipe, crawl])

if __name__ == "__main__":
    from tinytools.providers import mcp

    mcp.serve(toolbox, name="tinytools-test", version="1.0")
