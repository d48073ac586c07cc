"""An MCP server for a toolbox: ``tools/list`` and ``tools/call`` through the dispatcher.

Every ``tools/call`` goes through the dispatcher, so validation, policies and budgets apply as
they do anywhere else. A tool's `Progress`, and each piece a generator tool streams (as a progress
notification whose message is the piece), reach the client that asked for progress, and only
that client: the call id is ``<session>/<request id>``, unique across the server's sessions
(two clients of one server use the same JSON-RPC ids).

Each session gets its own dispatcher (from ``dispatcher_factory``, by default a `Dispatcher`
with the server's ``context`` and ``stores``) and its own injected values (``inject``, see
`tinytools.providers.mcp._sessions`: a factory is called with the session's context when a tool
first needs them, and torn down when the session ends), so a budget or deadline is one
session's, not the server's. A session is what the SDK calls a connection: one per client under
the 2025 protocol (stdio, stateful HTTP), and one per request under the sessionless 2026-07-28
protocol and over stateless HTTP. A sync tool runs on a worker thread, never on the event loop.
A call whose injected value is missing is answered as a failed tool result naming the
parameter (code ``missing_injected_value``), never as a protocol error carrying exception text.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from tinytools._context import RunContext
from tinytools._errors import InjectionError, PendingError
from tinytools._events import ToolEvent, ToolOutputChunk, ToolProgress
from tinytools._public import publish
from tinytools._results import StructuredError, ToolCall, ToolResult
from tinytools._run.artifacts import MemoryArtifactStore
from tinytools._run.dispatcher import Dispatcher
from tinytools._run.failures import missing_value
from tinytools._tool import Tool
from tinytools._toolbox import Toolbox
from tinytools.providers._common import require
from tinytools.providers.mcp._cancellations import Cancellations, Slot, session_key
from tinytools.providers.mcp._handed import TASKS, Handed, abilities
from tinytools.providers.mcp._input_required import answer_of, input_required
from tinytools.providers.mcp._sessions import Inject, SessionContext, SessionValues, request_context
from tinytools.providers.mcp._stdio import stdio_streams
from tinytools.providers.mcp._tasks import task_created, task_now
from tinytools.providers.mcp._wire import check_output, export_tools, lists_output, sent_arguments, write_results

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["AsyncDispatcher", "DispatcherFactory", "Inject", "Service", "aserve", "build_server", "serve"]


class AsyncDispatcher(Protocol):
    """Anything that runs one call from async code, such as a `Dispatcher`."""

    def adispatch(self, call: ToolCall, /, *, inject: Mapping[str, Any] | None = ...) -> Awaitable[ToolResult]:
        """Run one call with the session's injected values and return its result."""
        ...


DispatcherFactory = Callable[..., AsyncDispatcher]
"""Makes one session's dispatcher; called as ``factory(on_event=sink)``, where ``sink`` sends
the session's progress to its client (``functools.partial(Dispatcher, toolbox, limits=...)``)."""

Notify = Callable[[ToolProgress], Awaitable[None]]
"""Sends one call's progress to the client that made it."""


def build_server(
    toolbox: Iterable[Tool[..., Any]],
    *,
    dispatcher: AsyncDispatcher | None = None,
    dispatcher_factory: DispatcherFactory | None = None,
    inject: Inject | None = None,
    context: RunContext | None = None,
    stores: Mapping[str, Any] | None = None,
    name: str = "tinytools",
    version: str | None = None,
    instructions: str | None = None,
    elicit: bool = True,
) -> Server[Any]:
    """An MCP server (``mcp.server.lowlevel.Server``) that lists and calls the tools.

    Args:
        toolbox: The tools to list (a `Toolbox` or any iterable of tools), in their order.
        dispatcher: One dispatcher for every session (its budget and deadline are then the
            server's); progress reaches clients only through its own ``on_event``.
        dispatcher_factory: Makes each session's dispatcher, called as
            ``dispatcher_factory(on_event=sink)``; by default
            ``Dispatcher(toolbox, context=context, stores=stores, artifacts=MemoryArtifactStore(),
            on_event=sink)``: a session's images, audio and resources are kept in its memory for
            the session's life (one request over stateless HTTP), and sent from there.
        inject: Injected values for the served tools: a mapping every session shares, or a
            factory called once per session, when a call first needs them, with its
            `SessionContext` (or with nothing, if it takes no parameter); it returns the mapping,
            or a context manager, or is a generator, whose exit is the session's teardown (see
            `tinytools.providers.mcp._sessions`).
        context: The `RunContext` of the default dispatchers.
        stores: The named stores of the default dispatchers.
        name: The server name reported to clients.
        version: The server version reported to clients (by default tinytools' own).
        instructions: Optional instructions for the client's model.
        elicit: Ask a sessionless (2026-07-28) client that shows forms what a pending call waits
            for: a tool's question, and a deferred approval, which is then the client's user's to
            give (``input_required``; see `tinytools.providers.mcp._input_required`). False
            keeps every pending call the application's to resume (`Dispatcher.pending`), as for
            a 2025 client: its result carries the ``_meta`` record, and no retry can answer it.

    Raises:
        ImportError: The ``mcp`` extra is not installed.
        ValueError: More than one of ``dispatcher``, ``dispatcher_factory`` and
            ``context``/``stores`` says how calls run.
    """
    service = Service(toolbox, dispatcher, dispatcher_factory, inject, context, stores, elicit=elicit)
    return service.server(name, version, instructions)


class Service:
    """What serving a toolbox holds: its tools, their listing, and each session's state.

    `build_server` answers the SDK's requests with it; the HTTP app's lean path answers plain
    stateless requests with the same object, so both run calls alike.
    """

    __slots__ = ("_ending", "cancellations", "elicit", "handed", "listed", "needs_values", "routes", "shared", "tools")

    def __init__(
        self,
        toolbox: Iterable[Tool[..., Any]],
        dispatcher: AsyncDispatcher | None = None,
        dispatcher_factory: DispatcherFactory | None = None,
        inject: Inject | None = None,
        context: RunContext | None = None,
        stores: Mapping[str, Any] | None = None,
        *,
        elicit: bool = True,
    ) -> None:
        self.tools = toolbox if isinstance(toolbox, Toolbox) else Toolbox(toolbox)
        self.listed = export_tools(self.tools)
        self.needs_values = frozenset(tool.name for tool in self.tools if _takes_injected_values(tool))
        """The tools a call of which opens the session's injected values."""
        self.routes = _Routes(_opener(self.tools, dispatcher, dispatcher_factory, context, stores), inject)
        self.cancellations = Cancellations()
        """The calls of stateless HTTP clients now running, which their session key can cancel."""
        self.shared = dispatcher is not None
        """Whether one dispatcher (one run) serves every session."""
        self.elicit = elicit
        """Whether a client that shows forms is asked what a pending call waits for."""
        self._ending: set[asyncio.Future[Any]] = set()
        """Tasks being cancelled: a running call ends in its own time, after ``tasks/cancel`` is answered."""
        self.handed = Handed()
        """The handles of pending calls handed to clients, as a question's ``requestState`` or a ``taskId``."""

    async def call(
        self,
        session: _Session,
        call: ToolCall,
        context: SessionContext,
        notify: Notify | None = None,
        *,
        takes: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """Run one call in the session; its ``CallToolResult`` in MCP's wire shape.

        ``context`` is what the session's inject factory is given, if this call is the first to
        need its values; ``notify`` sends the call's progress to the client that asked for it.
        ``takes`` is what a sessionless client takes (`abilities`): a call that waits is answered
        ``input_required`` for a client that shows ``forms`` (when the server elicits) or as a task
        for one that takes ``tasks``.
        """
        try:
            inject = await session.values.get(context) if call.name in self.needs_values else None
        except Exception:  # the application's inject factory failed: logged, never sent
            return self.fault(call.name, call.id, "opening a session")
        if notify is not None:
            self.routes.open(call.id, notify)
        try:
            result = check_output(await session.run(call, inject=inject), self.tools.get(call.name))
        except InjectionError as exc:
            result = _missing_value(call, exc)
        except Exception:  # an application dispatcher that raised: logged, never sent
            return self.fault(call.name, call.id, "running the call")
        finally:
            if notify is not None:
                self.routes.close(call.id)
        weight = _weight(call.arguments) if result.pending is not None else 0  # what a handed call holds
        return self._written(session.dispatcher, result, takes, weight)

    def _written(
        self, dispatcher: AsyncDispatcher, result: ToolResult, takes: frozenset[str], weight: int = 0
    ) -> dict[str, Any]:
        """A result in MCP's wire shape; a pending one as a question or a task for a client that takes them.

        ``weight`` is about how many bytes the dispatcher keeps for the call (see `Handed`).
        """
        pending = result.pending
        if pending is not None and takes and _resumes(dispatcher):
            asking = input_required(result) if "forms" in takes and self.elicit else None
            if asking is not None:
                self.handed.add(pending.handle, dispatcher, result.name, "question", pending.expires_at, weight)
                return asking
            if "tasks" in takes:
                handed = self.handed.add(pending.handle, dispatcher, result.name, "task", pending.expires_at, weight)
                return task_created(pending.handle, handed, result)
        written = write_results([result], artifacts=getattr(dispatcher, "artifacts", None))[0]
        if result.pending is not None and lists_output(self.tools.get(result.name)):
            written["isError"] = True  # a result that is not an error must carry the structure its tool lists
        return written

    async def answer(
        self,
        session: _Session,
        request: tuple[str, object, object],
        context: SessionContext,
        notify: Notify | None = None,
        *,
        takes: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """Resume the pending call a retry's ``requestState`` names with its ``inputResponses``.

        ``request`` is the retry's tool name, ``requestState`` and ``inputResponses``. The call
        runs in the dispatcher that holds it, with this request's injected values; its result is
        answered as `call` answers (asked again when it waits anew, or when the response is missing
        or does not match the form's schema).

        Raises:
            MCPError: The state is not one this server asked about (or its call ended), or it is
                a call of another tool (``INVALID_PARAMS``).
        """
        name, state, responses = request
        found = self.handed.get(state, "question")
        if found is None or found.tool != name:
            raise _invalid(f"requestState is not a pending call of tool {name!r} that this server asked about")
        dispatcher, weight = found.dispatcher, found.weight
        handle = str(state)
        asks = frozenset({"forms"})  # a retry continues a question: what it asks next is asked as one
        now = await self._polled(handle, found)
        if now.pending is not None and now.pending.handle != handle:  # moved on by another retry
            now = await self._polled(handle, found, wait=True)  # its outcome, waited for while the call runs
        if now.pending is None or now.pending.handle != handle:  # ended, or asks something new
            self.handed.forget(handle)
            return self._written(dispatcher, check_output(now, self.tools.get(name)), asks, weight)
        verdict, value = answer_of(now, responses)
        if verdict == "none":
            return self._written(dispatcher, now, asks, weight)
        if notify is not None:
            self.routes.open(now.call_id, notify)
        try:
            result = await self._resumed(session, dispatcher, now, (verdict, value), context)
        finally:
            if notify is not None:
                self.routes.close(now.call_id)
        if isinstance(result, PendingError):  # the answer does not match the form's schema: asked again, saying why
            if result.code != "invalid_answer":
                raise _invalid(f"the call this requestState names cannot be resumed: {result}")
            request_ = msgspec.structs.replace(now.pending.request, message=f"{result} {now.pending.request.message}")
            again = msgspec.structs.replace(now, pending=msgspec.structs.replace(now.pending, request=request_))
            return self._written(dispatcher, again, asks, weight)
        if isinstance(result, dict):  # the server's own fault, already written
            return result
        self.handed.forget(handle)  # its call ended, or waits again under a new handle
        return self._written(dispatcher, check_output(result, self.tools.get(name)), takes, weight)

    async def _resumed(
        self,
        session: _Session,
        dispatcher: Any,
        now: ToolResult,
        answered: tuple[str, Any],
        context: SessionContext,
    ) -> ToolResult | PendingError | dict[str, Any]:
        """Resume the pending call ``now`` with a client's response (``answered``: see `answer_of`).

        A declined question cancels the call, a declined approval denies it. Returns its result,
        the `PendingError` of a response that cannot resume it (the call stays as it was), or the
        written answer of the server's own fault.
        """
        assert now.pending is not None
        verdict, value = answered
        handle, name = now.pending.handle, now.name
        try:
            if verdict == "declined" and now.pending.kind == "input":
                return await dispatcher.acancel_pending(handle)  # type: ignore[no-any-return]
            if verdict == "declined":
                value = {"approved": False, "reason": "The user declined."}
            inject = await session.values.get(context) if name in self.needs_values else None
            return await dispatcher.aresume(handle, value, inject=inject)  # type: ignore[no-any-return]
        except PendingError as exc:
            return exc
        except InjectionError as exc:
            return _missing_value(ToolCall(now.call_id, name, {}), exc)
        except Exception:  # an application dispatcher that raised: logged, never sent
            return self.fault(name, now.call_id, "resuming the call")

    async def _polled(self, handle: str, handed: Any, *, wait: bool = False) -> ToolResult:
        """Where the call of a handed handle stands; with ``wait``, its outcome once a running call ends.

        Raises:
            MCPError: Its dispatcher no longer knows it (``-32602``).
        """
        try:
            if wait:
                return await handed.dispatcher.aresume(handle)  # type: ignore[no-any-return]
            return await handed.dispatcher.apoll(handle)  # type: ignore[no-any-return]
        except PendingError:
            self.handed.forget(handle)
            raise _invalid(f"The call {handle} names is no longer known to this server") from None

    async def _cancellable(self, slot: Slot, work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """``work`` (a call, or a retry's answer), kept where its client's ``notifications/cancelled`` finds it.

        Raises:
            MCPError: The client cancelled the call (``Request cancelled``, as the lean path answers).
        """
        anyio = require("anyio", "mcp")
        cancelled = require("mcp.shared.exceptions", "mcp").MCPError(code=-32800, message="Request cancelled")
        if self.cancellations.came_first(slot):
            if hasattr(work, "close"):
                work.close()  # never awaited: the client gave it up first
            raise cancelled
        with anyio.CancelScope() as scope:
            running = self.cancellations.start(slot, scope)
            try:
                return await work
            finally:
                self.cancellations.end(slot, running)
        raise cancelled  # only reached when the scope was cancelled: by the client's cancellation

    @staticmethod
    def fault(name: str, call_id: str, doing: str) -> dict[str, Any]:
        """The ``isError`` answer when the server itself failed: logged here, no exception text sent."""
        _logger().exception("MCP call %r to %r: the server failed %s", call_id, name, doing)
        message = f"The server failed while {doing} for tool {name!r}; the call was not answered by the tool."
        error = StructuredError("server_error", message)
        return write_results([ToolResult(call_id=call_id, name=name, status="outcome_unknown", error=error)])[0]

    def server(
        self, name: str = "tinytools", version: str | None = None, instructions: str | None = None
    ) -> Server[Any]:
        """An SDK low-level server answering ``tools/list`` and ``tools/call`` from this service.

        The version reported to clients is by default tinytools' own.
        """
        lowlevel = require("mcp.server.lowlevel", "mcp")
        types = require("mcp.types", "mcp")
        listed = types.ListToolsResult(tools=[types.Tool.model_validate(entry) for entry in self.listed])
        routes = self.routes

        async def list_tools(context: Any, params: Any) -> Any:
            if not self.tools.deferred:
                return listed
            session = routes.session(context)  # a session lists what its searches revealed too
            revealed = session.revealed
            if not revealed:
                return listed
            if session.listing[0] != revealed:
                shown = export_tools(self.tools, revealed=revealed)
                session.listing = revealed, types.ListToolsResult(tools=[types.Tool.model_validate(e) for e in shown])
            return session.listing[1]

        async def call_tool(context: Any, params: Any) -> Any:
            try:
                session = routes.session(context)
            except Exception:  # the application's dispatcher factory failed
                return types.CallToolResult.model_validate(self.fault(params.name, "-", "opening a session"))
            arguments = await _sent_arguments(context) or params.arguments or {}
            call = ToolCall(routes.call_id(session, context), params.name, arguments)
            token = _progress_token(context, params)
            notify = (
                None
                if token is None
                else partial(_notify, context.session, token, getattr(context, "request_id", None))
            )
            before = session.revealed if self.tools.deferred else ()
            sessionless = _sessionless(context)
            if self.tools.deferred and not self.shared and sessionless:
                _reveal_for_one_request(session, self.tools.get(params.name))
            raw = context.params if isinstance(context.params, Mapping) else {}
            takes = abilities(raw.get("_meta")) if sessionless else frozenset()
            held = _session_context(session, context)
            if sessionless and "requestState" in raw:  # a retry answering a question (responses alone answer none)
                work = self.answer(
                    session,
                    (params.name, raw.get("requestState"), raw.get("inputResponses")),
                    held,
                    notify,
                    takes=takes,
                )
            else:
                work = self.call(session, call, held, notify, takes=takes)
            slot = _slot(context)
            # stateless HTTP: the client's cancellation, a request of its own, finds the call by its key
            answer = await (work if slot is None else self._cancellable(slot, work))
            if self.tools.deferred and session.revealed != before:  # a search revealed tools: the list grew
                await _list_changed(context)
            if answer.get("resultType") == "input_required":
                return types.InputRequiredResult.model_validate(answer)
            if answer.get("resultType") == "task":
                return answer  # the extension's shape, which the SDK's models do not know
            return types.CallToolResult.model_validate(answer)

        server: Server[Any] = lowlevel.Server(
            name,
            version=_version() if version is None else version,
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        self._serve_tasks(server)
        if self.tools.deferred:  # a session's list grows as its searches reveal tools: say so at the handshake
            options = partial(server.create_initialization_options, lowlevel.NotificationOptions(tools_changed=True))
            server.create_initialization_options = options  # type: ignore[method-assign]
        return server

    def _serve_tasks(self, server: Server[Any]) -> None:
        """Answer the tasks extension's ``tasks/get``, ``tasks/cancel`` and ``tasks/update`` (see `_tasks`)."""
        requests = require("mcp_types", "mcp")
        pydantic = require("pydantic", "mcp")

        class TaskParams(requests.RequestParams):  # type: ignore[misc,name-defined]
            model_config = pydantic.ConfigDict(populate_by_name=True)
            task_id: str = pydantic.Field(alias="taskId")
            input_responses: dict[str, Any] | None = pydantic.Field(default=None, alias="inputResponses")

        async def get(context: Any, params: Any) -> dict[str, Any]:
            handle, handed, takes = self._task(context, params.task_id)
            now = check_output(await self._polled(handle, handed), self.tools.get(handed.tool))
            written = self._written(handed.dispatcher, now, frozenset()) if now.status != "pending" else {}
            asking = input_required(now) if "forms" in takes and self.elicit else None
            return task_now(handle, handed, now, written, asking)

        async def cancel(context: Any, params: Any) -> dict[str, Any]:
            handle, handed, _ = self._task(context, params.task_id)
            ending = asyncio.ensure_future(handed.dispatcher.acancel_pending(handle))  # a call that ended stays so
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)
            await asyncio.wait({ending}, timeout=CANCEL_WAIT)  # a running call is told at once, and ends in its time
            if ending.done() and isinstance(ending.exception(), PendingError):
                self.handed.forget(handle)
                raise _invalid(f"Task {handle} is no longer known to this server")
            return {"resultType": "complete"}

        async def update(context: Any, params: Any) -> dict[str, Any]:
            handle, handed, _ = self._task(context, params.task_id)
            now = await self._polled(handle, handed)
            if now.pending is None or not self.elicit or input_required(now) is None:
                raise _invalid(f"Task {handle} asks for no input now")
            verdict, value = answer_of(now, params.input_responses)
            if verdict == "none":
                return {"resultType": "complete"}  # no response to what it asks: it asks on
            session = self.routes.new_session(reports=False)  # this request's injected values
            try:
                held = _session_context(session, context)
                result = await self._resumed(session, handed.dispatcher, now, (verdict, value), held)
            finally:
                await session.values.close()
            if isinstance(result, PendingError):
                raise _invalid(f"Task {handle}: {result}")
            return {"resultType": "complete"}

        for method, handler in (("tasks/get", get), ("tasks/cancel", cancel), ("tasks/update", update)):
            server.add_request_handler(method, TaskParams, handler)
        server.extensions[TASKS] = {}

    def _task(self, context: Any, task_id: str) -> tuple[str, Any, frozenset[str]]:
        """The handle and handed call of a ``tasks/*`` request, and what its client takes, once checked.

        Raises:
            MCPError: Not the sessionless protocol (``-32601``), the client did not declare the
                extension (``-32021``), the ``Mcp-Name`` header names another task (``-32020``),
                or the task is not one this server handed out (``-32602``).
        """
        error = require("mcp.shared.exceptions", "mcp").MCPError
        if not _sessionless(context):
            raise error(code=-32601, message="Method not found", data=context.method)
        raw = context.params if isinstance(context.params, Mapping) else {}
        takes = abilities(raw.get("_meta"))
        if "tasks" not in takes:
            message = f"This request is the tasks extension's ({TASKS}); declare it to send it"
            raise error(code=-32021, message=message, data={"requiredCapabilities": {"extensions": {TASKS: {}}}})
        headers = getattr(getattr(context, "request", None), "headers", None)  # over HTTP: the routing header
        named = headers.get("mcp-name") if headers is not None else task_id
        if named is None or require("mcp.shared.inbound", "mcp").decode_header_value(named) != task_id:
            raise error(code=-32020, message="The Mcp-Name header must name the request's taskId")
        handed = self.handed.get(task_id, "task")
        if handed is None:
            raise _invalid(f"Task {task_id[:80]} not found")
        return task_id, handed, takes


class _Session:
    """One client session's number, dispatcher and injected values."""

    __slots__ = ("artifacts", "dispatcher", "listing", "number", "run", "values")

    def __init__(self, number: int, dispatcher: AsyncDispatcher, values: SessionValues):
        self.number = number
        self.dispatcher = dispatcher
        self.run = dispatcher.adispatch
        self.values = values
        self.artifacts = getattr(dispatcher, "artifacts", None)
        """The dispatcher's artifact store: a result's images, audio and resources are sent from it."""
        self.listing: tuple[tuple[str, ...], Any] = ((), None)
        """The revealed tools the session's last listing was made for, and that listing."""

    @property
    def revealed(self) -> tuple[str, ...]:
        """The deferred tools the session's dispatcher revealed (none for a dispatcher that keeps no run)."""
        return tuple(getattr(self.dispatcher, "revealed", ()))


_Opener = Callable[[Callable[[ToolEvent], Awaitable[None]], bool], AsyncDispatcher]
"""Makes a session's dispatcher, given its progress sink and whether a call of it may report progress."""


def _opener(
    tools: Toolbox,
    dispatcher: AsyncDispatcher | None,
    factory: DispatcherFactory | None,
    context: RunContext | None,
    stores: Mapping[str, Any] | None,
) -> _Opener:
    """What a new session gets: its dispatcher, given its progress sink and whether it may report progress."""
    chosen = (dispatcher is not None) + (factory is not None) + (context is not None or stores is not None)
    if chosen > 1:
        raise ValueError("pass one of dispatcher=, dispatcher_factory= and context=/stores=")
    own = factory is None and dispatcher is None
    if own:

        def factory(on_event: Callable[[ToolEvent], Awaitable[None]] | None) -> AsyncDispatcher:
            return Dispatcher(tools, context=context, stores=stores, artifacts=MemoryArtifactStore(), on_event=on_event)

    def open_session(sink: Callable[[ToolEvent], Awaitable[None]], reports: bool) -> AsyncDispatcher:
        if factory is None:
            assert dispatcher is not None  # one of the two, checked above
            return dispatcher
        # with no event reaching anyone, the server's own dispatcher has no sink: it takes its express path
        return factory(on_event=sink if reports or not own else None)

    return open_session


CANCEL_WAIT = 1.0
"""Seconds ``tasks/cancel`` waits for the call to end before answering (a running call ends in its own time)."""


def _resumes(dispatcher: object) -> bool:
    """Whether a dispatcher can resume, poll and cancel its pending calls from async code (a `Dispatcher` can)."""
    return all(hasattr(dispatcher, name) for name in ("aresume", "apoll", "acancel_pending"))


def _weight(arguments: object) -> int:
    """About how many bytes a dispatcher keeps for a pending call with these arguments (three copies, and itself)."""
    size = len(arguments) if isinstance(arguments, bytes | str) else len(msgspec.json.encode(arguments))
    return 3 * size + 65_536


def _invalid(message: str) -> Exception:
    """The JSON-RPC error of a retry whose params cannot be taken (``INVALID_PARAMS``)."""
    error: Exception = require("mcp.shared.exceptions", "mcp").MCPError(code=-32602, message=message)
    return error


def _takes_injected_values(tool: Tool[..., Any]) -> bool:
    """Whether a call of the tool needs the application's injected values (``inject=``)."""
    return any(slot.injection is not None and slot.injection.source == "inject" for slot in tool.slots or ())


def _missing_value(call: ToolCall, exc: InjectionError) -> ToolResult:
    """The server's configuration lacks a value: the client learns which, and nothing else."""
    return msgspec.structs.replace(missing_value(call, exc, 0, holder="the server"), name=call.name, elapsed=0)


def _logger() -> logging.Logger:
    return logging.getLogger("tinytools.mcp")


class _Routes:
    """Each session's state, and which session, progress token and request a running call reports to."""

    __slots__ = ("_count", "_inject", "_open", "_opener", "_pieces", "_sessions")

    def __init__(self, opener: _Opener, inject: Inject | None) -> None:
        self._sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        self._count = itertools.count(1)
        self._open: dict[str, Notify] = {}
        self._pieces: dict[str, int] = {}
        self._opener = opener
        self._inject = inject

    def session(self, context: Any) -> _Session:
        """The state of the request's session, made on its first call.

        Its injected values are torn down when the SDK unwinds the connection's exit stack, at
        the end of the session.
        """
        key = _connection(context)
        state = self._sessions.get(key)
        if state is None:
            state = self._sessions[key] = self.new_session()
            exit_stack = getattr(key, "exit_stack", None)
            if exit_stack is not None:
                exit_stack.push_async_callback(state.values.close)
        return state

    def new_session(self, reports: bool = True) -> _Session:
        """A session of its own, with a number no other session of this server has.

        ``reports=False`` says no call of the session reports progress (a stateless request that
        asked for none): the server's own dispatcher then sends events nowhere. Whoever makes one
        outside `session` closes its values (``session.values.close()``).
        """
        dispatcher = self._opener(self.report, reports)
        values = SessionValues(self._inject)
        return _Session(next(self._count), dispatcher, values)

    @staticmethod
    def call_id(session: _Session, context: Any) -> str:
        """``<session>/<request id>``: JSON-RPC ids are unique within one session only."""
        request_id = getattr(context, "request_id", None)
        return f"{session.number}/{'-' if request_id is None else request_id}"

    def open(self, call_id: str, notify: Notify) -> None:
        self._open[call_id] = notify

    def close(self, call_id: str) -> None:
        self._open.pop(call_id, None)
        self._pieces.pop(call_id, None)

    async def report(self, event: ToolEvent) -> None:
        notify = self._open.get(event.call_id)
        if notify is None:
            return
        if isinstance(event, ToolOutputChunk):  # a streamed piece: a progress notification with its text
            pieces = self._pieces[event.call_id] = self._pieces.get(event.call_id, 0) + 1
            text = event.data if isinstance(event.data, str) else msgspec.json.encode(event.data).decode()
            event = ToolProgress(event.call_id, event.name, event.elapsed, pieces, None, text)
        if isinstance(event, ToolProgress):
            await notify(event)


async def _list_changed(context: Any) -> None:
    """Tell the session's client its tool list changed (a session over the 2026 protocol has no channel for it)."""
    session = getattr(context, "session", None)
    send = getattr(session, "send_tool_list_changed", None)
    if send is None:
        return
    try:
        await send()
    except Exception:  # a notification is advice: a client gone, or a request with no way back, loses nothing
        _logger().debug("could not send tools/list_changed", exc_info=True)


async def _notify(session: Any, token: Any, request_id: Any, event: ToolProgress) -> None:
    """Progress through the SDK, on the stream of the request that made the call."""
    await session.send_progress_notification(
        token, event.done, event.total, event.message, related_request_id=request_id
    )


async def _sent_arguments(context: Any) -> bytes | None:
    """A call's arguments as the client sent them (JSON text), when the transport kept the request.

    Over HTTP the SDK keeps the Starlette request, whose body it read; over stdio,
    `tinytools.providers.mcp._stdio` keeps the line. Text is decoded by the pipeline as strictly
    as any call's, so a repeated key is refused here as in every other way in.
    """
    read = getattr(getattr(context, "request", None), "body", None)
    if read is None:
        return None
    try:
        body = await read()
    except Exception:  # a body that can no longer be read: the SDK's parsed arguments
        return None
    return sent_arguments(body, getattr(context, "request_id", None)) if isinstance(body, bytes) else None


def _session_context(session: _Session, context: Any) -> SessionContext:
    """What the SDK's request context says of the session, for the inject factory."""
    scope = getattr(getattr(context, "request", None), "scope", None)
    return request_context(
        session.number,
        scope if isinstance(scope, Mapping) else None,  # over stdio, the request is a line
        session_id=getattr(_connection(context), "session_id", None),
        protocol_version=getattr(context, "protocol_version", None),
    )


def _sessionless(context: Any) -> bool:
    """Whether the request speaks a protocol with no session (2026-07-28): it is a run of its own."""
    version = getattr(context, "protocol_version", None)
    return isinstance(version, str) and version in require("mcp_types.version", "mcp").MODERN_PROTOCOL_VERSIONS


def _reveal_for_one_request(session: _Session, tool: Tool[..., Any] | None) -> None:
    """Let a sessionless request call a deferred tool: no earlier request's search can have revealed it.

    Under 2026-07-28 every request is a session, so a search's reveal would last only its own
    request and no client could ever call a deferred tool. The listing still leaves deferred tools
    out (the model finds them with the search tool, whose answer shows their schemas); a call to
    one is admitted, and checked against its schema like any other.
    """
    reveal = getattr(session.dispatcher, "reveal", None)
    if tool is not None and tool.defer and reveal is not None:
        reveal([tool.name])


def _slot(context: Any) -> Slot | None:
    """The call as a stateless HTTP client's cancellation names it (its session key, the request id), or None."""
    scope = getattr(getattr(context, "request", None), "scope", None)
    request_id = getattr(context, "request_id", None)
    if not isinstance(scope, Mapping) or not isinstance(request_id, int | str) or isinstance(request_id, bool):
        return None
    key = session_key(dict(reversed(scope.get("headers", []))))
    return None if key is None else (key, request_id)


def _connection(context: Any) -> Any:
    """What stays the same for every request of one client session.

    The SDK makes a ``ServerSession`` per request, over one ``Connection`` per client session
    (per request over stateless HTTP), which the handler context does not expose otherwise.
    """
    session = context.session
    return getattr(session, "_connection", session)


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

    Every request line gets an answer: one the SDK cannot read is answered with a JSON-RPC
    error (see `tinytools.providers.mcp._stdio`).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    server = build_server(toolbox, **options)
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(toolbox: Iterable[Tool[..., Any]], **options: Any) -> None:
    """Run the tools as an MCP server over stdio, blocking until the client disconnects.

    Options are those of `build_server` (``dispatcher``, ``dispatcher_factory``, ``inject``,
    ``context``, ``stores``, ``name``, ``version``, ``instructions``, ``elicit``).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
    """
    anyio = require("anyio", "mcp")
    anyio.run(partial(aserve, toolbox, **options))


publish("tinytools.providers.mcp", AsyncDispatcher, build_server, aserve, serve)
