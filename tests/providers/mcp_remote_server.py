"""An MCP server tinytools did not write: the `mcp` SDK's low-level `Server`, for the client tests.

Run as ``python mcp_remote_server.py CALLS_FILE`` (stdio) or ``... CALLS_FILE --http PORT``
(streamable HTTP on 127.0.0.1, served by uvicorn). Every call that reaches a tool appends one
JSON line ``{"tool", "arguments"}`` to CALLS_FILE, and a cancelled ``sleep`` appends
``{"cancelled": "sleep"}``, so the tests see what the server received. The server does no input
validation of its own (no ``get_tool_input_schema``): whatever is checked, the client checked.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

OPEN = {"type": "object", "properties": {"note": {"type": "string"}}, "additionalProperties": True}
NUMBER = {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}
EMPTY: dict[str, Any] = {"type": "object"}

TOOLS = [
    types.Tool(
        name="add",
        description="Add two integers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    ),
    types.Tool(name="weather", description="Weather, structured.", input_schema=EMPTY, output_schema=NUMBER),
    types.Tool(
        name="bad_output",
        description="Breaks its output schema.",
        input_schema=EMPTY,
        output_schema=NUMBER,
    ),
    types.Tool(name="fail", description="Always fails.", input_schema=EMPTY),
    types.Tool(
        name="sleep",
        description="Sleep a while.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(name="loose", description="Takes anything.", input_schema=OPEN),
    types.Tool(name="steps", description="Reports progress.", input_schema=EMPTY),
    types.Tool(name="pid", description="The server's process id.", input_schema=EMPTY),
    types.Tool(name="files.read", description="A name tinytools cannot use.", input_schema=EMPTY),
]


def record(entry: dict[str, Any]) -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as calls:
        calls.write(json.dumps(entry) + "\n")


def text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=value)]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    # two pages, so the client must follow the cursor
    if params is None or params.cursor is None:
        return types.ListToolsResult(tools=TOOLS[:3], next_cursor="page-2")
    return types.ListToolsResult(tools=TOOLS[3:])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, arguments = params.name, params.arguments or {}
    record({"tool": name, "arguments": arguments})
    if name == "add":
        return types.CallToolResult(content=text(str(arguments["a"] + arguments["b"])))
    if name == "weather":
        return types.CallToolResult(content=text("the text twin"), structured_content={"t": 21.5})
    if name == "bad_output":
        return types.CallToolResult(content=text("hot"), structured_content={"t": "hot"})
    if name == "fail":
        return types.CallToolResult(content=text("the disk is full"), is_error=True)
    if name == "sleep":
        try:
            await anyio.sleep(arguments["seconds"])
        except anyio.get_cancelled_exc_class():
            record({"cancelled": "sleep"})
            raise
        return types.CallToolResult(content=text("slept"))
    if name == "pid":
        return types.CallToolResult(content=text(str(os.getpid())))
    if name == "steps":
        for done in range(1, 4):
            await ctx.session.report_progress(done, 3, f"step {done}")
        return types.CallToolResult(content=text("done"))
    return types.CallToolResult(content=text(json.dumps(arguments, sort_keys=True)))


server = Server("remote-test", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if "--http" in sys.argv:
        import uvicorn

        port = int(sys.argv[sys.argv.index("--http") + 1])
        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
    else:
        anyio.run(main)
