"""The libraries compared by `run.py`, each behind the same small adapter.

Every adapter gets the same tool bodies, generated from one source text per tool so each
library sees a fresh function (no library can reuse a cache keyed on the function object):

- tinytools gets plain ``def`` functions with `Param` constraints;
- the pydantic-based peers get ``pydantic.Field`` constraints, and the peers whose call path is
  async (the OpenAI Agents SDK, pydantic-ai, FastMCP) get ``async def`` functions, because all
  three run a plain ``def`` tool in a worker thread and that hop would swamp their overhead.

An adapter answers four questions: how to run one call on its per-call path (valid and
invalid), how to define one tool until it is ready to serve (schema exported, one valid call
made, so any lazily compiled validator is compiled), how to build and export many tools, and
which statement imports it. A peer that is not installed is skipped.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "ADAPTERS",
    "INVALID",
    "VALID",
    "Adapter",
    "available_adapters",
    "make_functions",
]

decode = msgspec.json.decode
encode = msgspec.json.encode

VALID = {
    "one": '{"query": "rust agents"}',
    "seven": '{"query": "rust agents", "language": "en", "limit": 10, "mode": "fast", "page": 2,'
    ' "tags": ["a", "b", "c"], "region": "us"}',
}
"""Arguments as the model sends them: JSON text."""

INVALID = {
    "one": '{"query": 42}',
    "seven": '{"query": "rust agents", "language": "en", "limit": 1000, "mode": "fast", "page": 2,'
    ' "tags": ["a", "b", "c"], "region": "us"}',
}
"""One wrong argument each: a number for a string; ``limit`` above its maximum of 100."""

SOURCES = {
    "one": '''
{prefix}def {name}(query: str) -> dict:
    """Search the documents.

    Args:
        query: What to look for.
    """
    return {{"query": query, "hits": 3}}
''',
    "seven": '''
{prefix}def {name}(
    query: str,
    language: str,
    limit: Annotated[int, {marker}(ge=1, le=100)],
    mode: Literal["fast", "thorough"],
    page: int | None = None,
    tags: list[str] | None = None,
    region: str = "eu",
) -> dict:
    """Search the documents.

    Args:
        query: What to look for.
        language: ISO 639-1 code of the documents' language.
        limit: How many hits to return.
        mode: How hard to look.
        page: Which page of hits, from 1.
        tags: Only documents with all of these tags.
        region: Where the documents are stored.
    """
    return {{"query": query, "hits": limit}}
''',
}


def make_functions(kind: str, count: int, *, marker: str, is_async: bool, prefix: str = "") -> list[Callable[..., Any]]:
    """``count`` fresh functions named ``{kind}``, or ``{prefix}{kind}_{i}`` when ``prefix`` is given."""
    namespace: dict[str, Any] = {"__name__": "bench_tools", "Annotated": Annotated, "Literal": Literal}
    if marker == "Param":
        from tinytools import Param

        namespace["Param"] = Param
    else:
        from pydantic import Field

        namespace["Field"] = Field
    names = [kind] if count == 1 and not prefix else [f"{prefix}{kind}_{i}" for i in range(count)]
    source = "".join(
        SOURCES[kind].format(prefix="async " if is_async else "", name=name, marker=marker) for name in names
    )
    # dont_inherit: this module's `from __future__ import annotations` must not turn the
    # generated annotations into strings.
    exec(compile(source, f"<{kind} tools>", "exec", dont_inherit=True), namespace)
    return [namespace[name] for name in names]


class Adapter:
    """One library's way of running, defining, building and importing tools."""

    label = ""
    """Row label in the per-call section: the API that is timed."""
    name = ""
    """Row label in the other sections: the library."""
    distribution = ""
    """Installed distribution whose version is reported."""
    module = ""
    """Module that must import for the adapter to run."""
    import_statement = ""
    """What a user writes to get the decorator, timed in a fresh process."""
    marker = "Field"
    is_async = False
    """Whether the tool functions are ``async def`` and define and build are coroutine functions."""
    async_calls = False
    """Whether the per-call operations are coroutine functions."""
    sections = frozenset({"call", "import", "define", "build", "memory"})
    """Sections this adapter takes part in."""
    notes = ""
    """What the reader should know about how this library is driven."""

    def functions(self, kind: str, count: int = 1, prefix: str = "") -> list[Callable[..., Any]]:
        return make_functions(kind, count, marker=self.marker, is_async=self.is_async, prefix=prefix)

    def version(self) -> str:
        return importlib.metadata.version(self.distribution) if self.distribution else ""

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        """The valid and the invalid call of tool ``kind``, each a no-argument callable."""
        raise NotImplementedError

    def start(self) -> Any:
        """A fresh container (toolbox, server...) for `define_ready`."""
        return None

    def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        """Define a seven-argument tool, export its schema, make one valid call; return the tool."""
        raise NotImplementedError

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        """Define every function as a tool and export all their schemas."""
        raise NotImplementedError


class Floor(Adapter):
    label = "floor"
    name = "floor"
    distribution = "msgspec"
    module = "msgspec"
    import_statement = "import msgspec, fastjsonschema, docstring_parser, typing_extensions"
    marker = "Param"
    notes = (
        "per call: msgspec decode, direct call, msgspec encode, no validation; define: read the "
        "signature and type hints, then the same call; import: tinytools' four dependencies"
    )

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        (fn,) = self.functions(kind)
        valid = VALID[kind]

        def floor() -> bytes:
            return encode(fn(**decode(valid)))

        return floor, floor

    def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
        encode(fn(**decode(VALID["seven"])))
        return signature, hints

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        return [(inspect.signature(fn), typing.get_type_hints(fn, include_extras=True)) for fn in fns]


class TinyTools(Adapter):
    label = "tinytools dispatch"
    name = "tinytools"
    distribution = "tinytools"
    module = "tinytools"
    import_statement = "import tinytools"
    marker = "Param"
    notes = "dispatch(ToolCall, Toolbox) -> ToolResult; exported with providers.openai.export_tools"

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from tinytools import Toolbox, ToolCall, dispatch, tool

        made = tool(self.functions(kind)[0])
        box = Toolbox([made])
        good = ToolCall("c1", made.name, VALID[kind])
        bad = ToolCall("c2", made.name, INVALID[kind])
        if dispatch(good, box).status != "succeeded" or dispatch(bad, box).error.code != "invalid_arguments":
            raise AssertionError("tinytools: unexpected outcome")
        return (lambda: dispatch(good, box)), (lambda: dispatch(bad, box))

    def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        from tinytools import Toolbox, ToolCall, dispatch, tool
        from tinytools.providers import openai

        made = tool(fn)
        openai.declaration(made)
        dispatch(ToolCall("c1", made.name, VALID["seven"]), Toolbox([made]))
        return made

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        from tinytools import Toolbox, tool
        from tinytools.providers import openai

        return openai.export_tools(Toolbox([tool(fn) for fn in fns]))


class TinyToolsAsync(TinyTools):
    label = "tinytools adispatch"
    is_async = True  # an async def tool, as the async peers get (a sync tool's thread hop: bench_async.py)
    async_calls = True
    sections = frozenset({"call"})
    notes = "await adispatch(ToolCall, Toolbox) of an async def tool, awaited inside one loop like the async peers"

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from tinytools import Toolbox, ToolCall, adispatch, tool

        made = tool(self.functions(kind)[0])
        box = Toolbox([made])
        good = ToolCall("c1", made.name, VALID[kind])
        bad = ToolCall("c2", made.name, INVALID[kind])
        return (lambda: adispatch(good, box)), (lambda: adispatch(bad, box))


class LangChain(Adapter):
    label = "LangChain @tool"
    name = "LangChain"
    distribution = "langchain-core"
    module = "langchain_core.tools"
    import_statement = "from langchain_core.tools import tool"
    notes = "tool.invoke({name, args, id, type: tool_call}) -> ToolMessage; convert_to_openai_tool"

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from langchain_core.tools import tool
        from pydantic import ValidationError

        made = tool(self.functions(kind)[0])
        name = made.name

        def good() -> Any:
            return made.invoke({"name": name, "args": decode(VALID[kind]), "id": "c1", "type": "tool_call"})

        def bad() -> Any:
            try:
                made.invoke({"name": name, "args": decode(INVALID[kind]), "id": "c2", "type": "tool_call"})
            except ValidationError as exc:
                return str(exc)
            raise AssertionError("LangChain accepted an invalid payload")

        good()
        bad()
        return good, bad

    def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        from langchain_core.tools import tool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        made = tool(fn)
        convert_to_openai_tool(made)
        made.invoke({"name": made.name, "args": decode(VALID["seven"]), "id": "c1", "type": "tool_call"})
        return made

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        from langchain_core.tools import tool
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return [convert_to_openai_tool(tool(fn)) for fn in fns]


class OpenAIAgents(Adapter):
    label = "OpenAI Agents @function_tool"
    name = "OpenAI Agents SDK"
    distribution = "openai-agents"
    module = "agents"
    import_statement = "from agents import function_tool"
    is_async = True
    async_calls = True
    notes = "await tool.on_invoke_tool(ToolContext, json) (tracing disabled); Converter.tool_to_openai"

    def available(self) -> bool:
        if not super().available():
            return False
        from agents import set_tracing_disabled

        set_tracing_disabled(True)
        return True

    @staticmethod
    def _context(made: Any, call_id: str, arguments: str) -> Any:
        from agents.tool_context import ToolContext

        return ToolContext(context=None, tool_name=made.name, tool_call_id=call_id, tool_arguments=arguments)

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from agents import function_tool

        made = function_tool(self.functions(kind)[0])
        valid, invalid = VALID[kind], INVALID[kind]
        good_context = self._context(made, "c1", valid)
        bad_context = self._context(made, "c2", invalid)

        async def good() -> Any:
            return encode(await made.on_invoke_tool(good_context, valid))

        async def bad() -> Any:
            return await made.on_invoke_tool(bad_context, invalid)  # the SDK returns the error text

        return good, bad

    async def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        from agents import function_tool
        from agents.models.chatcmpl_converter import Converter

        made = function_tool(fn)
        Converter.tool_to_openai(made)
        encode(await made.on_invoke_tool(self._context(made, "c1", VALID["seven"]), VALID["seven"]))
        return made

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        from agents import function_tool
        from agents.models.chatcmpl_converter import Converter

        return [Converter.tool_to_openai(function_tool(fn)) for fn in fns]


class PydanticAI(Adapter):
    label = "pydantic-ai Tool"
    name = "pydantic-ai"
    distribution = "pydantic-ai-slim"
    module = "pydantic_ai"
    import_statement = "from pydantic_ai import Tool"
    is_async = True
    async_calls = True
    notes = (
        "await ToolManager.handle_call(ToolCallPart) on a FunctionToolset, the path an agent run "
        "takes per call (validate_json on the tool's args_validator, hooks, call); the retry "
        "text of a ToolRetryError is the invalid row's model-facing text; tool_def exported"
    )

    @staticmethod
    def _context() -> Any:
        from pydantic_ai import RunContext
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.usage import RunUsage

        return RunContext(deps=None, model=TestModel(), usage=RunUsage())

    @staticmethod
    async def _manager(context: Any, tools: list[Any]) -> Any:
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset

        # a retry budget that never runs out, so every invalid call gets the same handling
        return await ToolManager(FunctionToolset(tools, max_retries=10**9)).for_run_step(context)

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        import asyncio

        from pydantic_ai.exceptions import ToolRetryError
        from pydantic_ai.messages import ToolCallPart

        manager = asyncio.run(self._manager(self._context(), self.functions(kind)))
        good_call = ToolCallPart(kind, VALID[kind], tool_call_id="c1")
        bad_call = ToolCallPart(kind, INVALID[kind], tool_call_id="c2")

        async def good() -> Any:
            return encode(await manager.handle_call(good_call))

        async def bad() -> Any:
            try:
                await manager.handle_call(bad_call)
            except ToolRetryError as exc:
                return exc.tool_retry.model_response_str()
            raise AssertionError("pydantic-ai accepted an invalid payload")

        return good, bad

    def start(self) -> Any:
        return self._context()

    async def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        from pydantic_ai import Tool
        from pydantic_ai.messages import ToolCallPart

        made = Tool(fn)
        manager = await self._manager(state, [made])
        manager.tools[made.name].tool_def.parameters_json_schema  # noqa: B018 - the export
        encode(await manager.handle_call(ToolCallPart(made.name, VALID["seven"], tool_call_id="c1")))
        return manager

    async def build(self, fns: list[Callable[..., Any]]) -> Any:
        from pydantic_ai.toolsets import FunctionToolset

        listed = await FunctionToolset(fns).get_tools(self._context())
        return [item.tool_def for item in listed.values()]


class FastMCP(Adapter):
    label = "FastMCP call_tool"
    name = "FastMCP"
    distribution = "fastmcp"
    module = "fastmcp"
    import_statement = "from fastmcp import FastMCP"
    is_async = True
    async_calls = True
    notes = "await server.call_tool(name, arguments) in process; list_tools + to_mcp_tool exported"

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from fastmcp import FastMCP as Server

        server = Server("bench")
        server.tool(self.functions(kind)[0])
        valid, invalid = VALID[kind], INVALID[kind]

        async def good() -> Any:
            return await server.call_tool(kind, decode(valid))

        async def bad() -> Any:
            try:
                await server.call_tool(kind, decode(invalid))
            except Exception as exc:  # fastmcp.exceptions.ValidationError
                return str(exc)
            raise AssertionError("FastMCP accepted an invalid payload")

        return good, bad

    def start(self) -> Any:
        from fastmcp import FastMCP as Server

        return Server("bench")

    async def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        state.tool(fn)
        (await state.get_tool(fn.__name__)).to_mcp_tool()
        return await state.call_tool(fn.__name__, decode(VALID["seven"]))

    async def build(self, fns: list[Callable[..., Any]]) -> Any:
        from fastmcp import FastMCP as Server

        server = Server("bench")
        for fn in fns:
            server.tool(fn)
        return [item.to_mcp_tool() for item in await server.list_tools()]


class ValidateCall(Adapter):
    label = "pydantic.validate_call"
    name = "pydantic.validate_call"
    distribution = "pydantic"
    module = "pydantic"
    import_statement = "from pydantic import validate_call"
    notes = "validate_call(fn)(**decoded) then msgspec encode; it has no tool schema to export"

    def prepare(self, kind: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
        from pydantic import ValidationError, validate_call

        checked = validate_call(self.functions(kind)[0])
        valid, invalid = VALID[kind], INVALID[kind]

        def good() -> Any:
            return encode(checked(**decode(valid)))

        def bad() -> Any:
            try:
                checked(**decode(invalid))
            except ValidationError as exc:
                return str(exc)
            raise AssertionError("validate_call accepted an invalid payload")

        return good, bad

    def define_ready(self, state: Any, fn: Callable[..., Any]) -> Any:
        from pydantic import validate_call

        checked = validate_call(fn)
        encode(checked(**decode(VALID["seven"])))
        return checked

    def build(self, fns: list[Callable[..., Any]]) -> Any:
        from pydantic import validate_call

        return [validate_call(fn) for fn in fns]


ADAPTERS: list[Adapter] = [
    Floor(),
    TinyTools(),
    TinyToolsAsync(),
    LangChain(),
    OpenAIAgents(),
    PydanticAI(),
    FastMCP(),
    ValidateCall(),
]
"""Rows in table order; the floor first."""


def available_adapters() -> tuple[list[Adapter], list[str]]:
    """The adapters that can run here, and the labels of those skipped for a missing install."""
    ready: list[Adapter] = []
    skipped: list[str] = []
    for adapter in ADAPTERS:
        if adapter.available():
            ready.append(adapter)
        else:
            skipped.append(adapter.label)
    return ready, skipped
