"""What kind of callable a tool wraps, and where its hints, docstring and parameters are read.

A function is read as it is; a bound method without its ``self``; a ``functools.partial``
without the arguments it sets; an object with ``__call__`` through its class's ``__call__``; a
function defined in a class body that takes a positional parameter first as a method not yet
bound, whatever that receiver is called (`tinytools.Tool` binds it), unless it came as a
``staticmethod``. A class, or anything not callable, is refused.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import typing_extensions

from tinytools._errors import ToolDefinitionError
from tinytools._schema.hints import type_namespace

__all__ = [
    "Parameter",
    "Target",
    "default_name",
    "is_async",
    "parameters_of",
    "return_hint",
    "stream_kind",
    "target_of",
    "type_hints_of",
    "yielded",
]


class Target:
    """Where to read a callable's hints, docstring and name, and which of its parameters to leave out."""

    __slots__ = ("bound", "called", "docs", "drop_first", "hidden", "hints", "name", "self_type")

    def __init__(self, hints: Any, docs: Any, name: str, *, bound: dict[str, Any] | None = None):
        self.hints = hints
        self.docs = docs
        self.name = name
        self.bound = bound or {}
        """Parameter -> value a ``functools.partial`` already set (by keyword or by position)."""
        self.hidden = frozenset(self.bound)
        """Parameters a ``functools.partial`` already set: not the model's to send."""
        self.drop_first = False
        """Whether the first parameter is an unbound method's ``self``/``cls``."""
        self.self_type: type | None = None
        """The class ``Self`` stands for, when known (a bound method's)."""
        self.called: type | None = None
        """For an object with ``__call__``, its class: the docs are its ``__call__``'s, then its own."""


def default_name(fn: Callable[..., Any]) -> str:
    """The name a tool made from ``fn`` gets unless given one: the function's (or the callable's class's)."""
    return target_of(fn, "").name


def target_of(fn: Any, tool_name: str, *, static: bool = False) -> Target:
    """Where a callable's hints, docstring and name are read (see `Target`).

    ``static`` says ``fn`` came as a ``staticmethod``: a function of a class body that has no receiver.

    Raises:
        ToolDefinitionError: ``fn`` is a class, or not callable.
    """
    if isinstance(fn, functools.partial):
        inner = target_of(fn.func, tool_name, static=static)
        return Target(inner.hints, inner.docs, inner.name, bound={**inner.bound, **_partial_values(fn)})
    if isinstance(fn, types.MethodType):
        target = Target(fn, fn, fn.__name__)
        owner = fn.__self__
        target.self_type = owner if isinstance(owner, type) else type(owner)
        return target
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        target = Target(fn, fn, fn.__name__)
        target.drop_first = not static and isinstance(fn, types.FunctionType) and _unbound_method(fn)
        return target
    if isinstance(fn, type):
        raise ToolDefinitionError(
            f"{fn.__name__} is a class, not a function: make a tool of a function, of an instance with "
            "__call__, or of an instance's methods with Toolbox.from_object(instance)",
            tool=tool_name or fn.__name__,
        )
    if not callable(fn):
        raise ToolDefinitionError(f"{fn!r:.80} is not callable: a tool wraps a function", tool=tool_name)
    call = type(fn).__call__
    target = Target(call, call, type(fn).__name__)
    target.self_type = target.called = type(fn)
    return target


def _unbound_method(fn: types.FunctionType) -> bool:
    """Whether ``fn`` was defined in a class body and takes a receiver (its first positional parameter).

    The receiver is found by its place, not its name: ``def m(this, x)`` binds ``this`` as Python
    itself would, so a model can never send it.
    """
    owner, _, _ = fn.__qualname__.rpartition(".")
    if not owner or owner.endswith("<locals>"):
        return False
    if isinstance(_class_attribute(fn, owner), staticmethod):  # `tool(Ledger.plain)` of a static method
        return False
    first = next(iter(inspect.signature(fn).parameters.values()), None)
    return first is not None and first.kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


def _class_attribute(fn: types.FunctionType, owner: str) -> Any:
    """What the class ``owner`` (a dotted path in ``fn``'s module) holds under ``fn``'s name, or None.

    None also when the class cannot be reached: it is still being defined (``@tool`` in its
    body), or it lives in a function.
    """
    found: Any = fn.__globals__.get(owner.partition(".")[0])
    for part in owner.split(".")[1:]:
        found = getattr(found, part, None)
    return vars(found).get(fn.__name__) if isinstance(found, type) else None


def _partial_values(fn: functools.partial[Any]) -> dict[str, Any]:
    """Parameter -> value of what a partial sets: its keywords, and its positional arguments by name."""
    values: dict[str, Any] = {}
    if fn.args:
        try:
            positional = [
                parameter.name
                for parameter in inspect.signature(fn.func).parameters.values()
                if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            ]
        except (TypeError, ValueError):
            positional = []
        values.update(zip(positional, fn.args, strict=False))
    values.update(fn.keywords)
    return values


class Parameter(NamedTuple):
    """What a tool reads of a parameter: its name, its kind (an ``inspect.Parameter`` kind) and its default."""

    name: str
    kind: inspect._ParameterKind
    default: Any
    """The function's own default, or ``inspect.Parameter.empty``."""


_P = inspect.Parameter
_VARARGS, _VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def parameters_of(fn: Callable[..., Any], target: Target, tool_name: str) -> list[Parameter]:
    """The parameters the tool reads: the signature's, less an unbound method's first and a partial's own."""
    if fn.__class__ is types.FunctionType and "__wrapped__" not in fn.__dict__ and "__signature__" not in fn.__dict__:
        parameters = _function_parameters(fn)  # what inspect.signature reads, in about a third of its time
    else:
        try:
            parameters = [Parameter(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"cannot read the signature of {fn!r:.80} ({exc}); wrap it in a function with typed parameters",
                tool=tool_name,
            ) from None
    if target.drop_first:
        parameters = parameters[1:]
    return [parameter for parameter in parameters if parameter.name not in target.hidden]


def _function_parameters(fn: types.FunctionType) -> list[Parameter]:
    """A plain function's parameters in signature order, read from its code object and defaults."""
    code = fn.__code__
    positional, only = code.co_argcount, code.co_posonlyargcount
    names, flags = code.co_varnames, code.co_flags
    defaults = fn.__defaults__ or ()
    first_default = positional - len(defaults)
    parameters = [
        Parameter(
            names[i],
            _P.POSITIONAL_ONLY if i < only else _P.POSITIONAL_OR_KEYWORD,
            defaults[i - first_default] if i >= first_default else _P.empty,
        )
        for i in range(positional)
    ]
    end = positional + code.co_kwonlyargcount
    if flags & _VARARGS:
        parameters.append(Parameter(names[end], _P.VAR_POSITIONAL, _P.empty))
    keyword_defaults = fn.__kwdefaults__ or {}
    parameters += [
        Parameter(name, _P.KEYWORD_ONLY, keyword_defaults.get(name, _P.empty)) for name in names[positional:end]
    ]
    if flags & _VARKEYWORDS:
        parameters.append(Parameter(names[end + (1 if flags & _VARARGS else 0)], _P.VAR_KEYWORD, _P.empty))
    return parameters


def stream_kind(fn: Callable[..., Any]) -> str | None:
    """``"sync"`` when calling ``fn`` returns a generator, ``"async"`` for an async generator, else None."""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    for candidate in (inner, getattr(type(inner), "__call__", None)):  # noqa: B004 - a callable object's own method
        if inspect.isasyncgenfunction(candidate):
            return "async"
        if inspect.isgeneratorfunction(candidate):
            return "sync"
        if isinstance(inner, (types.FunctionType, types.MethodType)):
            break
    return None


def yielded(returns: Any) -> Any:
    """The item type of a generator's return annotation (``Iterator[str]`` → ``str``), else ``Any``."""
    arguments = typing.get_args(returns)
    return arguments[0] if arguments else Any


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine.

    True for an ``async def``, a partial of one, and an object whose ``__call__`` is one.
    """
    if inspect.iscoroutinefunction(fn):
        return True
    inner = fn.func if isinstance(fn, functools.partial) else fn
    if isinstance(inner, (types.FunctionType, types.MethodType, type)) or not callable(inner):
        return False
    return inspect.iscoroutinefunction(type(inner).__call__)


def type_hints_of(
    fn: Any, tool_name: str, localns: Mapping[str, Any] | None, *, method: bool = False
) -> tuple[dict[str, Any], bool]:
    """The resolved hints, and whether the return annotation waits for the class (a method's ``-> "Cls"``).

    In a class body the class does not exist yet, so a method returning its own class is read
    without its return type, which `return_hint` reads once the method is bound.
    """
    if isinstance(fn, types.BuiltinFunctionType):
        return {}, False  # a builtin has no hints: its parameters take any JSON value
    namespace = type_namespace(localns)
    try:
        return typing_extensions.get_type_hints(
            _evaluated(fn, namespace), localns=namespace, include_extras=True
        ), False
    except NameError as exc:
        problem = exc
    annotations = getattr(fn, "__annotations__", {})
    if method and "return" in annotations:
        shim = types.FunctionType(fn.__code__, fn.__globals__)
        shim.__annotations__ = {key: value for key, value in annotations.items() if key != "return"}
        try:
            return typing_extensions.get_type_hints(shim, localns=namespace, include_extras=True), True
        except NameError as exc:
            problem = exc
    raise ToolDefinitionError(
        f"cannot resolve a type hint ({problem}); define the type at module level or import it",
        tool=tool_name,
    ) from None


MOST_COMPILED = 4096
"""How many annotation strings `_evaluated` keeps compiled (the memo is emptied when full)."""
_COMPILED: dict[str, types.CodeType] = {}


def _evaluated(fn: Any, namespace: dict[str, Any]) -> Any:
    """``fn``, or a stand-in whose string annotations are evaluated, each string compiled once per process.

    ``get_type_hints`` compiles every string annotation each time it reads one, which is most of
    reading a tool's hints. This evaluates them as it would (in the function's globals and
    ``namespace``) with the code kept, and hands it the values; it does the rest as ever (``None``,
    references nested in a value, a ``None`` default on Python 3.10). A function this cannot read so
    (a wrapper, a name it cannot resolve, type parameters) is given as it is.
    """
    if fn.__class__ is not types.FunctionType or hasattr(fn, "__wrapped__") or getattr(fn, "__type_params__", None):
        return fn
    annotations = fn.__annotations__
    if not any(value.__class__ is str for value in annotations.values()):
        return fn
    values = dict(annotations)
    for name, value in values.items():
        if value.__class__ is str:
            code = _COMPILED.get(value)
            if code is None:
                if len(_COMPILED) >= MOST_COMPILED:
                    _COMPILED.clear()
                try:
                    code = _COMPILED[value] = compile(value, "<annotation>", "eval")
                except SyntaxError:
                    return fn
            try:
                values[name] = eval(code, fn.__globals__, namespace)
            except Exception:  # left to get_type_hints, which says what it cannot resolve
                return fn
    stand_in = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    stand_in.__kwdefaults__ = fn.__kwdefaults__
    stand_in.__annotations__ = values
    return stand_in


def return_hint(fn: Callable[..., Any]) -> Any:
    """``fn``'s return annotation, resolved now (a method's class exists once it is bound), or None."""
    try:
        return typing_extensions.get_type_hints(fn, include_extras=True).get("return")
    except NameError:
        return None
