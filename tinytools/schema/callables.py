"""What kind of callable a tool wraps, and where its hints, docstring and parameters are read.

A function is read as it is; a bound method without its ``self``; a ``functools.partial``
without the arguments it sets; an object with ``__call__`` through its class's ``__call__``; a
function defined in a class body that takes ``self`` or ``cls`` first as a method not yet
bound (`tinytools.Tool` binds it). A class, or anything not callable, is refused.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from tinytools.errors import ToolDefinitionError

__all__ = ["Target", "default_name", "is_async", "parameters_of", "target_of"]


class Target:
    """Where to read a callable's hints, docstring and name, and which of its parameters to leave out."""

    __slots__ = ("docs", "drop_first", "hidden", "hints", "name", "self_type")

    def __init__(self, hints: Any, docs: Any, name: str, *, hidden: frozenset[str] = frozenset()):
        self.hints = hints
        self.docs = docs
        self.name = name
        self.hidden = hidden
        """Parameters a ``functools.partial`` already set: not the model's to send."""
        self.drop_first = False
        """Whether the first parameter is an unbound method's ``self``/``cls``."""
        self.self_type: type | None = None
        """The class ``Self`` stands for, when known (a bound method's)."""


def default_name(fn: Callable[..., Any]) -> str:
    """The name a tool made from ``fn`` gets unless given one: the function's (or the callable's class's)."""
    return target_of(fn, "").name


def target_of(fn: Any, tool_name: str) -> Target:
    """Where a callable's hints, docstring and name are read (see `Target`).

    Raises:
        ToolDefinitionError: ``fn`` is a class, or not callable.
    """
    if isinstance(fn, functools.partial):
        inner = target_of(fn.func, tool_name)
        return Target(inner.hints, inner.docs, inner.name, hidden=inner.hidden | frozenset(fn.keywords))
    if isinstance(fn, types.MethodType):
        target = Target(fn, fn, fn.__name__)
        owner = fn.__self__
        target.self_type = owner if isinstance(owner, type) else type(owner)
        return target
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        target = Target(fn, fn, fn.__name__)
        target.drop_first = isinstance(fn, types.FunctionType) and _unbound_method(fn)
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
    target = Target(call, call if call.__doc__ else fn, type(fn).__name__)
    target.self_type = type(fn)
    return target


def _unbound_method(fn: types.FunctionType) -> bool:
    """Whether ``fn`` was defined in a class body and takes ``self`` or ``cls`` first."""
    owner, _, _ = fn.__qualname__.rpartition(".")
    if not owner or owner.endswith("<locals>"):
        return False
    first = next(iter(inspect.signature(fn).parameters.values()), None)
    return first is not None and first.name in ("self", "cls") and first.kind is not inspect.Parameter.KEYWORD_ONLY


def parameters_of(fn: Callable[..., Any], target: Target, tool_name: str) -> list[inspect.Parameter]:
    """The parameters the tool reads: the signature's, less an unbound method's first and a partial's own."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"cannot read the signature of {fn!r:.80} ({exc}); wrap it in a function with typed parameters",
            tool=tool_name,
        ) from None
    if target.drop_first:
        parameters = parameters[1:]
    return [parameter for parameter in parameters if parameter.name not in target.hidden]


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
