"""An MCP server that tests its client's limits: the `mcp` SDK's low-level `Server`, one behaviour per run.

Run as ``python mcp_hostile_server.py BEHAVIOUR CALLS_FILE`` (stdio) or ``... --http PORT``
(streamable HTTP on 127.0.0.1, served by uvicorn). Every call that reaches a tool appends one
JSON line ``{"tool", "arguments"}`` to CALLS_FILE, so a test sees what the client let through.
The server validates nothing itself. The behaviours:

- ``endless``: ``tools/list`` pages never end (each page one tool and a new cursor);
- ``loop``: the cursors go round, ``a`` then ``b`` then ``a`` again;
- ``crowd``: three pages of 40 tools each;
- ``exploding``: the tool ``deep`` takes ``x``, whose schema is ``LEVELS`` levels of ``anyOf``
  over ten ``$ref`` s to the level below (checking a bad value naively takes 10**LEVELS steps),
  and returns it as structured content under an output schema of the same shape;
- ``silent``: ``tools/list`` never answers;
- ``long_cursor``: the first page's cursor is 100,000 characters;
- ``vendor``: FastMCP's shapes (``x-fastmcp-wrap-result`` on an output schema, ``x-mcp-header``
  on an argument) and tools whose input or output schema alone cannot be enforced here;
- ``anchored``: the tool ``tree`` whose input and output schemas refer to a recursive ``$defs``
  entry by its plain-name ``$anchor``; it returns its ``root`` argument, or a bad tree for ``bad``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

LEVELS = 6
PAGES = 3
PER_PAGE = 40


def exploding(levels: int = LEVELS, fan: int = 10) -> dict[str, Any]:
    """``x`` of type ``L<levels>``, each level ``anyOf`` ``fan`` references to the level below."""
    defs: dict[str, Any] = {"L0": {"type": "integer"}}
    for level in range(1, levels + 1):
        defs[f"L{level}"] = {"anyOf": [{"$ref": f"#/$defs/L{level - 1}"} for _ in range(fan)]}
    return {"type": "object", "properties": {"x": {"$ref": f"#/$defs/L{levels}"}}, "required": ["x"], "$defs": defs}


def plain(name: str, **more: Any) -> types.Tool:
    return types.Tool(name=name, description=f"The tool {name}.", input_schema={"type": "object"}, **more)


ANSWER = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
VENDOR = [
    types.Tool(
        name="wrapped",
        description="A FastMCP tool returning an integer.",
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}, "region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["n"],
        },
        output_schema={**ANSWER, "x-fastmcp-wrap-result": True},
    ),
    types.Tool(  # its output schema counts 'contains' matches, which tinytools cannot enforce
        name="odd_output",
        description="Checked input, an output schema tinytools cannot enforce.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        output_schema={"type": "object", "properties": {"items": {"type": "array", "contains": {}, "minContains": 2}}},
    ),
    types.Tool(  # its input schema counts 'contains' matches; its output schema is plain
        name="odd_input",
        description="An input schema tinytools cannot enforce, a checked output.",
        input_schema={"type": "object", "properties": {"items": {"type": "array", "contains": {}, "maxContains": 1}}},
        output_schema=ANSWER,
    ),
]


NODE = {
    "$anchor": "node",
    "type": "object",
    "properties": {"label": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#node"}}},
    "required": ["label"],
    "additionalProperties": False,
}
ANCHORED = types.Tool(
    name="tree",
    description="Echo a tree of labelled nodes.",
    input_schema={
        "type": "object",
        "properties": {"root": {"$ref": "#node"}, "bad": {"type": "boolean"}},
        "required": ["root"],
        "$defs": {"Node": NODE},
    },
    output_schema={"type": "object", "properties": {"result": {"$ref": "#node"}}, "$defs": {"Node": NODE}},
)


def record(entry: dict[str, Any]) -> None:
    with open(sys.argv[2], "a", encoding="utf-8") as calls:
        calls.write(json.dumps(entry) + "\n")


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    behaviour = sys.argv[1]
    cursor = None if params is None else params.cursor
    if behaviour == "endless":
        page = int(cursor or 0)
        return types.ListToolsResult(tools=[plain(f"t{page}")], next_cursor=str(page + 1))
    if behaviour == "loop":
        return types.ListToolsResult(tools=[plain(f"t{cursor}")], next_cursor="b" if cursor == "a" else "a")
    if behaviour == "crowd":
        page = int(cursor or 0)
        tools = [plain(f"t{page}_{n}") for n in range(PER_PAGE)]
        return types.ListToolsResult(tools=tools, next_cursor=str(page + 1) if page + 1 < PAGES else None)
    if behaviour == "silent":
        await anyio.sleep_forever()
    if behaviour == "long_cursor":
        return types.ListToolsResult(tools=[plain("t")], next_cursor=None if cursor else "c" * 100_000)
    if behaviour == "exploding":
        schema = exploding()
        output = {"type": "object", "properties": {"result": schema["properties"]["x"]}, "$defs": schema["$defs"]}
        return types.ListToolsResult(tools=[types.Tool(name="deep", input_schema=schema, output_schema=output)])
    if behaviour == "anchored":
        return types.ListToolsResult(tools=[ANCHORED])
    return types.ListToolsResult(tools=VENDOR)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    record({"tool": params.name, "arguments": arguments})
    text = [types.TextContent(type="text", text=json.dumps(arguments))]
    if params.name == "deep":
        return types.CallToolResult(content=text, structured_content={"result": arguments.get("x")})
    if params.name == "tree":
        tree = {"label": 1} if arguments.get("bad") else arguments.get("root")
        return types.CallToolResult(content=text, structured_content={"result": tree})
    if params.name == "wrapped":
        return types.CallToolResult(content=text, structured_content={"result": arguments["n"] * 2})
    if params.name == "odd_output":
        return types.CallToolResult(content=text, structured_content={"items": [arguments["n"]]})
    if params.name == "odd_input":  # sends text where its output schema says integer
        return types.CallToolResult(content=text, structured_content={"result": "many"})
    return types.CallToolResult(content=text)


server = Server("hostile-test", on_list_tools=list_tools, on_call_tool=call_tool)


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
