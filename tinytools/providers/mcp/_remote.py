"""A remote MCP tool as a local `Tool`: its schemas judged apart, its calls sent, its results read.

`remote_tool` makes the `Tool` that `tinytools.providers.mcp._client.connect` puts in its
toolbox for one ``tools/list`` entry, or says why the entry is refused. The input schema is
enforced here through `InputSchema.parse` (closed when it does not say), the output schema
through `compile_validator`; each that cannot be enforced is named in the refusal, and relaxed
alone when the application keeps the tool with ``unenforced=``. A result is read by one rule:
an error, a tinytools server's pending record, the structured content, or the text.

A server that answers a call ``input_required`` (2026-07-28) asks a person something through
its form-mode elicitations: the call ends its turn pending (kind ``input``) with the form as the
answer's schema, keeping the server's ``requestState`` with the question (`NeedsInput.state`,
in the journal). `Dispatcher.resume` with the answer runs the tool again, which sends the
server the answer and the state; a server that asks again makes the call pending again. A form
that only says "wait" (no question) is asked again after a short pause, a few times.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import json
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from tinytools._context import Ask, Progress
from tinytools._errors import NeedsInput, SchemaError, ToolError, WaitsElsewhere, shorten
from tinytools._results import Pending
from tinytools._schema.anchors import pointed
from tinytools._schema.input_schema import InputSchema, compile_validator
from tinytools._schema.signatures import EMPTY, Injection, Slot
from tinytools._tool import NAME_PATTERN, Tool
from tinytools.policy import SideEffect, ToolPolicy
from tinytools.providers._common import require
from tinytools.providers.mcp._wire import PENDING_META

if TYPE_CHECKING:  # the SDK loads when a client connects, not when tinytools.providers.mcp is imported
    from mcp import types

__all__ = ["Remote", "remote_tool"]


class Remote(Protocol):
    """The server's side of a remote tool's calls (`tinytools.providers.mcp._client`'s link)."""

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None,
        responses: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> Any:
        """Send one call (for a retry, the responses to the server's questions and its ``requestState``).

        Returns the ``CallToolResult``, the ``input_required`` answer, or the task the server made.
        """
        ...

    async def task(self, task_id: str, *, cancel: bool = False) -> Any:
        """Where a task of the server stands (``tasks/get``), or, with ``cancel``, ask it to stop."""
        ...


_PROGRESS = "__tinytools_progress"
"""The hidden parameter a remote tool's `Progress` comes in by (no schema property can hide it)."""
_ASK = "__tinytools_ask"
"""The hidden parameter a remote tool's `Ask` comes in by: the answers to a server's questions."""
WAITS = 10
"""How many times a call is sent again when its server answers ``input_required`` with no question."""
_DONE = {"type": "object", "properties": {}, "additionalProperties": False}
"""The answer to a question asked as a link to open, or to a call the server runs as a task: ``{}``."""
_ENDED = ("completed", "failed", "cancelled")
"""A task's statuses that are final."""
MOST_STATE = 65_536
"""Longest ``requestState`` a server may ask this client to keep (in the journal), in characters."""


def remote_tool(
    remote: Remote,
    listed: types.Tool,
    *,
    prefix: str,
    timeout: float | None,
    trust: bool,
    unenforced: Collection[str],
) -> tuple[Tool[..., Any], bool] | str:
    """The local tool that calls ``listed`` on the server and whether a part is unenforced, or why it is refused.

    The input and the output schema are judged apart: with the tool's name in ``unenforced``,
    only the one that cannot be enforced goes unchecked here.
    """
    name, description = listed.name, listed.description or ""
    if NAME_PATTERN.fullmatch(prefix + name) is None:
        return f"{prefix + name!r} is not a tool name here (1 to 64 ASCII letters, digits, '_' or '-')"
    schema, output = _input_schema(listed.input_schema), _output_schema(listed.output_schema)
    problems = {part: exc for part, exc in (("input", schema), ("output", output)) if isinstance(exc, SchemaError)}
    if problems and name not in unenforced:
        return _refusal(name, problems)
    if isinstance(schema, SchemaError):
        schema = _relaxed(listed.input_schema)
        loose = ", ".join(schema.unchecked) if isinstance(schema, _Relaxed) else "/"
        description += f" (Its arguments at {shorten(loose, 200)} are checked by the MCP server only.)"
    checked_output = None if isinstance(output, SchemaError) else output
    made = Tool(
        _caller(remote, name, listed.output_schema is not None),
        name=name,
        description=description,
        input_schema=schema,
        output_schema=checked_output,
        validate_output=checked_output is not None,
        slots=None if isinstance(schema, _Relaxed) and schema.checked is None else _slots(schema),
        timeout=timeout,
        policy=_policy(listed.annotations) if trust else None,
    )
    return made, bool(problems)


def _input_schema(given: dict[str, Any]) -> InputSchema | SchemaError:
    """A remote input schema as enforced here (closed when it does not say), or why it cannot be."""
    raw = copy.deepcopy(given)
    if isinstance(raw, dict) and raw.get("type") == "object" and "additionalProperties" not in raw:
        raw["additionalProperties"] = False  # the model is shown the closed schema it is held to
    try:
        return InputSchema.parse(raw, copy=False)
    except SchemaError as exc:
        return exc


def _output_schema(given: dict[str, Any] | None) -> dict[str, Any] | SchemaError | None:
    """A remote output schema if it can be enforced here, or why it cannot be."""
    if given is not None:
        try:
            given = pointed(given)  # what the output is checked against and shown as: pointers, not anchors
            compile_validator(given)
        except SchemaError as exc:
            return exc
    return given


def _refusal(name: str, problems: dict[str, SchemaError]) -> str:
    """Why a remote tool is left out: which schema, where and what, and how to keep it anyway."""
    found = "; ".join(f"its {part} schema cannot be enforced here ({exc})" for part, exc in problems.items())
    kept = {"input": "its arguments checked by the MCP server only", "output": "its output not checked here"}
    how = " and ".join(kept[part] for part in problems)
    return f"{found}; connect(..., unenforced={{{name!r}}}) keeps it, {how}"


class _Relaxed(InputSchema):
    """A remote schema shown as the server gave it, checked here but for the parts that cannot be.

    The application opted in (``unenforced=``): each subschema (or keyword) that cannot be enforced
    is left to the server, the rest of the arguments stay checked here.
    """

    def __init__(self, shown: dict[str, Any], checked: InputSchema | None, unchecked: list[str]):
        super().__init__(shown)
        self.checked = checked
        """What is enforced here; None when nothing but the arguments being an object can be."""
        self.unchecked = unchecked
        """The JSON pointers of the parts left to the server."""

    def check(self, arguments: object) -> Any:
        if self.checked is not None:
            return self.checked.check(arguments)
        return None if isinstance(arguments, dict) else _ANY_OBJECT.check(arguments)


def _relaxed(given: dict[str, Any]) -> InputSchema:
    """The remote input schema, enforced here but for each part that cannot be (see `_Relaxed`)."""
    shown = copy.deepcopy(given)
    if isinstance(shown, dict) and shown.get("type") == "object" and "additionalProperties" not in shown:
        shown["additionalProperties"] = False
    working, unchecked = copy.deepcopy(shown), list[str]()
    for _ in range(_MOST_RELAXED):
        try:
            return _Relaxed(shown, InputSchema.parse(working, copy=False), unchecked)
        except SchemaError as exc:
            if not _loosen(working, exc.pointer):
                break
            unchecked.append(exc.pointer or "/")
    return _Relaxed(shown, None, ["/"])  # what cannot be relaxed part by part (an open root) is left whole


_ANY_OBJECT = InputSchema.parse({"type": "object", "additionalProperties": False})
"""Refuses arguments that are not an object, with the usual error."""
_MOST_RELAXED = 64
"""Most parts of one remote schema left to its server before the whole schema is."""


def _loosen(schema: Any, pointer: str) -> bool:
    """Leave the part at ``pointer`` unchecked: a subschema becomes ``{}``, a keyword goes; False at the root."""
    tokens = [token.replace("~1", "/").replace("~0", "~") for token in pointer.split("/")[1:]] if pointer else []
    if not tokens:
        return False
    parent: Any = schema
    for token in tokens[:-1]:
        parent = (
            parent[int(token)] if isinstance(parent, list) else parent.get(token) if isinstance(parent, dict) else None
        )
        if parent is None:
            return False
    last = tokens[-1]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = {}
        return True
    if not isinstance(parent, dict) or last not in parent:
        return False
    if isinstance(parent[last], dict):
        parent[last] = {}
    else:
        del parent[last]
    return True


def _slots(schema: InputSchema) -> tuple[Slot, ...]:
    """Each argument by keyword, and the hidden `Progress` the pipeline injects."""
    kind = inspect.Parameter.KEYWORD_ONLY
    given = tuple(Slot(prop, kind=kind, default=EMPTY) for prop in schema.properties)
    progress = Slot(_PROGRESS, kind=kind, default=None, injection=Injection("progress", "progress"))
    return (*given, progress, Slot(_ASK, kind=kind, default=None, injection=Injection("ask", "ask")))


def _caller(remote: Remote, name: str, structured: bool) -> Any:
    async def call_remote(**arguments: Any) -> Any:
        progress = arguments.pop(_PROGRESS, None)
        ask: Ask | None = arguments.pop(_ASK, None)
        kept = json.loads(ask.state) if ask is not None and ask.answers and ask.state is not None else {}
        if "task" in kept:  # resumed: wait for the server's task
            return _read(await _waited(remote, kept["task"]), structured)
        responses, state = _answered(ask, kept)
        pause = 0.05
        for _ in range(WAITS + 1):
            result = await remote.call(name, arguments, progress, responses, state)
            kind = getattr(result, "result_type", None)
            if kind == "task":  # the server runs the call on: it waits, and resuming waits for the task
                said = getattr(result, "status_message", None) or "it is working"
                message = f"The MCP server runs the call as a task ({said}); resume with {{}} to wait for its result."
                raise NeedsInput(message, _DONE, state=json.dumps({"task": result.task_id}))
            if kind != "input_required":
                return _read(result, structured)
            if getattr(result, "input_requests", None):
                raise _question(result)
            await asyncio.sleep(pause)  # the server asks for nothing but a little time
            pause, responses, state = min(pause * 2, 0.25), None, getattr(result, "request_state", None)
        raise WaitsElsewhere("The MCP server keeps asking the call to wait; it waits there.")

    call_remote.__name__ = call_remote.__qualname__ = f"remote_{name}"
    return call_remote


def _read(result: types.CallToolResult, structured: bool) -> Any:
    """What the model reads of a result: structured content when sent, else the text blocks.

    Raises:
        ToolError: The result is an error, or lacks the structured content its schema promises.
        WaitsElsewhere: The result is a tinytools server's pending one: the call waits there.
    """
    text = "\n".join(block.text for block in result.content or () if block.type == "text")
    kind = getattr(result, "result_type", None)
    if kind not in (None, "complete"):  # the protocol's own waiting results: input asked for, or a task
        asked = "asks for input" if kind == "input_required" else f"answered {shorten(str(kind), 40)!r}"
        raise WaitsElsewhere(f"The MCP server {asked}; the call waits there. {text}".strip())
    if result.meta and PENDING_META in result.meta:  # (an error for a tool that lists its output)
        raise _waits(result.meta[PENDING_META], text)
    if result.is_error:
        raise ToolError(text or "The remote tool failed and said nothing.", code="remote_error")
    if result.structured_content is not None:
        return result.structured_content
    if structured:
        raise ToolError(
            "The remote tool declares an output schema but sent no structured content.", code="invalid_output"
        )
    return text


def _question(result: Any) -> NeedsInput:
    """What the server asks (its form-mode and link elicitations) as one question for a person.

    Raises:
        ToolError: The server asks for something else (a sampling, the roots), which no person answers here.
    """
    asked: list[tuple[str, str, dict[str, Any]]] = []  # (key, message, the answer's schema)
    for key, request in result.input_requests.items():
        params: Any = getattr(request, "params", None)
        mode = getattr(params, "mode", None)
        if getattr(request, "method", None) != "elicitation/create" or mode not in ("form", "url"):
            method = shorten(str(getattr(request, "method", "a request")), 60)
            raise ToolError(
                f"The MCP server asks for {method}, which this client does not answer.", code="remote_error"
            )
        message = params.message if mode == "form" else f"{params.message} Open {params.url}, then answer {{}}."
        asked.append((key, message, dict(params.requested_schema) if mode == "form" else _DONE))
    if result.request_state is not None and len(result.request_state) > MOST_STATE:
        said = f"The MCP server's request state is over {MOST_STATE} characters; this client does not keep it."
        raise ToolError(said, code="remote_error")
    links = [key for key, _, schema in asked if schema is _DONE]  # answered with no content
    state = json.dumps({"keys": [key for key, _, _ in asked], "links": links, "state": result.request_state})
    if len(asked) == 1:
        return NeedsInput(asked[0][1], asked[0][2], state=state)
    schema = {
        "type": "object",
        "properties": {key: schema for key, _, schema in asked},
        "required": [key for key, _, _ in asked],
        "additionalProperties": False,
    }
    return NeedsInput("\n".join(f"{key}: {message}" for key, message, _ in asked), schema, state=state)


async def _waited(remote: Remote, task_id: str) -> Any:
    """The ``CallToolResult`` a server's task ended in, polled for (``tasks/get``) until it ends.

    A call given up meanwhile (its timeout, the run's cancellation) asks the server to stop the task.

    Raises:
        ToolError: The task failed, was cancelled, asks for input (which is not answered here), or has a
            status the extension does not define.
    """
    try:
        while True:
            now = await remote.task(task_id)
            if now.status in _ENDED:
                break
            if now.status != "working":  # input asked through tasks/update, or a status the extension has not
                said = f"The MCP server's task is {shorten(str(now.status), 40)!r}, which this client does not follow."
                raise ToolError(said, code="remote_error")
            await asyncio.sleep(min(max((now.poll_interval_ms or 500) / 1000, 0.05), 5.0))
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(remote.task(task_id, cancel=True)), 5)
        raise
    if now.status == "cancelled":
        raise ToolError("The MCP server's task was cancelled.", code="remote_error")
    if now.status == "failed" or now.result is None:
        said = (now.error or {}).get("message") or now.status_message or "it said nothing more"
        raise ToolError(f"The MCP server's task failed: {shorten(str(said), 200)}", code="remote_error")
    try:
        return require("mcp.types", "mcp").CallToolResult.model_validate(now.result)
    except require("pydantic", "mcp").ValidationError:
        raise ToolError(
            "The MCP server's task ended in a result this client cannot read.", code="remote_error"
        ) from None


def _answered(ask: Ask | None, kept: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The responses and ``requestState`` a resumed call sends: the person's last answer to the server's question."""
    if ask is None or "keys" not in kept:
        return None, None
    keys, answer = kept["keys"], ask.answers[-1]
    answers = {keys[0]: answer} if len(keys) == 1 else answer
    links = kept.get("links", ())
    responses = {key: {"action": "accept", "content": None if key in links else answers[key]} for key in keys}
    return responses, kept["state"]


def _waits(record: object, text: str) -> WaitsElsewhere:
    """The pending call a tinytools server's ``_meta`` record (or, unreadable, its text) describes."""
    try:
        pending = msgspec.convert(record, Pending)
    except msgspec.ValidationError:
        return WaitsElsewhere(text.removeprefix("Pending: ") or "The MCP server holds the call.")
    left = pending.expires_at - time.time()
    return WaitsElsewhere(pending.request.message, ttl=left if left > 0 else None)


def _policy(annotations: types.ToolAnnotations | None) -> ToolPolicy | None:
    """The policy the server's hints describe (trusted only when the application says so)."""
    if annotations is None:
        return None
    policy = ToolPolicy.classified()
    if annotations.read_only_hint:
        policy = policy.with_side_effects([SideEffect.READ_ONLY])
    elif annotations.destructive_hint is not False:  # the spec's default for a tool that writes
        policy = policy.with_side_effects([SideEffect.DESTRUCTIVE])
    if annotations.open_world_hint:
        policy = policy.with_side_effects(["network"])
    if annotations.idempotent_hint:
        policy = policy.with_runtime(idempotent=True)
    return policy
