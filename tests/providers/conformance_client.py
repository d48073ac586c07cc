"""tinytools' MCP client as the official conformance suite runs it: ``python conformance_client.py URL``.

The suite names its scenario in ``MCP_CONFORMANCE_SCENARIO``, may hand calls to make in
``MCP_CONFORMANCE_CONTEXT`` (``toolCalls``), and serves the scenario at ``URL``. The client connects
(`connect` negotiates as it does for any server, and keeps only the tools it can call), lists the
tools and calls each through a dispatcher, which checks the arguments against the server's schema
first, as an application's model would:

- with the arguments the context gives for it (a ``null`` is left out as not given: tinytools
  refuses a null for a boolean, so a model's call would not carry it either);
- ``add_numbers`` with two numbers; ``json_schema_echo`` with the input schema of the server's
  other tool, as this client holds it (the suite checks what the client kept of it);
- any other tool with an example of each argument its schema names.

A server's question (a pending call of kind ``input``) is answered with an example of its form
and the call resumed, as an application answers for its user. Any failure exits non-zero.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from tinytools import Dispatcher, MemoryJournal, ToolCall
from tinytools.providers.mcp import connect

EXAMPLES: dict[str, Any] = {"string": "yes", "integer": 1, "number": 1.5, "boolean": True}


def example(schema: dict[str, Any] | None, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A value for ``schema``: an object fills each of its properties (a form's, a tool's arguments)."""
    schema, root = schema or {}, root or schema or {}
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/") and depth < 8:
        return example(root["$defs"][ref.removeprefix("#/$defs/")], root, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type", "object") == "object":
        properties = schema.get("properties", {})
        return {name: example(part, root, depth + 1) for name, part in properties.items()}
    return EXAMPLES.get(schema.get("type"), "yes")


def arguments_for(name: str, given: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if name in given:
        return {key: value for key, value in given[name].items() if value is not None}
    if name == "add_numbers":
        return {"a": 5, "b": 3}
    if name == "json_schema_echo":
        return {"schema": next(schema for other, schema in schemas.items() if other != name)}
    arguments: dict[str, Any] = example(schemas[name])
    return arguments


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    given = {call["name"]: call.get("arguments", {}) for call in context.get("toolCalls", [])}
    failed = 0
    async with connect(url, open_timeout=20) as box:
        print(f"{scenario}: tools {box.names}")
        run = Dispatcher(box, journal=MemoryJournal(), signing_key="conformance client")
        schemas = {made.name: made.input_schema for made in box}
        for number, made in enumerate(box):
            call = ToolCall(f"c{number}", made.name, arguments_for(made.name, given, schemas))
            result = await run.adispatch(call)
            while result.pending is not None and result.pending.kind == "input":  # the server asks; answer it
                print(made.name, "asks", result.pending.request.message)
                answer = example(result.pending.request.schema)
                result = await run.aresume(result.pending.handle, answer)
            print(made.name, result.status, result.text())
            failed += result.is_error or result.pending is not None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
