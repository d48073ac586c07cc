"""Reading a function into a tool's definition: its parameters, once, and its canonical schema.

Defining a tool is a pipeline of named steps, run once: read the signature and type hints,
classify each parameter (model-visible, or injected by the application or the dispatcher),
normalise its type into a schema and a converter, then render the input schema. Each parameter
becomes a `Slot`: the record the schema, the strict rendering, the converters and the binding
of a call's values all read, so none of them inspects the function again.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import typing_extensions

from tinytools._context import Ask, CancellationToken, Discovery, IdempotencyKey, Invocation, Progress, Stores
from tinytools._errors import ToolDefinitionError
from tinytools._public import publish
from tinytools._results import ToolCall
from tinytools._schema.annotations import field_alias, field_default, pydantic_field, split_annotated
from tinytools._schema.callables import (
    Parameter,
    default_name,
    parameters_of,
    return_hint,
    stream_kind,
    target_of,
    type_hints_of,
    yielded,
)
from tinytools._schema.converters import Converter, unchanged
from tinytools._schema.docstrings import describe_callable, parse_docstring
from tinytools._schema.fragments import with_default
from tinytools._schema.hints import SchemaBuilder
from tinytools._schema.input_schema import InputSchema
from tinytools._schema.type_forms import SELF_TYPES, UNIONS

__all__ = [
    "EMPTY",
    "INJECTABLE_TYPES",
    "Injected",
    "Injection",
    "Signature",
    "Slot",
    "default_name",
    "output_schema",
    "read_signature",
    "return_hint",
]

EMPTY = inspect.Parameter.empty
"""A slot's default when it has none."""

INJECTABLE_TYPES: dict[type, str] = {
    ToolCall: "call",
    CancellationToken: "token",
    Invocation: "invocation",
    Progress: "progress",
    Stores: "stores",
    IdempotencyKey: "key",
    Ask: "ask",
    Discovery: "discovery",
}
"""Types a parameter receives by injection without an `Injected` marker, and their source."""


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

    __slots__ = ("key", "remote", "secret", "source")

    def __init__(self, key: str, source: str, *, secret: bool = False, remote: bool = False):
        self.key = key
        """The key in ``inject=`` (for the ``inject`` source)."""
        self.source = source
        """``inject`` (the application's), or a runtime value: ``call``, ``token``, ``invocation``, ..."""
        self.secret = secret
        """Whether the value is kept out of everything the model reads."""
        self.remote = remote
        """Whether a `provide` factory makes it where the tool runs."""


class Slot:
    """One parameter of a tool's function: where its value comes from and how it is passed."""

    __slots__ = (
        "convert",
        "default",
        "factory",
        "fills",
        "injection",
        "keep",
        "keyword_only",
        "name",
        "parameter",
        "positional_only",
    )

    def __init__(
        self,
        name: str,
        *,
        kind: inspect._ParameterKind,
        default: Any,
        injection: Injection | None = None,
        convert: Converter | None = None,
        parameter: str | None = None,
        factory: Callable[[], Any] | None = None,
        fills: bool = False,
    ):
        self.name = name
        """The name the model sends the value by: the schema property (a ``Field`` alias, or the parameter's name)."""
        self.parameter = name if parameter is None else parameter
        """The function's own name for the parameter (the keyword it is passed by)."""
        self.positional_only = kind is inspect.Parameter.POSITIONAL_ONLY
        """Whether the value must be passed by position (a parameter before ``/``)."""
        self.keyword_only = kind is inspect.Parameter.KEYWORD_ONLY
        """Whether the value must be passed by keyword (a parameter after ``*``)."""
        self.default = default
        """The value an omitted argument takes (the function's own default, or its ``Field``'s), or `EMPTY`."""
        self.factory = factory
        """Makes the value of an omitted argument afresh for each call (a ``Field``'s ``default_factory``)."""
        self.fills = fills
        """Whether an omitted argument is passed explicitly (`default` or `factory`), not left to the function.

        True when the function's own default is not the value (``x: int = Field(3)``).
        """
        self.injection = injection
        """How a hidden parameter gets its value; None for one the model sends."""
        self.convert = convert
        """Turns a validated JSON value into the declared type; None when it already is it."""
        self.keep = unchanged(convert) if convert is not None else frozenset()
        """Classes of JSON values the converter would hand back unchanged."""


class Signature:
    """What reading a function gives: its slots, its schemas and its description."""

    __slots__ = ("description", "fixed_secrets", "input_schema", "late_return", "method", "output_schema", "slots")

    def __init__(
        self,
        slots: tuple[Slot, ...],
        input_schema: InputSchema,
        output_schema: dict[str, Any] | None,
        description: str,
        *,
        method: bool = False,
        late_return: bool = False,
        fixed_secrets: tuple[Any, ...] = (),
    ):
        self.slots = slots
        """Every parameter, in signature order."""
        self.input_schema = input_schema
        """The canonical input schema: the model-visible slots as a closed object."""
        self.output_schema = output_schema
        """The return annotation's schema, or None."""
        self.description = description
        """The docstring's description."""
        self.method = method
        """Whether the function is a method not yet bound: its first parameter (``self``/``cls``) is left out."""
        self.fixed_secrets = fixed_secrets
        """Secret values the callable carries itself (a partial's, set for an ``Injected(secret=True)`` parameter)."""
        self.late_return = late_return
        """Whether the return type is known only once the method's class is: ``Self``, or the class itself."""


def read_signature(
    fn: Callable[..., Any], name: str, localns: Mapping[str, Any] | None, *, static: bool = False
) -> Signature:
    """Read ``fn`` into slots and schemas (what `tinytools.tool` does when defining a tool).

    ``fn`` is a function, a bound method, a ``functools.partial`` (the arguments it sets are
    hidden) or an object with ``__call__``. A function defined in a class body that takes a
    positional parameter first is read as a method, that receiver left out, unless ``static``.

    Raises:
        ToolDefinitionError: A parameter cannot be expressed: ``*args``, ``**kwargs``, or a type
            with no JSON Schema that is not injected; or ``fn`` is not a callable tinytools can read.
    """
    target = target_of(fn, name, static=static)
    hints, late = type_hints_of(target.hints, name, localns, method=target.drop_first)
    docs = parse_docstring(target.docs) if target.called is None else describe_callable(target.called)
    builder = SchemaBuilder(name, localns=localns, self_type=target.self_type)
    slots: list[Slot] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters_of(fn, target, name):
        _check_kind(parameter, name)
        hint = hints.get(parameter.name, Any)
        base, metadata = split_annotated(hint)
        injection = _injection(parameter, base, metadata)
        if injection is not None:
            slots.append(_hidden(parameter, hint, injection))
            continue
        slot, schema = _visible(parameter, base, metadata, builder, docs.parameters.get(parameter.name))
        if slot.name in properties:
            raise ToolDefinitionError(
                f"two parameters are sent as {slot.name!r}; give one another alias", tool=name, parameter=slot.parameter
            )
        if slot.default is EMPTY and slot.factory is None:
            required.append(slot.name)
        properties[slot.name] = schema
        slots.append(slot)
    root = _root(properties, required, builder.defs)
    returns = hints.get("return")
    if "return" in hints and stream_kind(fn) is not None:  # a stream's output is its pieces' kind
        returns = yielded(returns)
    return Signature(
        tuple(slots),
        _parse_generated(root, name, enforceable=builder.enforceable),
        output_schema(returns, name, localns, target.self_type) if "return" in hints else None,
        docs.description,
        method=target.drop_first,
        late_return=late or returns in SELF_TYPES,
        fixed_secrets=_bound_secrets(target.bound, hints),
    )


def _bound_secrets(bound: Mapping[str, Any], hints: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values a partial set for parameters marked ``Injected(secret=True)``: still secrets."""
    return tuple(
        value
        for name, value in bound.items()
        if any(isinstance(item, Injected) and item.secret for item in split_annotated(hints.get(name, Any))[1])
    )


def _hidden(parameter: Parameter, hint: Any, injection: Injection) -> Slot:
    """The slot of an injected parameter; a ``Field`` default is its fallback, as a plain default is."""
    default, factory = parameter.default, None
    field = default if pydantic_field(default) else _annotated_field(hint)
    if field is not None and (default is field or default is EMPTY):
        default, factory = field_default(field)
    return Slot(parameter.name, kind=parameter.kind, default=default, injection=injection, factory=factory)


def _visible(
    parameter: Parameter,
    base: Any,
    metadata: tuple[Any, ...],
    builder: SchemaBuilder,
    documented: str | None,
) -> tuple[Slot, dict[str, Any]]:
    """The slot and the schema of a parameter the model sends, a pydantic ``Field`` honoured.

    A ``Field`` may sit in ``Annotated`` and be the default too: the default's says the default, and
    the alias is the last one given. A mutable ``Field`` default is copied for each call, as
    pydantic does; a plain Python default keeps Python's meaning.
    """
    default = parameter.default
    fields = [item for item in metadata if pydantic_field(item)] if metadata else []
    if pydantic_field(default):
        fields.append(default)
        metadata = (*metadata, default)  # its description and bounds, read like Annotated's
    field = fields[-1] if fields else None
    schema, convert = builder.parameter(base, metadata, parameter.name)
    if "description" not in schema and documented:
        schema = {**schema, "description": documented}
    factory = None
    if field is not None and (default is field or default is EMPTY):
        default, factory = field_default(field)
        if factory is None and default is not EMPTY and not _immutable(default):
            import copy  # loaded with the first mutable default that needs copies

            factory = functools.partial(copy.deepcopy, default)
    if default is not EMPTY:
        schema = with_default(schema, default, builder.tool, parameter.name)
    slot = Slot(
        _alias(fields, builder.tool, parameter.name),
        kind=parameter.kind,
        default=default,
        convert=convert,
        parameter=parameter.name,
        factory=factory,
        fills=default is not parameter.default or factory is not None,
    )
    return slot, schema


def _alias(fields: list[Any], tool_name: str, parameter: str) -> str:
    """The name the model sends a parameter by: the last ``Field`` alias given, else its own name."""
    try:
        aliases = [alias for alias in map(field_alias, fields) if alias is not None]
    except ValueError as exc:
        raise ToolDefinitionError(str(exc), tool=tool_name, parameter=parameter) from None
    return aliases[-1] if aliases else parameter


_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), frozenset, tuple, enum.Enum)


def _immutable(value: Any) -> bool:
    """Whether a default can be shared between calls (a tuple only when its items can)."""
    if isinstance(value, tuple):
        return all(map(_immutable, value))
    return isinstance(value, _IMMUTABLE)


def _annotated_field(hint: Any) -> Any:
    """The last pydantic ``Field(...)`` in ``Annotated`` metadata, or None."""
    fields = [item for item in split_annotated(hint)[1] if pydantic_field(item)]
    return fields[-1] if fields else None


def _root(properties: dict[str, Any], required: list[str], defs: dict[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        root["required"] = required
    root["additionalProperties"] = False
    if defs:
        root["$defs"] = defs
    return root


def _check_kind(parameter: Parameter, tool_name: str) -> None:
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


def _injection(parameter: Parameter, base: Any, metadata: tuple[Any, ...]) -> Injection | None:
    """How a parameter of type ``base`` (with ``Annotated`` ``metadata``) is injected; None if the model sends it."""
    if base.__class__ is type and not metadata:  # the common case: a plain class
        source = INJECTABLE_TYPES.get(base)
        return None if source is None else Injection(parameter.name, source)
    members = [arg for arg in typing_extensions.get_args(base) if arg is not type(None)]
    if typing_extensions.get_origin(base) in UNIONS and len(members) == 1:
        base = members[0]  # `Invocation | None = None`: still the runtime's value
    source = INJECTABLE_TYPES.get(base, "inject") if isinstance(base, type) else "inject"
    for item in metadata:
        if item is Injected or isinstance(item, Injected):
            marker = item if isinstance(item, Injected) else Injected()
            return Injection(marker.key or parameter.name, source, secret=marker.secret, remote=marker.remote)
    if source != "inject":
        return Injection(parameter.name, source)
    return None


def _parse_generated(root: dict[str, Any], tool_name: str, *, enforceable: bool) -> InputSchema:
    try:
        return InputSchema.built(root) if enforceable else InputSchema.parse(root, copy=False)
    except ToolDefinitionError as exc:
        exc.tool = tool_name
        raise


def output_schema(
    returns: Any, tool_name: str, localns: Mapping[str, Any] | None, self_type: type | None = None
) -> dict[str, Any] | None:
    """The JSON Schema of a return annotation, or None when it has none (``Self`` needs ``self_type``)."""
    builder = SchemaBuilder(tool_name, localns=localns, self_type=self_type, output=True)
    try:
        schema, _ = builder.build(returns)
    except ToolDefinitionError:
        return None
    if builder.defs:
        schema = {**schema, "$defs": builder.defs}
    return schema


publish("tinytools", Injected)
