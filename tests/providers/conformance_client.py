"""tinytools' MCP client as the official conformance suite runs it: ``python conformance_client.py URL``.

The suite names its scenario in ``MCP_CONFORMANCE_SCENARIO`` and serves it at ``URL``. The client
connects (`connect` negotiates as it does for any server), lists the tools and calls each through
a dispatcher, which checks the arguments against the server's schema first: ``add_numbers`` with
two numbers, any other tool with none. Any failure exits non-zero.
"""

from __future__ import annotations

import asyncio
import os
import sys

from tinytools import ToolCall, adispatch
from tinytools.providers.mcp import connect


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    failed = 0
    async with connect(url, open_timeout=20) as box:
        print(f"{scenario}: tools {box.names}")
        for number, made in enumerate(box):  # each tool: add_numbers with two numbers, the others with none
            arguments = {"a": 5, "b": 3} if made.name == "add_numbers" else {}
            result = await adispatch(ToolCall(f"c{number}", made.name, arguments), box)
            print(made.name, result.status, result.text())
            failed += result.is_error
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
