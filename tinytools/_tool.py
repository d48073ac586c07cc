"""`@tool` and `Tool`: a plain function becomes a tool a model can call.

A `Tool` is the definition: the function, its name and description, its enforced input schema,
its parameters as `Slot` s (read once by `tinytools._schema.signatures`), and what it declares (its
`ToolPolicy`, timeouts, retries, format, executor). How a call runs lives in `tinytools._run`;
nothing here is computed per call.
"""

from __future__ import annotations

import itertools
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from typing_extensions import ParamSpec

from tinytools._errors import ArgumentsError, ToolDefinitionError, ToolDefinitionWarning, shorten
from tinytools._public import publish
from tinytools._results import ToolCall, ToolResult
from tinytools._schema.callables import is_async, stream_kind
from tinytools._schema.input_schema import InputSchema, compile_validator
from tinytools._schema.keyword_order import in_keyword_order
from tinytools._schema.signatures import (
    INJECTABLE_TYPES,
    Injected,
    Slot,
    default_name,
    output_schema,
    read_signature,
    return_hint,
)
from tinytools._tool_options import NAME_PATTERN, ToolOptions, check_name
from tinytools._toolformat import ToolFormat
from tinytools.policy import ToolPolicy

if TYPE_CHECKING:
    from tinytools._schema.strict_mode import StrictSchema

__all__ = [
    "INJECTABLE_TYPES",
    "NAME_PATTERN",
    "SEARCHES",
    "Injected",
    "Tool",
    "is_search",
    "make_tool",
    "runs_calls",
    "tool",
]

SEARCHES = "_tinytools_searches"
"""The mark a search tool's function carries, whatever the tool is renamed to (see `tinytools._search`)."""

P = ParamSpec("P")
R = TypeVar("R")


_RUNTIME_SOURCES = frozenset({"token", "invocation", "progress", "stores", "key", "ask", "discovery", "plan"})
_RUNNERS: list[Callable[..., Any]] = []
"""`tinytools.dispatch` and `tinytools.adispatch`, registered by the run layer (`runs_calls`)."""


def runs_calls(sync: Callable[..., Any], run_async: Callable[..., Any]) -> None:
    """Register the run layer's one-line entry points, which `Tool.invoke` and `ainvoke` run a call through.

    The pipeline sits above the nouns: ``tinytools._run.shortcuts`` registers itself when imported.
    """
    _RUNNERS[:] = [sync, run_async]


_INVOCATIONS = itertools.count(1)
"""Numbers the calls `Tool.invoke` makes: each is a call of its own (a call is its id)."""


class Tool(Generic[P, R]):
    """A function with a name, a description and an enforced input schema.

    A tool is still callable exactly like the function it wraps. Made in a class body
    (``@tool`` over a method, or over a ``@classmethod``), it is a descriptor:
    ``instance.method`` is that instance's tool (``cls.method`` the class's, for a class
    method), with ``self``/``cls`` bound and never shown to the model.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str,
        description: str,
        input_schema: InputSchema,
        output_schema: dict[str, Any] | None = None,
        slots: tuple[Slot, ...] | None = None,
        keyword_call: Callable[..., Any] | None = None,
        options: ToolOptions | None = None,
        **declared: Any,
    ):
        """Make a tool of ``fn`` under ``input_schema``; ``declared`` are `tool`'s options (or ``options``)."""
        check_name(name)
        self.fn = fn
        """The wrapped function."""
        self.name = name
        """The name the model calls the tool by."""
        self.description = description
        """What the model reads about the tool."""
        self.schema = input_schema
        """The enforced `InputSchema`."""
        self.output_schema = in_keyword_order(output_schema)
        """JSON Schema of the return value (keywords in one order), or None when it cannot be expressed."""
        self.slots = slots
        """Every parameter of the function, in order; None for a hand-written schema's tool."""
        self.call = keyword_call
        """The application's own way to call the function with keyword arguments, or None."""
        self.streams = stream_kind(fn)
        """``"sync"`` or ``"async"`` for a generator tool, whose pieces stream (`tinytools._run.streams`)."""
        self.is_async = is_async(fn) or self.streams == "async"
        """Whether the function runs on the event loop (it returns a coroutine, or is an async generator)."""
        self._hide(slots)
        self.options = options or ToolOptions.read(
            name, declared, schema=input_schema, has_output_schema=output_schema is not None,
            injected=self.injected, is_async=self.is_async,
        )  # fmt: skip
        """Everything ``@tool`` declared, checked once (`ToolOptions`)."""
        self._declare(self.options)
        self.namespace: str | None = None
        """The prefix `Toolbox.prefixed` gave the name, or None: a provider's namespace for it."""
        self.binds: str | None = None
        """``"instance"`` or ``"class"`` for a method not yet bound (see `Tool.__get__`), else None."""
        self.static = False
        """Whether the function came as a ``staticmethod``: it has no receiver to bind."""
        self.exclusive: Any = None
        """A lock held while the tool runs, shared with the tools it must not run beside (one object's methods)."""
        self.fixed_secrets: tuple[Any, ...] = ()
        """Secret values the callable carries itself (a partial's), redacted like injected secrets."""
        self._late_return = False
        self._self_schemas: dict[type, dict[str, Any] | None] = {}
        self._output_check: Callable[[Any], None] | None = None
        self._strict: StrictSchema | None = None
        self.memo: dict[str, Any] = {}
        """What the layers above keep for this tool, derived from it once (the run layer's typed reader,
        its one-tool toolbox, the fixed parts of its invalid-argument messages); a copy of the tool
        (`renamed`, `bound_to`) starts with none."""
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__

    def _declare(self, options: ToolOptions) -> None:
        """Read what the options mean for each call: the values the run layer reads per call."""
        self.policy = options.policy
        """What the tool declares it may do, and how it runs (`ToolPolicy`; unclassified by default)."""
        runtime = self.policy.runtime
        self.timeout = runtime.timeout
        """Seconds a call may run, or None (the policy's ``runtime.timeout``)."""
        self.idempotent = bool(runtime.idempotent)
        """Whether a repeated call is harmless; only idempotent tools retry."""
        self.retries = runtime.max_retries or 0
        """How many times an idempotent tool is retried after a timeout or `RetryableError`."""
        self.needs_approval = self.policy.access.approval_required
        """Whether every call needs an approver's yes (fail closed without one)."""
        self.parallel_safe = options.parallel_safe is not False
        """Whether calls may run concurrently with others in a batch."""
        self.enabled = options.enabled
        """Says, from the application's state, whether the tool is offered this turn."""
        self.validate_output = options.validate_output
        """Whether outputs are checked against `output_schema` (failing with ``invalid_output``)."""
        self.format = options.format
        """How the tool is shown, and its calls read, when a model calls tools through text."""
        self.executor = options.executor
        """Where a `Dispatcher` runs it: None (its default), ``"inline"``, ``"process"`` or a name."""
        self.expose_errors = options.expose_errors
        """Exception types (besides `ToolError`) whose message the model may read."""
        self.defer = options.defer
        """Left out of exports until a search reveals it; a call to it is refused until then."""
        self.examples = options.examples
        """Whole-call examples of arguments, each accepted by the schema (Anthropic's ``input_examples``)."""

    def _hide(self, slots: tuple[Slot, ...] | None) -> None:
        """Read what the injected (hidden) parameters need from the run."""
        hidden = [slot for slot in slots or () if slot.injection is not None]
        self.injected = tuple(slot.name for slot in hidden)
        """Names of the hidden parameters."""
        self.injection_sources = {slot.name: slot.injection.source for slot in hidden if slot.injection}
        """Hidden parameter -> where its value comes from (``inject``, ``call``, ``token``, ...)."""
        self.wants = frozenset(self.injection_sources.values()) & _RUNTIME_SOURCES
        """The runtime values it receives by type: ``token``, ``invocation``, ``progress``, ``stores``."""
        self.secret_keys = tuple(slot.injection.key for slot in hidden if slot.injection and slot.injection.secret)
        """``inject`` keys whose values are redacted from everything the model sees."""
        self.remote_keys = tuple((s.name, s.injection.key) for s in hidden if s.injection and s.injection.remote)
        """(parameter, key) of each value made where the tool runs (``Injected(..., remote=True)``)."""

    @property
    def input_schema(self) -> dict[str, Any]:
        """The model-visible JSON Schema of the arguments."""
        return self.schema.schema

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the wrapped function directly, as if it were not a tool."""
        return self.fn(*args, **kwargs)

    def __get__(self, instance: Any, owner: type | None = None) -> Tool[..., Any]:
        """The tool of a method made in a class body, bound to ``instance`` (to ``owner`` for a class method).

        From the class, an instance method's tool is itself, unbound (a toolbox refuses it); a
        tool that is not a method is itself from anywhere.
        """
        if self.binds is None or (instance is None and self.binds == "instance"):
            return self
        if self.binds == "class" and not isinstance(instance, type):
            instance = owner if owner is not None else type(instance)
        return self.bound_to(instance)

    def bound_to(self, instance: Any) -> Tool[..., Any]:
        """This method's tool with ``self`` (or ``cls``) set to ``instance``: a tool a toolbox can hold."""
        if self.binds is None:
            raise ToolDefinitionError("only a method's tool can be bound to an instance", tool=self.name)
        bound = self.__copy__()
        bound.fn = bound.__wrapped__ = types.MethodType(self.fn, instance)
        bound.binds = None
        if self._late_return:
            cls = instance if isinstance(instance, type) else type(instance)
            if cls not in self._self_schemas:
                self._self_schemas[cls] = in_keyword_order(output_schema(return_hint(self.fn), self.name, None, cls))
            bound.output_schema = self._self_schemas[cls]
            bound._output_check = None
            if bound.validate_output and bound.output_schema is None:
                raise ToolDefinitionError(
                    f"validate_output=True needs an output schema, and {cls.__name__} has none", tool=self.name
                )
        return bound

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}>"

    def __copy__(self) -> Tool[P, R]:
        """A copy with the same definition; what layers above derived from the original (`memo`) is not copied."""
        copied: Tool[P, R] = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.memo = {}
        return copied

    def strict(self) -> StrictSchema:
        """The strict-mode rendering of the input schema, built on first use (`tinytools._schema.strict_mode`).

        Raises:
            SchemaError: The schema uses something strict mode cannot express.
        """
        if self._strict is None:
            from tinytools._schema.strict_mode import render_strict  # strict mode loads on first use

            defaults = {slot.name: slot.default for slot in self.slots or () if slot.injection is None}
            self._strict = render_strict(self.name, self.input_schema, defaults)
        return self._strict

    def output_problem(self, output: Any) -> str | None:
        """Why ``output`` does not match the output schema, or None when it does."""
        if self.output_schema is None:
            return None
        if self._output_check is None:
            self._output_check = compile_validator(self.output_schema)
        try:
            self._output_check(output)
        except ArgumentsError as exc:
            return f"at {shorten(exc.pointer or '/')}: {exc.reason}"
        return None

    def serial(self, exclusive: Any = None) -> Tool[P, R]:
        """This tool, serial in batches: a call waits for the calls before it and runs alone (itself if it is).

        ``exclusive`` (a lock several tools share) makes its runs wait for each other's across
        calls too.
        """
        if not self.parallel_safe and exclusive is None:
            return self
        copied = self.__copy__()
        copied.parallel_safe = False
        copied.exclusive = exclusive
        return copied

    def deferred(self) -> Tool[P, R]:
        """This tool, deferred: left out of exports until a search reveals it (itself if it is)."""
        if self.defer:
            return self
        copied = self.__copy__()
        copied.defer = True
        return copied

    def renamed(self, name: str) -> Tool[P, R]:
        """A copy of this tool under another name: the same function, schemas, policy and options.

        Raises:
            ToolDefinitionError: ``name`` is not a valid tool name.
        """
        check_name(name)
        copied = self.__copy__()
        copied.name = name
        copied._strict = None  # its rendering names the tool
        return copied

    def invoke(
        self, arguments: Mapping[str, Any] | str | None = None, *, inject: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Validate, convert and run one call of this tool, and return its `ToolResult` (for tests and notebooks).

        ``arguments`` is what a model would send: a JSON object, as a dict or as text. The call
        runs exactly as `tinytools.dispatch` runs it, with this tool alone.
        """
        return _RUNNERS[0](self._call(arguments), self, inject=inject)  # type: ignore[no-any-return]

    async def ainvoke(
        self, arguments: Mapping[str, Any] | str | None = None, *, inject: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """`invoke` from async code: the call runs as `tinytools.adispatch` runs it."""
        return await _RUNNERS[1](self._call(arguments), self, inject=inject)  # type: ignore[no-any-return]

    def _call(self, arguments: Mapping[str, Any] | str | None) -> ToolCall:
        given: Any = {} if arguments is None else arguments
        return ToolCall(id=f"invoke-{self.name}-{next(_INVOCATIONS)}", name=self.name, arguments=given)

    def definition(self) -> dict[str, Any]:
        """The neutral declaration: ``{"name", "description", "input_schema"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        schema: Mapping[str, Any] | str | bytes,
        fn: Callable[..., Any],
        **options: Any,
    ) -> Tool[..., Any]:
        """Wrap a function that takes keyword arguments under a hand-written schema.

        Raises:
            SchemaError: The schema cannot be enforced exactly.
        """
        return Tool(
            fn,
            name=name,
            description=description,
            input_schema=InputSchema.parse(schema),
            **options,
        )


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    parallel_safe: bool | None = None,
    idempotent: bool = False,
    retries: int = 0,
    enabled: Callable[[Any], bool] | None = None,
    validate_output: bool = False,
    policy: ToolPolicy | None = None,
    format: ToolFormat | None = None,
    executor: str | None = None,
    expose_errors: tuple[type[BaseException], ...] = (),
    external: bool = False,
    background: bool = False,
    reconcile: Callable[..., Any] | None = None,
    cache_ttl: float | None = None,
    idempotency_key: Callable[[dict[str, Any]], Any] | None = None,
    defer: bool = False,
    examples: Iterable[dict[str, Any]] | None = None,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Turn a function into a `Tool`, bare (``@tool``) or with options (``@tool(name=...)``).

    Args:
        fn: The function (or bound method, callable object, ``functools.partial``); omitted
            when ``@tool(...)`` is given options.
        **options: Any of these, by keyword:

            - ``name``, ``description``: what the model is shown instead of the function's name
              and docstring.
            - ``timeout``: seconds a call may run.
            - ``parallel_safe``: False makes the tool serial in batches; True lets a method of
              `Toolbox.from_object`, serial by default, run concurrently.
            - ``idempotent``, ``retries``: a call may run again; retried (idempotent tools only)
              after a timeout or a `RetryableError`.
            - ``enabled``: a function of the application's state saying whether to offer the tool.
            - ``validate_output``: check return values against the output schema.
            - ``policy``: a `ToolPolicy`, what the tool may do (its ``runtime`` may carry the
              timeout and retries instead).
            - ``format``: a `ToolFormat` for text tool calls (JSON by default).
            - ``executor``: ``"inline"`` to stay in the dispatcher's process, ``"process"`` or the
              name of one of the dispatcher's executors.
            - ``expose_errors``: exception types whose message the model may read (redacted)
              instead of a generic message.
            - ``external``: the application runs the call elsewhere and resumes the pending call
              with the output.
            - ``background``: a call runs on after its turn, pending until it ends.
            - ``reconcile``: a function asked, after a crash, whether a started call happened.
            - ``cache_ttl``: seconds a read-only tool's result is reused for the same arguments.
            - ``idempotency_key``: a function of the validated, converted arguments saying what
              "the same act" is: calls of a run with the same key are one call, answered from
              the journal.
            - ``defer``: left out of exports until a tool search reveals it in a run.
            - ``examples``: whole calls' arguments, each checked against the schema now (sent as
              Anthropic's ``input_examples``).

    Raises:
        ToolDefinitionError: The signature cannot be expressed as a tool: ``*args`` or
            ``**kwargs``, a type with no JSON Schema that is not injected, or a bad name.
    """
    if fn is not None:
        return make_tool(fn, localns=sys._getframe(1).f_locals, **options)
    localns = sys._getframe(1).f_locals

    def decorate(function: Callable[P, R]) -> Tool[P, R]:
        return make_tool(function, localns=localns, **options)

    return decorate


def make_tool(
    fn: Callable[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    localns: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tool[P, R]:
    """Build a `Tool` from a callable's signature, hints and docstring (what `tool` does).

    ``fn`` may be a function, a bound method, a ``staticmethod`` or ``classmethod`` (in a class
    body, under ``@tool``), a ``functools.partial`` (the arguments it sets are hidden from the
    model) or an object with ``__call__``.
    """
    binds, static = None, False
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, Tool):  # @classmethod over @tool
        fn = fn.__func__.bound_to(fn.__self__).fn
    if isinstance(fn, Tool):
        binds, static, fn = fn.binds, fn.static, fn.fn
    if isinstance(fn, staticmethod):
        static, fn = True, fn.__func__
    elif isinstance(fn, classmethod):
        binds, fn = "class", fn.__func__
    tool_name = name if name is not None else default_name(fn)
    read = read_signature(fn, tool_name, localns, static=static)
    checks_later = read.late_return and read.method and options.get("validate_output", False)
    if checks_later:  # the output schema is known once the method is bound
        options["validate_output"] = False
    if description is None and not read.description:
        warnings.warn(
            f"tool {tool_name!r} has no description: the model reads only its name; "
            "give the function a docstring or pass description=",
            ToolDefinitionWarning,
            stacklevel=3,
        )
    made = Tool(
        fn,
        name=tool_name,
        description=description if description is not None else read.description,
        input_schema=read.input_schema,
        output_schema=read.output_schema,
        slots=read.slots,
        **options,
    )
    made.static = static
    made.fixed_secrets = read.fixed_secrets
    if read.method:
        made.binds = binds or "instance"
        made._late_return = read.late_return
        made.validate_output = made.validate_output or bool(checks_later)
    return made


def is_search(tool: Tool[..., Any]) -> bool:
    """Whether ``tool`` is a search tool made by `tinytools._search.search_tool` (under any name)."""
    return bool(getattr(tool.fn, SEARCHES, False))


publish("tinytools", Tool, tool)
