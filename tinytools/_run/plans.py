"""Per-tool plans: the stages one tool's calls need in one dispatcher, decided once.

A `Plan` is made the first time a dispatcher sees a tool. It holds what every call of that tool
would otherwise work out again: which schema is enforced (the canonical one, or the strict
rendering), whether the typed reader can read calls straight into positional arguments, the
static policy decision, the approval rule, the executor route, the retry count, and how values
are placed into the function's parameters (`bind`, by slot: positional-only parameters by
position, injected ones included, the rest by keyword).

A plan whose tool needs nothing around its call (no middleware, events, policy, timeout,
retries, runtime values, executor, secrets or redaction) gets `Plan.express` (see
`tinytools._run.express`): read, call, check the output, in a few steps on the calling thread.
Every other call takes the pipeline (`tinytools._run.pipeline`); both use the stages below.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._errors import ArgumentsError, InjectionError, kept, together
from tinytools._results import ToolCall, ToolResult
from tinytools._run.argument_messages import argument_failure
from tinytools._run.failures import tool_failure
from tinytools._schema.converters import ConversionError, conversion_failure, refused, total
from tinytools._schema.fast_decode import Reader, positional_reader
from tinytools._schema.signatures import EMPTY, Slot
from tinytools._schema.strict_json import decoded_arguments, detached
from tinytools.executors._factories import factory_for, provided

if TYPE_CHECKING:
    from tinytools._encoding import OutputEncoder
    from tinytools._run.boundary import Boundary
    from tinytools._schema.strict_mode import StrictSchema
    from tinytools._tool import Tool
    from tinytools.executors._transport import Route
    from tinytools.policy import Rule

__all__ = ["DefaultFailed", "Plan", "Read", "typed_reader"]


class Read(msgspec.Struct):
    """A call's arguments, decoded and checked against the schema the dispatcher enforces.

    A Struct, made in C: every call makes one.
    """

    values: list[Any] | tuple[Any, ...] | None
    """Read the typed way: the function's positional arguments, converted, defaults in place."""
    arguments: dict[str, Any] | None
    """Read the general way: the validated JSON object, not yet converted."""


class Plan:
    """What one tool's calls need in one dispatcher (see the module)."""

    def __init__(
        self,
        tool: Tool[..., Any],
        *,
        strict: bool,
        denial: tuple[str, str] | None,
        approval: Rule | None,
        route: Route | None,
        exposed: tuple[type[BaseException], ...],
        boundary: Boundary,
        fail_invalid: bool,
        plain: bool,
        encoder: OutputEncoder,
        journaled: bool = False,
        watchable: bool = False,
    ):
        self.tool = tool
        self.name = tool.name
        self.serial = not tool.parallel_safe
        """Whether a call runs alone, after everything before it."""
        self.strict: StrictSchema | None = tool.strict() if strict else None
        """The strict rendering enforced instead of the canonical schema, in strict mode."""
        self.denial = denial
        """The (rule, reason) that refuses every call of this tool here, or None."""
        self.approval = approval
        """The rule whose approver decides each call, or None."""
        self.route = route
        """The executor the tool runs on, or None for this process."""
        self.tries = 1 + tool.retries if tool.idempotent else 1
        """Execution a call may make (only idempotent tools retry)."""
        self.exposed = exposed
        """Exception types whose message the model may read."""
        self.boundary = boundary
        self.limit = sys.maxsize if boundary.limit is None else boundary.limit
        """The budget of a result's text; an encoded output this long or shorter always fits."""
        self.encoder = encoder
        """Turns outputs that are not plain data into plain data (the dispatcher's, shared by its plans)."""
        self.fail_invalid = fail_invalid
        """Whether arguments that fail the schema raise `ArgumentsError` (``invalid_args="fail"``)."""
        self.runtime = bool(tool.wants) or "call" in tool.injection_sources.values()
        """Whether the tool takes values only the pipeline makes (a token, an invocation, ...)."""
        self.plans = "plan" in tool.wants
        """Whether the tool is a plan tool: its calls are plans, checked whole at the policy stage."""
        options = tool.options
        self.journaled = (
            journaled
            or options.outlives_turn
            or options.idempotency_key is not None
            or options.reconcile is not None
            or options.cache_ttl is not None
            or bool(tool.wants & {"key", "ask"})
            or bool(approval)
        )
        """Whether calls meet the journal stage: the dispatcher journals, or the tool needs a key or may wait."""
        self.typed: Reader | None = None if strict or not _by_position(tool) else _pending
        self.fallible = (
            () if strict else tuple(s for s in tool.slots or () if s.injection is None and not total(s.convert))
        )
        """The arguments a converter that may fail makes the declared type of, converted beside a schema failure
        to list theirs (not in strict mode, where a model's null stands for an omitted argument until the
        reading restores it)."""
        bare = self._bare()
        self.plain = plain and bare and tool.timeout is None and not (tool.secret_keys or tool.fixed_secrets)
        """Whether the tool needs nothing around its call here: its calls may take the express path."""
        self.watched = watchable and bare
        """Whether a sync entry point may run its calls' stages in one frame (`Pipeline.watched`).

        ``watchable``: the dispatcher has no execution hooks. The tool then needs nothing the
        coroutines between the stages are for: no journal, policy, retry, executor, shared lock,
        runtime values or stream. Middleware, an event sink, secrets and a timeout are allowed.
        """
        self.express: Callable[[ToolCall, Mapping[str, Any] | None], ToolResult] | None = None
        """A sync tool's whole call on the calling thread, when `plain` (`tinytools._run.express`)."""
        self.aexpress: Callable[[ToolCall, Mapping[str, Any] | None], Awaitable[ToolResult]] | None = None
        """An async tool's whole call in the calling task, when `plain`."""

    def _bare(self) -> bool:
        """Whether the tool's calls need none of what the pipeline's coroutines are for.

        No journal, policy, retry, executor, runtime value or stream, and no lock shared with other
        tools (one object's methods take turns: the pipeline holds their lock). A plain plan is a
        bare one whose tool also has no timeout and no secrets.
        """
        tool = self.tool
        return not (self.denial or tool.needs_approval or self.route or self.tries > 1 or self.journaled) and not (
            tool.exclusive is not None or self.runtime or tool.remote_keys or tool.streams
        )

    def reader(self) -> Reader | None:
        """The typed reader of this plan's tool, built now if need be; None when it has no typed way."""
        if self.typed is _pending:
            self.typed = _typed_reader(self.tool)
        return None if self.typed is _general else self.typed

    def read(self, call: ToolCall, *, typed: bool = True, canonical: bool = False) -> Read | ArgumentsError:
        """Decode and validate a call's arguments once, the typed way when it can.

        ``canonical``: against the canonical schema, in strict mode too (a plan's step, whose
        arguments the plan's strict reading restored already).

        Raises:
            ArgumentsError: Only for text that names a key twice or a value that cannot become
                its type, found by the typed reader (errors of the schema are returned).
        """
        reader = self.typed
        if typed and reader is not None:
            if reader is _pending:
                reader = self.typed = _typed_reader(self.tool)
            values = reader(call)
            if values is not None:
                return Read(values, None)
        try:
            arguments = call.arguments
            # a dict is copied (the tool may change it), NaN, lone surrogates and non-string keys refused as in text
            arguments = decoded_arguments(call) if arguments.__class__ is not dict else detached(arguments)
        except ArgumentsError as exc:
            return kept(exc)  # kept, not raised: no frame of this call in it
        strict = None if canonical else self.strict
        problem = (self.tool.schema if strict is None else strict).check(arguments)
        if problem is not None:
            if self.plans:  # a plan: where its schema can only say anyOf, the step's own tool says more
                from tinytools._plan_tool import explained

                return explained(self.tool, problem, arguments)
            return self._unconvertible(problem, arguments) if self.fallible else problem
        if strict is not None:
            arguments = strict.restore(arguments)
        return Read(None, arguments)

    def bind(
        self, read: Read, inject: Mapping[str, Any] | None, runtime: Mapping[str, Any] | None
    ) -> tuple[list[Any] | tuple[Any, ...], dict[str, Any], list[Any]]:
        """The function's positional and keyword arguments, and the secret values among them.

        Raises:
            ArgumentsError: A value passed the schema but cannot become its type.
            InjectionError: The application did not supply an injected value.
        """
        if read.values is not None:
            return read.values, {}, []
        arguments = read.arguments or {}
        slots = self.tool.slots
        if slots is None:  # a hand-written schema's tool takes every argument by keyword
            return [], dict(arguments), []
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        secrets: list[Any] = list(self.tool.fixed_secrets)
        by_keyword = self.tool.call is not None
        failed: list[ArgumentsError] = []
        for slot in slots:
            if slot.injection is None:
                try:
                    value = self._converted(slot, arguments.get(slot.name, EMPTY))
                except ArgumentsError as exc:  # listed with any other argument that cannot become its type
                    failed.append(kept(exc))
                    continue
                if value is EMPTY and slot.fills:  # a Field's default: the function's own is the Field
                    value = slot.default if slot.factory is None else made(slot)
            else:
                value = self._injected(slot, inject, runtime)
                if slot.injection.secret:
                    secrets.append(value)
            if slot.positional_only and not by_keyword:
                args.append(slot.default if value is EMPTY else value)
            elif value is not EMPTY:
                kwargs[slot.parameter] = value
        if failed:
            raise together(failed[0], failed[1:])
        return args, kwargs, secrets

    def normalised(self, read: Read | None, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The model's arguments as the tool receives them: converted to the declared types, defaults in place.

        What a call's content is, whatever its spelling: ``100`` and ``100.0`` for a float, an
        omitted default and the same default sent, ``[]`` and an omitted empty set normalise alike.
        ``read`` is the call's reading when it has one (its typed values are already this).

        Raises:
            ArgumentsError: A value cannot become its declared type.
        """
        slots = self.tool.slots
        if slots is None:  # a hand-written schema's tool: the arguments are what it receives
            return dict(arguments)
        if read is not None and read.values is not None:
            return dict(zip([slot.name for slot in slots], read.values, strict=False))
        values: dict[str, Any] = {}
        for slot in slots:
            if slot.injection is not None:
                continue
            value = self._converted(slot, arguments.get(slot.name, EMPTY))
            if value is EMPTY:
                value = slot.default if slot.factory is None else made(slot)
            if value is not EMPTY:
                values[slot.name] = value
        return values

    def secrets(self, inject: Mapping[str, Any] | None) -> list[Any]:
        """The secret values a call with ``inject`` gives the tool, for a result made before binding."""
        found = list(self.tool.fixed_secrets)
        for slot in self.tool.slots or ():
            injection = slot.injection
            if injection is not None and injection.secret and injection.source == "inject":
                if inject is not None and injection.key in inject:
                    found.append(inject[injection.key])
                elif slot.default is not EMPTY:
                    found.append(slot.default)
        return found

    def check_injected(self, inject: Mapping[str, Any] | None) -> None:
        """Make sure a call with ``inject`` can bind its injected values, before it is left to run later.

        Raises:
            InjectionError: The application did not supply an injected value (as binding would).
        """
        for slot in self.tool.slots or ():
            injection = slot.injection
            if injection is None or injection.source != "inject" or (inject is not None and injection.key in inject):
                continue
            remote = injection.remote and (
                (self.route is not None and slot.name in self.route.remote) or factory_for(injection.key) is not None
            )
            if not (remote or slot.factory is not None or slot.default is not EMPTY):
                raise InjectionError(tool=self.name, parameter=slot.name, key=injection.key)

    def _unconvertible(self, problem: ArgumentsError, arguments: dict[str, Any]) -> ArgumentsError:
        """``problem``, listing beside it each argument the schema passed that cannot become its type.

        Converters run only on what passed the schema: they are not asked about a value it refused.
        """
        if arguments.__class__ is not dict or problem.unlisted:  # not an object; or no room left to list more
            return problem  # (and which arguments failed past the listing is not known)
        at_fault = {each.parameter for each in problem.errors}
        more = []
        for slot in self.fallible:
            if slot.name not in at_fault:
                try:
                    self._converted(slot, arguments.get(slot.name, EMPTY))
                except ArgumentsError as exc:
                    more.append(kept(exc))
        return together(problem, more) if more else problem

    def _converted(self, slot: Slot, value: Any) -> Any:
        convert = slot.convert
        if convert is None or value is EMPTY or value.__class__ in slot.keep:
            return value
        try:
            return convert(value)
        except ConversionError as exc:
            problem = exc
        except Exception as exc:  # a converter that failed in a way of its own: still this argument's fault
            problem = refused(slot.name, exc)
        error = conversion_failure(slot.name, problem, self.tool.schema.properties.get(slot.name))
        error.tool = self.name
        raise error

    def _injected(self, slot: Slot, inject: Mapping[str, Any] | None, runtime: Mapping[str, Any] | None) -> Any:
        injection = slot.injection
        assert injection is not None
        if injection.source != "inject":
            return runtime[injection.source] if runtime is not None else None
        if inject is not None and injection.key in inject:
            return inject[injection.key]
        if injection.remote:
            stand_in = self.route.remote.get(slot.name) if self.route is not None else None
            if stand_in is not None:  # made by the worker, not sent from here
                return stand_in
            factory = factory_for(injection.key)
            if factory is not None:  # made here, once per process: the tool runs in this one
                return provided(factory)
        if slot.factory is not None:
            return made(slot)
        if slot.default is not EMPTY:
            return slot.default
        raise InjectionError(tool=self.name, parameter=slot.name, key=injection.key)

    def function(self) -> Callable[..., Any]:
        """What a call invokes with the bound arguments: the application's keyword call, or the function."""
        return self.tool.call or self.tool.fn

    def invalid(self, call: ToolCall, error: ArgumentsError, start: int) -> ToolResult:
        """Apply the invalid-arguments policy (malformed JSON always gets a result).

        Raises:
            ArgumentsError: Under ``invalid_args="fail"``, for arguments that failed the schema.
        """
        if self.fail_invalid and error.keyword != "json":
            error.tool = self.name
            raise error
        return argument_failure(call, self.tool, error, start)

    def bound(
        self, call: ToolCall, inject: Mapping[str, Any] | None, start: int
    ) -> tuple[list[Any] | tuple[Any, ...], dict[str, Any]] | ToolResult:
        """A call read the general way and bound, or the result of arguments that failed.

        For the express path: a plain plan's failed result is sealed here (held to the budget;
        a plain plan has no secrets to scrub).
        """
        read = self.read(call, typed=False)
        if read.__class__ is not Read:
            return self.sealed_invalid(call, read, start)  # type: ignore[arg-type]
        try:
            args, kwargs, _ = self.bind(read, inject, None)
        except ArgumentsError as exc:
            return self.sealed_invalid(call, kept(exc), start)
        except DefaultFailed as exc:  # the application's own failure: its message held to the budget
            return self.boundary.seal(tool_failure(call, self.name, exc.error, start, self.exposed), None, start)
        return args, kwargs

    def sealed_invalid(self, call: ToolCall, error: ArgumentsError, start: int) -> ToolResult:
        """`invalid`, its result sealed at the boundary: a plain plan's, on the express path."""
        return self.boundary.seal(self.invalid(call, error, start), None, start)


class DefaultFailed(Exception):
    """A ``default_factory`` raised while a call was bound: the tool's own code failed, not the model."""

    def __init__(self, error: Exception):
        self.error = error
        super().__init__(str(error))


def made(slot: Slot) -> Any:
    """The value of ``slot``'s ``default_factory`` for one call.

    Raises:
        DefaultFailed: The factory raised; the call ends as if the tool had.
    """
    assert slot.factory is not None
    try:
        return slot.factory()
    except Exception as exc:
        raise DefaultFailed(exc) from exc


def _by_position(tool: Tool[..., Any]) -> bool:
    """Whether calling the function with every argument by position means what the general way means.

    That needs: no injected values; a plain function (not a wrapper, which may read its
    keywords) that the tool calls directly (no ``keyword_call`` of the application's own); every
    parameter model-visible and positional; and a default for each one the schema does not
    require (else the general way reports it missing, and the fast way would pass `EMPTY`).
    """
    slots = tool.slots
    if slots is None or tool.call is not None:
        return False
    fn = tool.fn
    plain = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if type(plain) is not types.FunctionType or hasattr(plain, "__wrapped__") or "__signature__" in plain.__dict__:
        return False
    required = set(tool.schema.required)
    return all(
        slot.injection is None
        and not slot.keyword_only
        and slot.factory is None
        and (slot.name in required or slot.default is not EMPTY)
        for slot in slots
    )


def _typed_reader(tool: Tool[..., Any]) -> Reader:
    """The typed reader of ``tool`` (see `tinytools._schema.fast_decode`), built on its first call.

    The reader is the tool's, kept on it: every dispatcher (one per run) shares it.
    """
    reader: Reader | None = tool.memo.get("reader")
    if reader is None:
        reader = tool.memo["reader"] = _build_reader(tool) or _general
    return reader


def typed_reader(tool: Tool[..., Any]) -> Reader | None:
    """The typed reader of ``tool`` when it has a typed way in, else None (built now if need be)."""
    if not _by_position(tool):
        return None
    reader = _typed_reader(tool)
    return None if reader is _general else reader


def _pending(call: ToolCall) -> None:  # pragma: no cover - a marker, never called
    return None


def _general(call: ToolCall) -> None:
    """The reader of a tool without a typed way in: every call is read the general way."""
    return None


def _build_reader(tool: Tool[..., Any]) -> Reader | None:
    slots = tool.slots or ()
    converters = [(slot.name, slot.convert, slot.keep) for slot in slots if slot.convert is not None]
    try:
        return positional_reader(
            tool.input_schema, [slot.name for slot in slots], [slot.default for slot in slots], converters
        )
    except Exception:  # the fast way is an optimisation: whatever stops it, the general way stands
        return None
