"""`@tool`, `Tool` and `Injected`: a plain function becomes a tool a model can call.

Defining a tool is a pipeline run once: read the signature and type hints, classify each
parameter (model-visible or injected), build its schema and converter, then assemble the
input schema. Nothing here is recomputed per call, and the validator compiles lazily.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, overload

import msgspec
import typing_extensions
from typing_extensions import ParamSpec

from tinytools._arguments import decoded_arguments, detached
from tinytools._convert import ConversionError, Converter, unchanged
from tinytools._providers import factory_for, provided
from tinytools.context import (
    INVOCATION_KEY,
    PROGRESS_KEY,
    SILENT_PROGRESS,
    STORES_KEY,
    Invocation,
    Progress,
    Stores,
)
from tinytools.docstrings import parse_docstring
from tinytools.errors import ECHO_LIMIT, ArgumentsError, InjectionError, ToolDefinitionError, shorten, unless_failed
from tinytools.limits import TOKEN_KEY, CancellationToken
from tinytools.policy import ToolPolicy
from tinytools.results import ToolCall
from tinytools.schema import SchemaBuilder, split_annotated, type_namespace, with_default
from tinytools.toolformat import ToolFormat
from tinytools.validation import InputSchema

__all__ = ["INJECTABLE_TYPES", "Injected", "Tool", "make_tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every provider accepts without escaping."""

INJECTABLE_TYPES: dict[type, str] = {
    ToolCall: "call",
    CancellationToken: "token",
    Invocation: "invocation",
    Progress: "progress",
    Stores: "stores",
}
"""Types a parameter receives by injection without an `Injected` marker, and their source."""

_EMPTY = inspect.Parameter.empty
_SCALARS = {"string", "integer", "boolean", "null"}
_RUNTIME_KEYS = {"token": TOKEN_KEY, "invocation": INVOCATION_KEY, "progress": PROGRESS_KEY, "stores": STORES_KEY}
_encode = msgspec.json.encode


class Injected:
    """Marks a parameter the application supplies; the model never sees it.

    ``Annotated[Session, Injected]`` is looked up by the parameter's name in ``inject=``;
    ``Annotated[str, Injected("api_key", secret=True)]`` by the key ``"api_key"``.
    ``Injected("db", remote=True)`` is made where the tool runs, by the factory registered with
    ``@provide("db")`` (`tinytools.executors`), when ``inject=`` does not hold it or the tool
    runs on an executor in another process.
    """

    __slots__ = ("key", "remote", "secret")

    def __init__(self, key: str | None = None, *, secret: bool = False, remote: bool = False):
        if secret and remote:
            raise ToolDefinitionError(
                "Injected(secret=True, remote=True): the dispatcher cannot redact a value made in a worker; "
                "pass the secret through inject= instead"
            )
        self.key = key
        """The key in ``inject=``; None means the parameter's own name."""
        self.secret = secret
        """Whether the value must be kept out of model-facing text."""
        self.remote = remote
        """Whether the value is made where the tool runs, by its `provide` factory."""

    def __repr__(self) -> str:
        return f"Injected({self.key!r}, secret={self.secret}, remote={self.remote})"


class Injection:
    """How one hidden parameter gets its value, decided once per tool."""

    __slots__ = ("default", "key", "parameter", "remote", "secret", "source")

    def __init__(self, parameter: str, key: str, source: str, default: Any, secret: bool, remote: bool = False):
        self.parameter = parameter
        self.key = key
        self.source = source
        self.default = default
        self.secret = secret
        self.remote = remote


class Tool(Generic[P, R]):
    """A function with a name, a description and an enforced input schema.

    A tool is still callable exactly like the function it wraps.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str,
        description: str,
        input_schema: InputSchema,
        output_schema: dict[str, Any] | None = None,
        converters: tuple[tuple[str, Converter, frozenset[type]], ...] = (),
        injections: tuple[Injection, ...] = (),
        timeout: float | None = None,
        parallel_safe: bool = True,
        idempotent: bool = False,
        retries: int = 0,
        enabled: Callable[[Any], bool] | None = None,
        validate_output: bool = False,
        policy: ToolPolicy | None = None,
        format: ToolFormat | None = None,
        keyword_call: Callable[..., Any] | None = None,
        executor: str | None = None,
    ):
        if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
            raise ToolDefinitionError(
                "a tool name is 1 to 64 ASCII letters, digits, '_' or '-'; pass name=...",
                tool=repr(name) if not isinstance(name, str) else name[:80],
            )
        self.fn = fn
        """The wrapped function."""
        self.name = name
        """The name the model calls the tool by."""
        self.description = description
        """What the model reads about the tool."""
        self.schema = input_schema
        """The enforced `InputSchema`."""
        self.output_schema = output_schema
        """JSON Schema of the return value, or None when it cannot be expressed."""
        self.injected = tuple(injection.parameter for injection in injections)
        """Names of the hidden parameters."""
        self.injection_sources = {i.parameter: i.source for i in injections}
        """Hidden parameter -> where its value comes from (``inject``, ``call``, ``token``, ...)."""
        self.wants = frozenset(i.source for i in injections) & {"token", "invocation", "progress", "stores"}
        """The runtime values it receives by type: ``token``, ``invocation``, ``progress``, ``stores``."""
        self.secret_keys = tuple(injection.key for injection in injections if injection.secret)
        """``inject`` keys whose values are redacted from everything the model sees."""
        self._detaches = not all(map(_scalar, input_schema.properties.values()))
        if validate_output and output_schema is None:
            raise ToolDefinitionError(
                "validate_output=True needs an output schema: annotate the return type", tool=name
            )
        self.validate_output = validate_output
        """Whether outputs are checked against `output_schema` (failing with ``invalid_output``)."""
        self._output_check: Callable[[Any], None] | None = None
        self.policy = policy if policy is not None else ToolPolicy()
        """What the tool declares it may do (`ToolPolicy`; unclassified by default)."""
        self.needs_approval = self.policy.access.approval_required
        """Whether every call needs an approver's yes (fail closed without one)."""
        self.is_async = inspect.iscoroutinefunction(fn)
        """Whether calling the function returns a coroutine."""
        self.timeout = timeout
        """Seconds a call may run, or None."""
        self.parallel_safe = parallel_safe
        """Whether calls may run concurrently with others in a batch."""
        self.idempotent = idempotent
        """Whether a repeated call is harmless (only idempotent tools retry)."""
        self.retries = retries
        """How many times an idempotent tool is retried after a timeout or `RetryableError`."""
        self.enabled = enabled
        """Says, from the application's state, whether the tool is offered this turn."""
        self.format = format if format is not None else ToolFormat.json()
        """How the tool is shown, and its calls read, when a model calls tools through text."""
        self.format.check(name, self.schema.properties)
        self.call = keyword_call or fn
        """The function as the dispatcher calls it: every argument by keyword."""
        self.executor = _check_executor(executor, name, self.is_async)
        """Where a `Dispatcher` runs it: None (its default), ``"inline"``, ``"process"`` or a name."""
        self.remote_keys = tuple((i.parameter, i.key) for i in injections if i.remote)
        """(parameter, key) of each value made where the tool runs (``Injected(..., remote=True)``)."""
        self._converters = converters
        self._injections = injections
        self._fragments: dict[str, str] = {}
        self._framings: dict[str, tuple[str, str]] = {}
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__

    @property
    def input_schema(self) -> dict[str, Any]:
        """The model-visible JSON Schema of the arguments."""
        return self.schema.schema

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the wrapped function directly, as if it were not a tool."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}>"

    def output_problem(self, output: Any) -> str | None:
        """Why ``output`` does not match the output schema, or None when it does."""
        if self.output_schema is None:
            return None
        if self._output_check is None:
            from tinytools.validation import compile_validator

            self._output_check = compile_validator(self.output_schema)
        try:
            self._output_check(output)
        except ArgumentsError as exc:
            return f"at {exc.pointer or '/'}: {exc.reason}"
        return None

    def fragment(self, parameter: str) -> str | None:
        """The JSON text of one argument's schema, quoted in error messages (cached).

        A ``$ref`` to ``$defs`` is shown as the definition it names.
        """
        cached = self._fragments.get(parameter)
        if cached is None and parameter in self.schema.properties:
            schema = self.schema.properties[parameter]
            ref = schema.get("$ref", "") if isinstance(schema, dict) else ""
            if ref.startswith("#/$defs/") and len(schema) == 1:
                schema = self.input_schema.get("$defs", {}).get(ref[8:], schema)
            cached = self._fragments[parameter] = shorten(_encode(schema).decode(), 400)
        return cached

    def framing(self, parameter: str) -> tuple[str, str]:
        """The text around an invalid-argument message for ``parameter``.

        What comes before its pointer, and what follows the reason (its schema); kept for the
        tool's own arguments.
        """
        cached = self._framings.get(parameter)
        if cached is not None:
            return cached
        quoted = repr(parameter) if len(parameter) <= ECHO_LIMIT else repr(shorten(parameter))
        fragment = self.fragment(parameter)
        tail = "." if fragment is None else f". Schema of {quoted}: {fragment}"
        framing = f"Invalid arguments: tool {self.name!r}, argument {quoted} at ", tail
        if parameter in self.schema.properties:  # not a key the model made up: their number is unbounded
            self._framings[parameter] = framing
        return framing

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

    def bind(self, call: ToolCall, inject: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Decode and validate a call's arguments, then build the function's keywords.

        Raises:
            ArgumentsError: The arguments are not JSON (``keyword == "json"``), fail the
                schema, or cannot become their declared types.
            InjectionError: An injected value is missing.
        """
        return unless_failed(self.try_bind(call, inject))

    def try_bind(self, call: ToolCall, inject: Mapping[str, Any] | None = None) -> dict[str, Any] | ArgumentsError:
        """`bind`, except that arguments failing the schema come back as the `ArgumentsError`.

        The dispatchers' way: raising the error would cost more than the rest of a bad call.

        Raises:
            ArgumentsError: The arguments are not JSON, or cannot become their declared types.
            InjectionError: An injected value is missing.
        """
        arguments = call.arguments
        if arguments.__class__ is not dict:
            arguments = decoded_arguments(call)
        elif self._detaches:  # what the tool changes stays its own; NaN is refused as in text
            arguments = detached(arguments)
        problem = self.schema.check(arguments)
        if problem is not None:
            return problem
        if self._converters:
            arguments = self._convert(arguments)
        if self._injections:
            arguments = self._inject(arguments, inject, call)
        return arguments  # type: ignore[no-any-return]

    def positional(self, call: ToolCall) -> tuple[Any, ...] | list[Any] | None:
        """The function's positional arguments, read straight from the call's JSON text; or None.

        This is the fast way in (see `tinytools._typed`), open to tools with a plain schema and
        no injected values. None means the call takes the general way, `bind`: so does every
        call the typed decoder refuses, which includes every invalid one. The first call builds
        the reader, which then replaces this method.

        Raises:
            ArgumentsError: The text names a key twice, or a value cannot become its type.
        """
        from tinytools._typed import positional_reader

        try:
            reader = positional_reader(self) or _general
        except Exception:  # the fast way is an optimisation: whatever stops it, the general way stands
            reader = _general
        self.__dict__["positional"] = reader
        return reader(call)

    def keywords(self, args: tuple[Any, ...] | list[Any]) -> dict[str, Any]:
        """What `positional` read, as the keyword arguments `bind` gives (``call`` takes them).

        An argument the call left out is passed as the function's own default object.
        """
        return dict(zip(self.schema.properties, args, strict=True))

    def prepare(self, arguments: dict[str, Any], inject: Mapping[str, Any] | None, call: ToolCall) -> dict[str, Any]:
        """Turn validated arguments into the function's keyword arguments.

        Converts values to the declared types, then adds the injected values. The caller's
        dict is never modified.

        Raises:
            ArgumentsError: A value passed the schema but cannot become its type.
            InjectionError: An injected value is missing.
        """
        if self._converters:
            arguments = self._convert(arguments)
        if self._injections:
            arguments = self._inject(arguments, inject, call)
        return arguments

    def _inject(self, arguments: dict[str, Any], inject: Mapping[str, Any] | None, call: ToolCall) -> dict[str, Any]:
        arguments = {**arguments}
        for injection in self._injections:
            arguments[injection.parameter] = self._injected_value(injection, inject, call)
        return arguments

    def _convert(self, arguments: dict[str, Any]) -> dict[str, Any]:
        converted = arguments
        for name, convert, keep in self._converters:
            value = arguments.get(name, _EMPTY)
            if value is _EMPTY or value.__class__ in keep:
                continue
            try:
                new = convert(value)
            except ConversionError as exc:
                raise self._conversion_error(name, exc) from None
            if new is not value:  # copy on first change: most calls change nothing
                if converted is arguments:
                    converted = {**arguments}
                converted[name] = new
        return converted

    def _conversion_error(self, name: str, exc: ConversionError) -> ArgumentsError:
        path = [name, *exc.path]
        pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
        return ArgumentsError(
            exc.reason,
            pointer=pointer,
            keyword="format",
            parameter=name,
            tool=self.name,
            schema=self.input_schema["properties"].get(name),
        )

    def _injected_value(self, injection: Injection, inject: Mapping[str, Any] | None, call: ToolCall) -> Any:
        source = injection.source
        if source == "call":
            return call
        if source != "inject":  # a runtime value by type: the dispatcher's, or a stand-alone one
            value = inject.get(_RUNTIME_KEYS[source]) if inject is not None else None
            return value if value is not None else self._standalone(source, call)
        if inject is not None and injection.key in inject:
            return inject[injection.key]
        factory = factory_for(injection.key) if injection.remote else None
        if factory is not None:  # made here, once per process: the tool runs in this one
            return provided(factory)
        if injection.default is not _EMPTY:
            return injection.default
        raise InjectionError(tool=self.name, parameter=injection.parameter, key=injection.key)

    def _standalone(self, source: str, call: ToolCall) -> Any:
        """A runtime value for a call made without a `Dispatcher` (plain `dispatch`)."""
        if source == "token":
            return CancellationToken()
        if source == "invocation":
            return Invocation(call, self.name)
        if source == "progress":
            return SILENT_PROGRESS
        return Stores()

    def bind_strict(self, call: ToolCall, inject: Mapping[str, Any] | None, strict: Any) -> dict[str, Any]:
        """`bind` against a strict-mode rendering: ``null`` for an omitted optional becomes omitted.

        Raises:
            ArgumentsError: The arguments are not JSON or fail the strict schema.
        """
        arguments = decoded_arguments(call)
        strict.validate(arguments)
        return self.prepare(strict.restore(arguments), inject, call)


def _general(call: ToolCall) -> None:
    """The reader of a tool without a fast way in: every call is bound the general way."""
    return None


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    parallel_safe: bool = True,
    idempotent: bool = False,
    retries: int = 0,
    enabled: Callable[[Any], bool] | None = None,
    validate_output: bool = False,
    policy: ToolPolicy | None = None,
    format: ToolFormat | None = None,
    executor: str | None = None,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Turn a function into a `Tool`, bare (``@tool``) or with options (``@tool(name=...)``).

    Options: ``name``, ``description``, ``timeout`` (seconds), ``parallel_safe`` (False makes
    the tool serial in batches), ``idempotent``, ``retries`` (idempotent tools only), and
    ``enabled`` (a function of the application's state saying whether to offer the tool),
    ``validate_output`` (check return values against the output schema), ``policy``
    (a `ToolPolicy`: what the tool may do), ``format`` (a `ToolFormat` for text tool calls,
    JSON by default), and ``executor`` (``"inline"`` to stay in the
    dispatcher's process, ``"process"`` or the name of one of the dispatcher's executors).

    Raises:
        ToolDefinitionError: The signature cannot be expressed as a tool: ``*args`` or
            ``**kwargs``, a type with no JSON Schema that is not injected, or a bad name.
    """
    if fn is not None:
        return make_tool(fn, localns=sys._getframe(1).f_locals, **options)
    localns_holder: list[dict[str, Any]] = []

    def decorate(function: Callable[P, R]) -> Tool[P, R]:
        return make_tool(function, localns=localns_holder[0] if localns_holder else None, **options)

    localns_holder.append(sys._getframe(1).f_locals)
    return decorate


def make_tool(
    fn: Callable[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    localns: Mapping[str, Any] | None = None,
    **options: Any,
) -> Tool[P, R]:
    """Build a `Tool` from a function's signature, hints and docstring (what `tool` does)."""
    if isinstance(fn, Tool):
        fn = fn.fn
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    hints = _type_hints(fn, tool_name, localns)
    docs = parse_docstring(fn)
    builder = SchemaBuilder(tool_name, localns=localns)
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: list[tuple[str, Converter, frozenset[type]]] = []
    injections: list[Injection] = []
    signature = inspect.signature(fn)
    for parameter in signature.parameters.values():
        _check_kind(parameter, tool_name)
        hint = hints.get(parameter.name, Any)
        injection = _injection(parameter, hint)
        if injection is not None:
            injections.append(injection)
            continue
        schema, convert = builder.build(hint, parameter.name)
        if "description" not in schema and parameter.name in docs.parameters:
            schema = {**schema, "description": docs.parameters[parameter.name]}
        if parameter.default is _EMPTY:
            required.append(parameter.name)
        else:
            schema = with_default(schema, parameter.default)
        properties[parameter.name] = schema
        if convert is not None:
            converters.append((parameter.name, convert, unchanged(convert)))
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        root["required"] = required
    root["additionalProperties"] = False
    if builder.defs:
        root["$defs"] = builder.defs
    return Tool(
        fn,
        name=tool_name,
        description=description if description is not None else docs.description,
        input_schema=_parse_generated(root, tool_name),
        output_schema=_output_schema(hints, tool_name, localns),
        converters=tuple(converters),
        injections=tuple(injections),
        keyword_call=_keyword_caller(fn, signature),
        **options,
    )


def _scalar(schema: Any) -> bool:
    """Whether every value ``schema`` accepts is a string, an integer, a boolean or null."""
    types = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(types, str):
        types = [types]
    return isinstance(types, list) and bool(types) and set(types) <= _SCALARS


def _type_hints(fn: Callable[..., Any], tool_name: str, localns: Mapping[str, Any] | None) -> dict[str, Any]:
    try:
        return typing_extensions.get_type_hints(fn, localns=type_namespace(localns), include_extras=True)
    except NameError as exc:
        raise ToolDefinitionError(
            f"cannot resolve a type hint ({exc}); define the type at module level or import it",
            tool=tool_name,
        ) from None


def _check_kind(parameter: inspect.Parameter, tool_name: str) -> None:
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        raise ToolDefinitionError(
            "*args cannot be expressed as JSON arguments; use a list parameter",
            tool=tool_name,
            parameter=parameter.name,
        )
    if parameter.kind is inspect.Parameter.VAR_KEYWORD:
        raise ToolDefinitionError(
            "**kwargs cannot be expressed as JSON arguments; declare each parameter or use a dict parameter",
            tool=tool_name,
            parameter=parameter.name,
        )


def _check_executor(executor: Any, tool_name: str, is_async: bool) -> str | None:
    if executor is not None and (not isinstance(executor, str) or not executor):
        raise ToolDefinitionError(f"executor= takes the name of an executor, not {executor!r}", tool=tool_name)
    if is_async and executor not in (None, "inline"):
        raise ToolDefinitionError(
            f"an async tool runs on the dispatcher's event loop; executor={executor!r} is for sync tools",
            tool=tool_name,
        )
    return executor


def _injection(parameter: inspect.Parameter, hint: Any) -> Injection | None:
    base, metadata = split_annotated(hint)
    for item in metadata:
        if item is Injected or isinstance(item, Injected):
            key = item.key if isinstance(item, Injected) and item.key else parameter.name
            secret = isinstance(item, Injected) and item.secret
            remote = isinstance(item, Injected) and item.remote
            source = INJECTABLE_TYPES.get(base, "inject") if base in INJECTABLE_TYPES else "inject"
            return Injection(parameter.name, key, source, parameter.default, secret, remote)
    if isinstance(base, type) and base in INJECTABLE_TYPES:
        return Injection(parameter.name, parameter.name, INJECTABLE_TYPES[base], parameter.default, False)
    return None


def _keyword_caller(fn: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any] | None:
    """Let positional-only parameters be passed by keyword, as the dispatcher does."""
    positional = [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    if not positional:
        return None

    def call_by_keyword(**kwargs: Any) -> Any:
        args = [kwargs.pop(name) for name in positional if name in kwargs]
        return fn(*args, **kwargs)

    call_by_keyword.__name__ = getattr(fn, "__name__", "tool")
    call_by_keyword.__doc__ = fn.__doc__
    call_by_keyword.by_position = fn  # type: ignore[attr-defined]  # what a positional call may call instead
    if inspect.iscoroutinefunction(fn):

        async def acall_by_keyword(**kwargs: Any) -> Any:
            return await call_by_keyword(**kwargs)

        acall_by_keyword.by_position = fn  # type: ignore[attr-defined]
        return acall_by_keyword
    return call_by_keyword


def _parse_generated(root: dict[str, Any], tool_name: str) -> InputSchema:
    try:
        return InputSchema.parse(root, copy=False)
    except ToolDefinitionError as exc:
        exc.tool = tool_name
        raise


def _output_schema(hints: dict[str, Any], tool_name: str, localns: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if "return" not in hints:
        return None
    builder = SchemaBuilder(tool_name, localns=localns)
    try:
        schema, _ = builder.build(hints["return"])
    except ToolDefinitionError:
        return None
    if builder.defs:
        schema = {**schema, "$defs": builder.defs}
    return schema
