"""The MCP client: a remote server's tools as a `Toolbox`, enforced here before anything is sent.

``async with connect(target) as toolbox:`` starts (``target`` an argv list, over stdio) or
reaches (an ``http://``/``https://`` URL, over streamable HTTP) one MCP server, opens ONE
session, lists every page of its tools (within ``max_pages`` and ``max_tools``; a cursor that
comes back is refused), and yields a `RemoteToolbox` of them. Each remote tool is an ordinary
`Tool`, so its calls go through the same pipeline as local tools.

- Input: each ``inputSchema`` passes through `InputSchema.parse`, so arguments are validated
  locally with the same repairable errors, and a bad call never reaches the server. A root
  object that does not say ``additionalProperties`` is closed (the model is shown the closed
  schema it is held to).
- Schemas are judged apart: an input or output schema that cannot be enforced exactly leaves
  the tool out, and ``toolbox.refused`` says which schema, where, and how to keep the tool:
  with its name in ``unenforced=``, only that schema goes unchecked (arguments checked by the
  server alone, said in the description; or output neither checked nor shown). A vendor's
  ``x-`` keywords are annotations, never a reason to refuse.
- Output: the one rule is: ``structuredContent`` when the server sent it, else the text of the
  ``content`` blocks joined by newlines; never both. A tool with an ``outputSchema`` is checked
  against it on the way back (``invalid_output``). ``isError`` is a failed result carrying the
  server's text (code ``remote_error``). A tinytools server's pending result (its
  ``_meta["tinytools/pending"]`` record) is a pending call here (kind ``external``, raised as
  `WaitsElsewhere`): the application finishes it with the output once the server's side ends.
- Questions: the client says it shows forms (elicitation). A sessionless server's
  ``input_required`` answer (a question, or an approval it asks the user for) is a pending call
  here (kind ``input``, its form the answer's schema); resuming it with the person's answer sends
  the server the answer and its ``requestState`` (kept in the journal, so another process with
  the same journal and signing key resumes it). A 2025 server's question in the middle of a call
  is answered ``cancel``: nobody can answer before the call ends.
- Tasks: the client declares MCP's tasks extension. A call the server runs as a task is a pending
  call here (kind ``input``, answered ``{}``); resuming it waits for the task (``tasks/get``) and
  returns its result, and a wait given up asks the server to cancel the task (``tasks/cancel``).
- ``timeout=`` is each tool's timeout, so a timed-out (or cancelled) call ends
  ``outcome_unknown`` unless the tool is idempotent; the SDK then tells the server
  ``notifications/cancelled``. Progress notifications become `ToolProgress` events.
- A dropped server (or HTTP connection) fails the call in flight (``worker_lost``,
  ``outcome_unknown`` unless idempotent); the next call opens a new session (over stdio, on a
  new server process) and, if that fails too, fails ``executor_unavailable``. Nothing raises.
- The session lives on the event loop that connected, while ``connect``'s block lasts: call
  remote tools with the async entry points (``adispatch``, ``Dispatcher.adispatch_many``) from
  that loop. A call from elsewhere (sync ``dispatch`` runs async tools on a loop of its own) or
  after the block fails ``executor_unavailable``, unsent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from tinytools._context import Progress
from tinytools._errors import ToolDefinitionError, ToolError, shorten
from tinytools._public import publish
from tinytools._toolbox import Toolbox
from tinytools.executors._failures import ExecutorError
from tinytools.providers._common import require
from tinytools.providers.mcp._handed import TASKS
from tinytools.providers.mcp._remote import remote_tool

if TYPE_CHECKING:  # the SDK loads when a client connects, not when tinytools.providers.mcp is imported
    from mcp import ClientSession, types

__all__ = ["MAX_CURSOR", "MAX_PAGES", "MAX_TOOLS", "OPEN_TIMEOUT", "RemoteToolbox", "connect"]

T = TypeVar("T")

MAX_PAGES = 100
"""Most ``tools/list`` pages `connect` reads from one server (``max_pages=``)."""
MAX_TOOLS = 1000
"""Most tools `connect` takes from one server (``max_tools=``)."""
OPEN_TIMEOUT = 30.0
"""Seconds `connect` waits for the handshake, and for each page of tools."""
MAX_CURSOR = 65_536
"""Longest ``tools/list`` cursor taken, in characters."""
CLOSE_SECONDS = 10.0
"""Most seconds closing a session waits for its task (the SDK stops a stdio server within about 4)."""
_FAILURE_LIMIT = 1000
"""Most characters of a server's or the SDK's own error text an error of `connect` quotes."""


class RemoteToolbox(Toolbox):
    """The tools of one MCP server, and the ones refused.

    Attributes:
        server: The server's label: its command line or URL.
        refused: Remote tool name -> why it was left out (its input or output schema cannot be
            enforced here, or its name, prefix included, is not a valid tool name).
        unenforced: Names (in this toolbox) of the tools kept by ``connect(unenforced=...)``
            whose arguments only the server checks, or whose output is not checked here.
        protocol_version: The protocol the session speaks (``2026-07-28``, or a 2025 handshake's).
    """

    def __init__(self, server: str, protocol_version: str = ""):
        super().__init__()
        self.server = server
        self.refused: dict[str, str] = {}
        self.unenforced: set[str] = set()
        self.protocol_version = protocol_version


class _Link:
    """The one session every tool of a server calls through, opened again after the server dropped.

    A task of its own opens the transport and the session and holds them until closed: the SDK's
    task groups must be entered and left in one task, and calls come from many.
    """

    def __init__(self, label: str, target: Sequence[str] | str, mode: str = "auto", open_timeout: float = OPEN_TIMEOUT):
        self.label = label
        self.target = target
        self.mode = mode
        self.open_timeout = open_timeout
        """Seconds a session may take to open: the first, and each one opened again after a drop."""
        self.session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[ClientSession] | None = None
        self._scope: Any = None
        """The owner's anyio cancel scope, which `_let_go` cancels (see there)."""
        self._closing = asyncio.Event()
        self._opening = asyncio.Lock()
        self._ending: set[asyncio.Task[None]] = set()
        """Session tasks let go of that have not ended yet: `close` waits for them all."""
        self._failures = 0
        """How many sessions opened again after a drop failed to open."""
        self._unreachable = ""
        """Why the last of those failed."""
        self.loop = asyncio.get_running_loop()
        self.sdk = require("mcp", "mcp")
        self.types = require("mcp.types", "mcp")
        self.refusal = require("mcp.shared.exceptions", "mcp").MCPError
        anyio = require("anyio", "mcp")
        self.scopes = anyio.CancelScope
        self.lost = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
        pydantic = require("pydantic", "mcp")
        self.unreadable = pydantic.ValidationError
        self.task_models = _task_models(self.types)
        """How a task of the tasks extension is read, and the request of ``tasks/get`` and ``tasks/cancel``."""
        answers = self.types.CallToolResult | self.types.InputRequiredResult | self.task_models[0]
        self.results = pydantic.TypeAdapter(answers)
        """How a call's answer is read: a result, the server's questions (``input_required``), or a task."""
        """The event loop the session lives on: calls from any other cannot use it."""
        self.ended = False
        """Whether `connect`'s block has ended: no new session is opened after that."""

    async def open(self) -> ClientSession:
        """Start the session (and the server, over stdio), within `open_timeout`.

        Raises:
            TimeoutError: The server did not answer its handshake in time (what was opened is let go of).
            ConnectionError: The server could not be started or reached, or closed the connection
                before the handshake ended (it exited, or wrote what is not MCP); the SDK's or the
                OS's error is its ``__cause__``.
        """
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._ready = ready
        self._closing = asyncio.Event()
        self._scope = scope = self.scopes()
        self._owner = asyncio.create_task(self._hold(ready, scope), name=f"mcp-client {self.label[:60]}")
        try:
            what = f"the MCP server {self.label} did not answer its handshake"
            self.session = await _within(ready, self.open_timeout, what)
        except BaseException as exc:  # timed out, failed, or the caller cancelled: `close` waits for the task's end
            self._let_go()
            if isinstance(exc, Exception) and not isinstance(exc, TimeoutError):
                raise ConnectionError(f"the MCP server {self.label} could not be opened: {_innermost(exc)}") from exc
            raise
        return self.session

    async def _hold(self, ready: asyncio.Future[ClientSession], scope: Any) -> None:
        closing = self._closing
        session = None
        try:
            with scope:  # cancelled by `_let_go`
                # negotiates as mcp.Client; says it shows forms, which a sessionless server asks as input_required
                extensions = [require("mcp.client.extension", "mcp").advertise(TASKS)]  # a call may become a task
                client_of = self.sdk.Client(
                    _server(self.target), mode=self.mode, elicitation_callback=_in_call, extensions=extensions
                )
                async with client_of as client:
                    session = client.session
                    ready.set_result(session)
                    await closing.wait()
            if not ready.done():  # let go of before its handshake ended, while a call still waited for it
                ready.set_exception(ConnectionError("the session was closed before its handshake ended"))
        except BaseException as exc:  # handed to whoever waits for the session
            if not ready.done():
                ready.set_exception(exc)
        finally:
            if session is not None and self.session is session:
                self.session = None  # this session's, never a newer one's

    def _let_go(self) -> None:
        """Stop using the session: its task is asked to end, and kept in `_ending` until it has.

        A task still in its handshake (the server never answered) is cancelled, whether the wait
        for it is still on or was given up (a timed-out wait cancels the future the session would
        have come by): by cancelling its anyio cancel scope, never the task itself. The SDK stops
        a stdio server in a shielded scope, which anyio's cancellation waits for and a task's own
        cancellation breaks into, leaving the server running (a server that refused the handshake
        but lives on after its input closes is still being stopped when the wait gives up).
        """
        self._closing.set()
        owner, scope = self._owner, self._scope
        self._owner = self._scope = self.session = None
        if owner is None or owner.done():
            return
        ready = self._ready
        if ready is not None and (not ready.done() or ready.cancelled()):
            scope.cancel()
        self._ending.add(owner)
        owner.add_done_callback(self._ending.discard)

    async def close(self, *, last: bool = False) -> None:
        """End the session and wait, at most `CLOSE_SECONDS`, for its task and any other let go of.

        The wait cancels nothing: a caller cancelled meanwhile is cancelled (its own cancellation
        propagates), and the tasks end on their own, waited for by the next `close`. The ``last``
        (`connect`'s) waits them out even when cancelled, then raises the cancellation: nothing would
        wait after it, and a task the event loop cancels at its own end breaks into the SDK's
        shutdown, leaving a stdio server running.
        """
        self._let_go()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_SECONDS
        cancelled: BaseException | None = None
        with self.scopes(shield=last):  # an anyio scope around `connect` cancels again on every turn of the loop
            while self._ending and (left := deadline - loop.time()) > 0:
                try:
                    await asyncio.wait(set(self._ending), timeout=left)
                except asyncio.CancelledError as exc:  # a task's own cancellation: the last raises it once they end
                    if not last:
                        raise
                    cancelled = exc
        if cancelled is not None:
            raise cancelled

    async def _session(self) -> ClientSession:
        """The open session, or a new one when the last dropped.

        Calls that waited while another opened one again that failed fail with it, rather than
        each trying again in turn; a call that comes later tries again.

        Raises:
            ExecutorError: The server cannot be reached again (``executor_unavailable``).
        """
        failures = self._failures
        async with self._opening:
            if self.session is not None:
                return self.session
            if self._failures != failures:  # one failed to open while this call waited
                raise ExecutorError("executor_unavailable", self._unreachable, may_have_acted=False)
            await self.close()
            if self.ended:  # `connect`'s block ended while the last session was being closed
                self._refuse()
            try:
                return await self.open()
            except Exception as exc:
                if isinstance(exc, ConnectionError):  # what failed, without `open`'s own wording again
                    reason = (
                        f"the MCP server {self.label} could not be reached again ({_innermost(exc.__cause__ or exc)})"
                    )
                else:  # the handshake timed out: its text names the server
                    reason = f"opening a session again after the drop: {exc}"
                reason += "; the call was not sent"
                self._failures += 1
                self._unreachable = reason
                raise ExecutorError("executor_unavailable", reason, may_have_acted=False) from None

    def _refuse(self) -> None:
        """Fail a call that cannot use this session, before anything is sent.

        Raises:
            ExecutorError: The call comes from another event loop (sync ``dispatch`` runs async
                tools on a loop of its own), or after `connect`'s block ended.
        """
        if self.ended:
            reason = f"the connection to the MCP server {self.label} was closed (connect's block ended)"
        elif asyncio.get_running_loop() is not self.loop:
            reason = f"the session with {self.label} lives on the event loop that connected; call with adispatch there"
        else:
            return
        raise ExecutorError("executor_unavailable", reason, may_have_acted=False)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None,
        responses: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> Any:
        """Send one call (with a retry's ``responses`` and ``state``); the server's result, questions or task.

        Raises:
            ToolError: The server refused the request.
            ExecutorError: The call cannot be sent, the server dropped, or its answer cannot be read.
        """
        self._refuse()
        session = self.session or await self._session()
        types = self.types
        params = types.CallToolRequestParams(name=name, arguments=arguments)
        if responses is not None or state is not None:  # a retry: the person's answer to the server's question
            params = types.CallToolRequestParams(
                name=name, arguments=arguments, input_responses=responses, request_state=state
            )
        return await self._send(session, types.CallToolRequest(params=params), self.results, progress)

    async def task(self, task_id: str, *, cancel: bool = False) -> Any:
        """Where a task of the server stands (``tasks/get``), or, with ``cancel``, ask it to stop (``tasks/cancel``).

        Raises:
            ToolError: The server refused the request.
            ExecutorError: The request cannot be sent, the server dropped, or its answer cannot be read.
        """
        self._refuse()
        session = self.session or await self._session()
        _, task, get, stop, params = self.task_models
        request = (stop if cancel else get)(params=params(taskId=task_id))
        return await self._send(session, request, self.types.Result if cancel else task, None)

    async def _send(self, session: ClientSession, request: Any, answer: Any, progress: Progress | None) -> Any:
        """One request of a call and its answer, read as ``answer``; a server gone or unreadable said as such."""
        try:
            return await session.send_request(request, answer, progress_callback=_reporter(progress))
        except self.refusal as exc:
            if exc.code != self.types.CONNECTION_CLOSED:
                raise ToolError(f"The server refused the call: {exc.error.message}", code="remote_error") from None
            problem: BaseException = exc
        except self.lost as exc:
            problem = exc
        except self.unreadable as exc:  # the server answered something the SDK cannot read as a result
            if answer is self.results and (complete := _untagged(exc)) is not None:
                with contextlib.suppress(self.unreadable):  # read as complete, every other check kept
                    return self.results.validate_python(complete, by_name=False)
            reason = f"the MCP server {self.label} answered with a result this client cannot read: {exc!r:.300}"
            raise ExecutorError("remote_unreadable", reason, may_have_acted=True) from None
        if self.session is session:
            self.session = None
        raise ExecutorError("worker_lost", f"the MCP server {self.label} dropped: {problem!r}", may_have_acted=True)


def _untagged(refused: Any) -> dict[str, Any] | None:
    """A call's result the SDK refused only for want of ``resultType``, tagged ``complete``; else None.

    2026-07-28 says a result without ``resultType`` is complete; the SDK requires the field. The
    result is then read by this client's own models of a call's answer (content, structured
    content, ``isError``), not by the SDK's check for the revision. A question or a task sent
    without its tag is read so too: as a complete result, as the protocol says.
    """
    errors = refused.errors()
    if not all(error["type"] == "missing" and error["loc"][-1:] == ("resultType",) for error in errors):
        return None
    result = errors[0]["input"] if errors else None
    return {**result, "resultType": "complete"} if isinstance(result, dict) else None


async def _in_call(context: Any, params: Any) -> Any:
    """A 2025 server's question in the middle of a call: nobody is there to answer it before the call ends.

    Answered ``cancel`` (dismissed): a call waits for a person only as a pending call, which a
    2026-07-28 server asks for with ``input_required``.
    """
    return require("mcp.types", "mcp").ElicitResult(action="cancel")


def _task_models(types: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The tasks extension's models: a task made, a task now, the two requests, and their params.

    A task made is ``tools/call``'s answer (``resultType: "task"``), a task now ``tasks/get``'s.
    """
    pydantic = require("pydantic", "mcp")

    class TaskMade(types.Result):  # type: ignore[misc]
        result_type: Literal["task"]
        task_id: str
        status: str
        status_message: str | None = None
        poll_interval_ms: int | None = None

    class TaskNow(types.Result):  # type: ignore[misc]
        task_id: str
        status: str
        status_message: str | None = None
        poll_interval_ms: int | None = None
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None

    class TaskParams(types.RequestParams):  # type: ignore[misc]
        model_config = pydantic.ConfigDict(populate_by_name=True)
        task_id: str = pydantic.Field(alias="taskId")

    class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):  # type: ignore[misc]
        method: Literal["tasks/get"] = "tasks/get"
        params: TaskParams
        name_param: ClassVar[str] = "taskId"

    class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):  # type: ignore[misc]
        method: Literal["tasks/cancel"] = "tasks/cancel"
        params: TaskParams
        name_param: ClassVar[str] = "taskId"

    return TaskMade, TaskNow, GetTask, CancelTask, TaskParams


def _reporter(progress: Progress | None) -> Any:
    if progress is None:
        return None

    async def report(done: float, total: float | None, message: str | None) -> None:
        progress.progress(done, total, message)

    return report


@contextlib.asynccontextmanager
async def connect(
    target: Sequence[str] | str,
    *,
    prefix: str | None = None,
    trust_annotations: bool = False,
    timeout: float | None = None,
    unenforced: Collection[str] = (),
    max_pages: int = MAX_PAGES,
    max_tools: int = MAX_TOOLS,
    open_timeout: float = OPEN_TIMEOUT,
    mode: Literal["auto", "legacy"] = "auto",
) -> AsyncIterator[RemoteToolbox]:
    """Open one session to an MCP server and yield its tools as a `RemoteToolbox`.

    The protocol is negotiated as ``mcp.Client`` negotiates it: the sessionless 2026-07-28
    protocol where the server speaks it, else the 2025 handshake (`RemoteToolbox.protocol_version`
    says which).

    Args:
        target: The server's command line (a list: ``[sys.executable, "server.py"]``), started
            as a subprocess over stdio, or an ``http://``/``https://`` URL (streamable HTTP).
        prefix: Put before every tool name (``prefix + name``), so two servers' tools can share
            a toolbox; calls still send the server's own name.
        trust_annotations: Read the server's annotations (readOnly, destructive, idempotent,
            openWorld hints) into each tool's `ToolPolicy`; otherwise the tools are unclassified.
        timeout: Seconds each call may run; see the module's notes for what a timeout ends in.
        unenforced: Names (the server's) of tools to keep although a schema of theirs cannot
            be enforced here: only that schema goes unchecked (an input schema: only the server
            validates the arguments; an output schema: the output is not checked).
        max_pages: Most ``tools/list`` pages to read: a server whose pages go on past it is
            refused.
        max_tools: Most tools to take: a server that lists more is refused.
        open_timeout: Seconds the server may take to start and answer the handshake, and each
            ``tools/list`` page: past it `connect` raises `TimeoutError`. A session opened again
            after the server dropped (the server started again, over stdio) has as long; past
            it the call fails ``executor_unavailable``, unsent.
        mode: ``"legacy"`` speaks the 2025 handshake whatever the server offers: one session
            for the connection, whose injected values a server keeps from call to call (under
            2026-07-28 each request is a session of its own).

    Raises:
        ImportError: The ``mcp`` extra is not installed.
        ValueError: ``target`` is neither a command line nor an http(s) URL.
        ToolDefinitionError: Two remote tools have names equal but for case (a name that is
            not a valid tool name, prefix included, is refused like a schema); or the server
            lists more than ``max_tools`` tools, over more than ``max_pages`` pages, or sends a
            cursor it sent before (its pages go round).
        TimeoutError: The server did not answer within ``open_timeout``.
        ConnectionError: The server could not be started or reached, closed the connection
            before answering (it exited, or wrote what is not MCP), or failed to list its tools;
            the message names the server and what failed, and the SDK's or the OS's error is its
            ``__cause__``.
    """
    label = target if isinstance(target, str) else " ".join(target)
    _check(target)
    link = _Link(label, target, mode, open_timeout)
    try:
        session = await link.open()
        box = RemoteToolbox(label, session.protocol_version or "")
        try:
            tools = await _listed(session, label, (max_pages, max_tools), open_timeout)
        except (ToolDefinitionError, TimeoutError):
            raise
        except Exception as exc:  # the server dropped, or refused to list its tools
            raise ConnectionError(
                f"the MCP server {label} could not be opened: listing its tools failed: {_innermost(exc)}"
            ) from exc
        for listed in tools:
            made = remote_tool(
                link, listed, prefix=prefix or "", timeout=timeout, trust=trust_annotations, unenforced=unenforced
            )
            if isinstance(made, str):
                box.refused[listed.name] = made
                continue
            remote, loose = made
            if prefix:
                remote = remote.renamed(prefix + remote.name)  # checked by remote_tool
            if loose:
                box.unenforced.add(remote.name)
            box._put(remote, f"MCP server {label}")
        yield box
    finally:
        link.ended = True
        await link.close(last=True)


def _check(target: Sequence[str] | str) -> None:
    """Refuse a target that is neither a command line nor an http(s) URL, before any task starts."""
    if isinstance(target, str) and not target.startswith(("http://", "https://")):
        raise ValueError(f"an MCP target is an argv list or an http(s) URL, not {target[:80]!r}")
    if not target:
        raise ValueError("an MCP server's command line cannot be empty")


def _server(target: Sequence[str] | str) -> Any:
    """What ``mcp.Client`` takes for a target: the URL, or the server's command line as stdio parameters."""
    if isinstance(target, str):
        return target
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=target[0], args=list(target[1:]))


async def _listed(session: ClientSession, label: str, bounds: tuple[int, int], timeout: float) -> list[types.Tool]:
    """Every tool the server lists, all pages, in its order, within the bounds (pages, tools).

    Raises:
        ToolDefinitionError: The listing goes past a bound, a cursor comes back or is too long.
        TimeoutError: A page did not come within ``timeout``.
    """
    max_pages, max_tools = bounds
    sdk_types = require("mcp.types", "mcp")
    tools: list[types.Tool] = []
    seen: set[bytes] = set()  # digests of the cursors: a server's long cursors are not all kept
    cursor: str | None = None
    while True:
        params = sdk_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await _within(
            session.list_tools(params=params), timeout, f"the MCP server {label} did not list its tools"
        )
        tools.extend(page.tools)
        cursor = page.next_cursor
        if len(tools) > max_tools:
            raise _unbounded(label, f"listed more than {max_tools} tools", "max_tools")
        if not cursor:
            return tools
        if len(cursor) > MAX_CURSOR:
            raise _unbounded(label, f"sent a cursor of {len(cursor)} characters (at most {MAX_CURSOR} are taken)")
        digest = hashlib.sha256(cursor.encode("utf-8", "surrogatepass")).digest()
        if digest in seen:
            where = f"after page {len(seen) + 1}: its pages go round"
            raise _unbounded(label, f"sent the cursor {shorten(cursor, 80)!r} again {where}")
        seen.add(digest)
        if len(seen) >= max_pages:
            raise _unbounded(
                label, f"has more than {max_pages} pages of tools ({len(tools)} tools so far)", "max_pages"
            )


def _innermost(error: BaseException) -> str:
    """What failed, for a message: the one error inside the SDK's task groups, or the group's own text.

    The SDK's transports end in nested exception groups (``unhandled errors in a TaskGroup``)
    that say nothing of what went wrong; a group of one error (at any depth) is that error.
    """
    while True:
        inside = getattr(error, "exceptions", None)
        if not isinstance(inside, tuple) or len(inside) != 1:
            break
        error = inside[0]
    text = str(error)
    return shorten(f"{type(error).__name__}: {text}" if text else type(error).__name__, _FAILURE_LIMIT)


async def _within(step: Awaitable[T], seconds: float, what: str) -> T:
    """``step`` awaited for at most ``seconds``; cancelled when the wait ends otherwise.

    Not `asyncio.wait_for`, which before Python 3.12 returns a step that ended as its caller was
    cancelled and drops the cancellation: a caller cancelled as a handshake ended went on.

    Raises:
        TimeoutError: It took longer (``what`` says which step).
    """
    inner = asyncio.ensure_future(step)
    try:
        done, _ = await asyncio.wait((inner,), timeout=seconds)
    except BaseException:
        await _ended(inner)
        raise
    if not done:
        await _ended(inner)
        raise TimeoutError(f"{what} within {seconds} seconds")
    return inner.result()


async def _ended(step: asyncio.Future[Any]) -> None:
    """Cancel a step given up on and wait for its end; its failure is dropped.

    A cancellation of the caller meanwhile ends the wait and propagates: a caller cancelled while
    a timed-out step winds down is cancelled, not timed out.
    """
    step.cancel()
    try:
        await asyncio.wait((step,))
    finally:
        if step.done() and not step.cancelled():
            step.exception()  # what it failed with as it was cancelled: retrieved, not logged as lost


def _unbounded(label: str, what: str, bound: str | None = None) -> ToolDefinitionError:
    """The error of a ``tools/list`` that goes past what `connect` reads."""
    fix = f"; if the server truly has more, raise connect(..., {bound}=...)" if bound else ""
    return ToolDefinitionError(f"the MCP server {label} {what}{fix}")


publish("tinytools.providers.mcp", connect)
