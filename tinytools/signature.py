"""Reading a function into a tool's definition: its parameters, once, and its canonical schema.

Defining a tool is a pipeline of named steps, run once: read the signature and type hints,
classify each parameter (model-visible, or injected by the application or the dispatcher),
normalise its type into a schema and a converter, then render the input schema. Each parameter
becomes a `Slot`: the record the schema, the strict rendering, the converters and the binding
of a call's values all read, so none of them inspects the function again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import typing_extensions

from tinytools.context import CancellationToken, Invocation, Progress, Stores
from tinytools.errors import ToolDefinitionError
from tinytools.results import ToolCall
from tinytools.schema.annotations import split_annotated
from tinytools.schema.convert import Converter, unchanged
from tinytools.schema.docstrings import parse_docstring
from tinytools.schema.hints import SchemaBuilder, type_namespace
from tinytools.schema.shapes import with_default
from tinytools.schema.validation import InputSchema

__all__ = ["EMPTY", "INJECTABLE_TYPES", "Injected", "Injection", "Signature", "Slot", "read_signature"]

EMPTY = inspect.Parameter.empty
"""A slot's default when it has none."""

INJECTABLE_TYPES: dict[type, str] = {
    ToolCall: "call",
    CancellationToken: "token",
    Invocation: "invocation",
    Progress: "progress",
    Stores: "stores",
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

    __slots__ = ("convert", "default", "injection", "keep", "keyword_only", "name", "positional_only")

    def __init__(
        self,
        name: str,
        *,
        kind: inspect._ParameterKind,
        default: Any,
        injection: Injection | None = None,
        convert: Converter | None = None,
    ):
        self.name = name
        """The parameter's name (the schema property, for a model-visible one)."""
        self.positional_only = kind is inspect.Parameter.POSITIONAL_ONLY
        """Whether the value must be passed by position (a parameter before ``/``)."""
        self.keyword_only = kind is inspect.Parameter.KEYWORD_ONLY
        """Whether the value must be passed by keyword (a parameter after ``*``)."""
        self.default = default
        """The function's own default object, or `EMPTY`."""
        self.injection = injection
        """How a hidden parameter gets its value; None for one the model sends."""
        self.convert = convert
        """Turns a validated JSON value into the declared type; None when it already is it."""
        self.keep = unchanged(convert) if convert is not None else frozenset()
        """Classes of JSON values the converter would hand back unchanged."""


class Signature:
    """What reading a function gives: its slots, its schemas and its description."""

    __slots__ = ("description", "input_schema", "output_schema", "slots")

    def __init__(
        self,
        slots: tuple[Slot, ...],
        input_schema: InputSchema,
        output_schema: dict[str, Any] | None,
        description: str,
    ):
        self.slots = slots
        """Every parameter, in signature order."""
        self.input_schema = input_schema
        """The canonical input schema: the model-visible slots as a closed object."""
        self.output_schema = output_schema
        """The return annotation's schema, or None."""
        self.description = description
        """The docstring's description."""


def read_signature(fn: Callable[..., Any], name: str, localns: Mapping[str, Any] | None) -> Signature:
    """Read ``fn`` into slots and schemas (what `tinytools.tool` does when defining a tool).

    Raises:
        ToolDefinitionError: A parameter cannot be expressed: ``*args``, ``**kwargs``, or a type
            with no JSON Schema that is not injected.
    """
    hints = _type_hints(fn, name, localns)
    docs = parse_docstring(fn)
    builder = SchemaBuilder(name, localns=localns)
    slots: list[Slot] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(fn).parameters.values():
        _check_kind(parameter, name)
        hint = hints.get(parameter.name, Any)
        injection = _injection(parameter, hint)
        if injection is not None:
            slots.append(Slot(parameter.name, kind=parameter.kind, default=parameter.default, injection=injection))
            continue
        schema, convert = builder.build(hint, parameter.name)
        if "description" not in schema and parameter.name in docs.parameters:
            schema = {**schema, "description": docs.parameters[parameter.name]}
        if parameter.default is EMPTY:
            required.append(parameter.name)
        else:
            schema = with_default(schema, parameter.default)
        properties[parameter.name] = schema
        slots.append(Slot(parameter.name, kind=parameter.kind, default=parameter.default, convert=convert))
    root = _root(properties, required, builder.defs)
    return Signature(tuple(slots), _parse_generated(root, name), _output_schema(hints, name, localns), docs.description)


def _root(properties: dict[str, Any], required: list[str], defs: dict[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        root["required"] = required
    root["additionalProperties"] = False
    if defs:
        root["$defs"] = defs
    return root


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


def _injection(parameter: inspect.Parameter, hint: Any) -> Injection | None:
    """How a parameter is injected, or None when the model sends it."""
    base, metadata = split_annotated(hint)
    source = INJECTABLE_TYPES.get(base, "inject") if isinstance(base, type) else "inject"
    for item in metadata:
        if item is Injected or isinstance(item, Injected):
            marker = item if isinstance(item, Injected) else Injected()
            return Injection(marker.key or parameter.name, source, secret=marker.secret, remote=marker.remote)
    if source != "inject":
        return Injection(parameter.name, source)
    return None


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
