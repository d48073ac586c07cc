"""Model Context Protocol: ``tools/list`` entries, ``tools/call`` requests and results, a server.

``serve(toolbox)`` runs a toolbox as an MCP server over stdio with the official ``mcp``
package (``pip install "tinytools[mcp]"``); ``tinytools serve-mcp TARGET`` does the same from
the command line. Every ``tools/call`` goes through the dispatcher, so validation, policies and
budgets apply as they do anywhere else.

A tool's ``outputSchema`` and ``structuredContent`` follow one rule: an output that is a JSON
object is the structured content as it is; any other output is wrapped as ``{"result": ...}``
(MCP before 2026-07-28 takes objects only). A tool whose declared output may be either is
listed without an ``outputSchema``. Output that does not match the declared schema is answered
with ``isError`` and code ``invalid_output`` instead of reaching the client.

Tool annotations carry what the tool's policy declares (``readOnlyHint``, ``destructiveHint``,
``idempotentHint``, ``openWorldHint``), and a tool's `Progress` reaches a client that asked for
progress as MCP progress notifications.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from tinytools.errors import SchemaError
from tinytools.events import ToolEvent, ToolProgress
from tinytools.policy import SideEffect
from tinytools.providers._common import arguments, field, require, result_text, sequence
from tinytools.results import StructuredError, ToolCall, ToolResult
from tinytools.run.dispatcher import Dispatcher
from tinytools.schema.validation import compile_validator
from tinytools.tool import Tool
from tinytools.toolbox import Toolbox

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = [
    "AsyncDispatcher",
    "aserve",
    "build_server",
    "export_tools",
    "read_calls",
    "serve",
    "tool_annotations",
    "write_results",
]


class AsyncDispatcher(Protocol):
    """Anything that runs one call from async code, such as a `Dispatcher`."""

    def adispatch(self, call: ToolCall, /) -> Awaitable[ToolResult]:
        """Run one call and return its result."""
        ...


class _Output:
    """How one tool's output is declared and checked (built once per tool)."""

    __slots__ = ("check", "schema")

    def __init__(self, schema: dict[str, Any] | None, check: Callable[[object], None] | None):
        self.schema = schema
        self.check = check


_OUTPUTS: weakref.WeakKeyDictionary[Tool[..., Any], _Output] = weakref.WeakKeyDictionary()


def export_tools(tools: Iterable[Tool[..., Any]]) -> list[dict[str, Any]]:
    """The ``tools`` of a ``tools/list`` result, in MCP's wire shape (camelCase keys).

    Args:
        tools: A `Toolbox` or any iterable of tools.
    """
    listed = []
    for tool in tools:
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        output = _output(tool).schema
        if output is not None:
            entry["outputSchema"] = output
        entry["annotations"] = tool_annotations(tool)
        listed.append(entry)
    return listed


def tool_annotations(tool: Tool[..., Any]) -> dict[str, bool]:
    """MCP tool annotations from the tool's policy.

    What an unclassified tool leaves out, a client assumes at its worst (possibly destructive,
    open world).
    """
    policy = tool.policy
    hints = {"idempotentHint": bool(tool.idempotent or policy.runtime.idempotent)}
    if policy.is_classified:
        effects = policy.side_effects
        read_only = effects <= {SideEffect.READ_ONLY}
        hints["readOnlyHint"] = read_only
        if not read_only:
            hints["destructiveHint"] = SideEffect.DESTRUCTIVE in effects
        hints["openWorldHint"] = bool(effects & {SideEffect.NETWORK, SideEffect.EXTERNAL_SERVICE})
    return hints


def _output(tool: Tool[..., Any]) -> _Output:
    cached = _OUTPUTS.get(tool)
    if cached is None:
        schema = _output_schema(tool.output_schema)
        try:
            check = None if schema is None else compile_validator(schema)
        except SchemaError:
            schema = check = None
        cached = _OUTPUTS[tool] = _Output(schema, check)
    return cached


def _output_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The declared output as MCP lists it: an object as is, anything else as ``{"result"}``."""
    if schema is None:
        return None
    defs = schema.get("$defs", {})
    body = {k: v for k, v in schema.items() if k != "$defs"}
    ref = body.get("$ref", "")
    if set(body) == {"$ref"} and ref.startswith("#/$defs/"):
        target = defs.get(ref[8:])
        if isinstance(target, dict) and target.get("type") == "object":
            body = target
    if body.get("type") == "object":
        return {**body, "$defs": defs} if defs else body
    if _is_object(body, defs, set()) is not False:
        return None  # may or may not be an object: the wrapping would depend on the value
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": body}, "required": ["result"]}
    return {**wrapped, "$defs": defs} if defs else wrapped


def _is_object(schema: Any, defs: Mapping[str, Any], seen: set[str]) -> bool | None:
    """True if every value ``schema`` accepts is an object, False if none is, None if unsure."""
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return True if kinds == ["object"] else (None if "object" in kinds else False)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return False if not any(isinstance(value, dict) for value in values) else None
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/") and ref not in seen:
        return _is_object(defs.get(ref[8:]), defs, seen | {ref})
    if "anyOf" in schema:
        answers = {_is_object(branch, defs, seen) for branch in schema["anyOf"]}
        return answers.pop() if len(answers) == 1 else None
    return None


def read_calls(request: Any) -> list[ToolCall]:
    """The calls in ``tools/call`` requests (JSON-RPC dicts, their params, or SDK objects).

    The JSON-RPC id becomes the call id (``mcp-<index>`` when there is none).
    """
    calls = []
    for index, item in enumerate(sequence(request)):
        params = field(item, "params") or item
        request_id = field(item, "id")
        call_id = f"mcp-{index}" if request_id is None else str(request_id)
        sent = field(params, "arguments")
        calls.append(ToolCall(call_id, str(field(params, "name") or ""), arguments({} if sent is None else sent)))
    return calls


def write_results(results: Iterable[ToolResult]) -> list[dict[str, Any]]:
    """One ``CallToolResult`` per result (camelCase keys), in order.

    The text content is `ToolResult.text`. ``structuredContent`` is `ToolResult.structured`
    when the model reads the output itself: as it is when it is an object, else as
    ``{"result": output}``. A result whose content stands in for its output (a summary, a stored
    output's note) has none. Failures set ``isError``.
    """
    written = []
    for result in results:
        payload: dict[str, Any] = {"content": [{"type": "text", "text": result_text(result)}]}
        if result.is_error:
            payload["isError"] = True
        else:
            if result.content is None:
                output = result.structured()
                payload["structuredContent"] = output if isinstance(output, dict) else {"result": output}
            payload["isError"] = False
        written.append(payload)
    return written


def _checked(result: ToolResult, tool: Tool[..., Any] | None) -> ToolResult:
    """Refuse output that does not match the declared schema, which the client would reject."""
    if tool is None or result.is_error:
        return result
    check = _output(tool).check
    output = result.output
    try:
        if check is not None:
            check(output if isinstance(output, dict) else {"result": output})
    except ValueError:
        message = f"Tool {tool.name!r} returned output that does not match its declared output schema."
        error = StructuredError("invalid_output", message)
        return ToolResult(
            call_id=result.call_id, name=result.name, status="failed", error=error, elapsed=result.elapsed
        )
    return result


def build_server(
    toolbox: Iterable[Tool[..., Any]],
    *,
    dispatcher: AsyncDispatcher | None = None,
    name: str = "tinytools",
    version: str | None = None,
    instructions: str | None = None,
) -> Server[Any]:
    """An MCP server (``mcp.server.lowlevel.Server``) that lists and calls the tools.

    Args:
        toolbox: The tools to list (a `Toolbox` or any iterable of tools).
        dispatcher: Runs each call (``adispatch(call)``), such as a configured
            `Dispatcher`; by default ``Dispatcher(toolbox)``.
        name: The server name reported to clients.
        version: The server version reported to clients (by default tinytools' own).
        instructions: Optional instructions for the client's model.

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    lowlevel = require("mcp.server.lowlevel", "mcp")
    types = require("mcp.types", "mcp")
    tools = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)
    listed = types.ListToolsResult(tools=[types.Tool.model_validate(entry) for entry in export_tools(tools)])
    routes: dict[str, tuple[Any, Any, Any]] = {}  # call id -> (session, progress token, request id)

    async def report(event: ToolEvent) -> None:
        route = routes.get(event.call_id)
        if route is not None and isinstance(event, ToolProgress):
            session, token, request_id = route
            await session.send_progress_notification(
                token, event.done, event.total, event.message, related_request_id=request_id
            )

    run = (dispatcher if dispatcher is not None else Dispatcher(tools, on_event=report)).adispatch

    async def list_tools(context: Any, params: Any) -> Any:
        return listed

    async def call_tool(context: Any, params: Any) -> Any:
        request_id = getattr(context, "request_id", None)
        call = ToolCall("mcp" if request_id is None else str(request_id), params.name, params.arguments or {})
        token = _progress_token(context, params)
        if token is not None:
            routes[call.id] = (context.session, token, request_id)
        try:
            result = _checked(await run(call), tools.get(call.name))
        finally:
            routes.pop(call.id, None)
        return types.CallToolResult.model_validate(write_results([result])[0])

    server: Server[Any] = lowlevel.Server(
        name,
        version=_version() if version is None else version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def _progress_token(context: Any, params: Any) -> Any:
    """The client's progress token for this request, if it asked for progress."""
    raw = getattr(context, "params", None)
    meta = raw.get("_meta") if isinstance(raw, Mapping) else None
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    if token is None:
        meta_object = getattr(context, "meta", None) or getattr(params, "meta", None)
        token = getattr(meta_object, "progress_token", None) or getattr(meta_object, "progressToken", None)
    return None if isinstance(token, bool) else token


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tinytools")
    except PackageNotFoundError:
        return ""


async def aserve(toolbox: Iterable[Tool[..., Any]], **options: Any) -> None:
    """Serve the tools over stdio until the client disconnects (options as `build_server`).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    stdio = require("mcp.server.stdio", "mcp")
    server = build_server(toolbox, **options)
    async with stdio.stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(toolbox: Iterable[Tool[..., Any]], **options: Any) -> None:
    """Run the tools as an MCP server over stdio, blocking until the client disconnects.

    Options are those of `build_server` (``dispatcher``, ``name``, ``version``,
    ``instructions``).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    anyio = require("anyio", "mcp")
    anyio.run(partial(aserve, toolbox, **options))
