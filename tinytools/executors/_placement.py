"""Which tools leave the process, and to which executor: decided once per dispatcher.

`plan_routes` gives a `Route` for every tool that leaves, refusing (with `ToolDefinitionError`)
a tool that could not travel, when the dispatcher is built rather than on its first call.
"""

from __future__ import annotations

import concurrent.futures
import functools
import pickle
import sys
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tinytools._errors import ToolDefinitionError
from tinytools._public import publish
from tinytools._tool import Tool
from tinytools.executors._factories import factory_for
from tinytools.executors._pools import SHARED
from tinytools.executors._transport import Route
from tinytools.executors._worker import PROTOCOL, Remote, ToolRef

if TYPE_CHECKING:
    from tinytools._toolbox import Toolbox

__all__ = ["DEFAULT", "INLINE", "PROCESS", "plan_routes", "reference"]

INLINE = "inline"
"""``@tool(executor="inline")``: always run in the dispatcher's process."""
PROCESS = "process"
"""``@tool(executor="process")``: the dispatcher's one executor, or its mapping's ``"process"``, or the shared pool."""
DEFAULT = "default"
"""The mapping key of the executor for tools that name none."""
_UNSENDABLE_RUNTIME = {"token": "a CancellationToken", "progress": "a Progress channel"}


def plan_routes(
    toolbox: Toolbox,
    executor: concurrent.futures.Executor | Mapping[str, concurrent.futures.Executor] | None,
) -> dict[str, Route]:
    """Decide, once per dispatcher, which tools leave the process and how.

    A single ``executor`` runs every sync tool not marked ``"inline"``, whatever executor the
    tool names. A mapping serves each tool the executor it names (``"default"`` when it names
    none; ``"process"`` is the shared pool unless the mapping has one).

    Raises:
        ToolDefinitionError: A tool names an executor the dispatcher does not have, cannot be
            sent (not importable by name, async, or takes a value that cannot travel), or marks
            a value remote with no `provide` factory registered.
    """
    executors = _named(executor)
    single = isinstance(executor, concurrent.futures.Executor)
    routes: dict[str, Route] = {}
    for tool in toolbox:
        name = tool.executor
        if name == INLINE or (name is None and (tool.is_async or DEFAULT not in executors)):
            continue
        name = DEFAULT if single or name is None else name
        target: Any = executors.get(name)
        if target is None and name == PROCESS:
            target = SHARED
        if target is None:
            known = ", ".join(repr(n) for n in executors) or "none"
            raise ToolDefinitionError(
                f"it asks for executor {name!r}, which this dispatcher does not have (it has {known}); "
                f"pass executor={{{name!r}: ...}} to the Dispatcher",
                tool=tool.name,
            )
        routes[tool.name] = _route(tool, name, target)
    return routes


def _named(
    executor: concurrent.futures.Executor | Mapping[str, concurrent.futures.Executor] | None,
) -> dict[str, Any]:
    if executor is None:
        return {}
    named = {DEFAULT: executor} if isinstance(executor, concurrent.futures.Executor) else dict(executor)
    for name, value in named.items():
        if not isinstance(value, concurrent.futures.Executor) or name == INLINE:
            raise TypeError(
                "executor= takes a concurrent.futures.Executor or a mapping of names (not 'inline') "
                f"to executors; got {name!r}: {value!r}"
            )
    return named


def _route(tool: Tool[..., Any], name: str, executor: Any) -> Route:
    if tool.is_async:
        raise ToolDefinitionError(
            f"it is async, and executor {name!r} runs sync tools; remove executor= from @tool", tool=tool.name
        )
    if isinstance(executor, concurrent.futures.ThreadPoolExecutor):  # same process: nothing travels
        return Route(tool, name, executor, None, {})
    if tool.streams is not None:
        raise ToolDefinitionError(
            f"it streams its output, which cannot travel from executor {name!r}'s processes; keep it in "
            "this process with @tool(executor='inline') (or give the dispatcher a thread pool)",
            tool=tool.name,
        )
    for parameter, source in tool.injection_sources.items():
        if source in _UNSENDABLE_RUNTIME:
            raise ToolDefinitionError(
                f"{_UNSENDABLE_RUNTIME[source]} cannot travel to executor {name!r}; "
                "keep the tool in this process with @tool(executor='inline')",
                tool=tool.name,
                parameter=parameter,
            )
    local = executor is SHARED or isinstance(executor, concurrent.futures.ProcessPoolExecutor)
    ref = reference(tool, executor=name, allow_main=local)
    remote = {}
    for parameter, key in tool.remote_keys:
        factory = factory_for(key)
        if factory is None:
            raise ToolDefinitionError(
                f"it is injected remotely, but no factory is registered for {key!r}; "
                f"decorate one with @provide({key!r}) in a module the workers import",
                tool=tool.name,
                parameter=parameter,
            )
        try:
            made_by = reference(factory, executor=name, allow_main=local, subject=f"its factory for {key!r}")
        except ToolDefinitionError as exc:
            exc.tool, exc.parameter = tool.name, parameter
            raise
        remote[parameter] = Remote(key, made_by)
    return Route(tool, name, executor, ref, remote)


_KEEP_INLINE = "keep the tool in this process with @tool(executor='inline')"
_MODULE_LEVEL = f"define it at module level in a module the workers can import, or {_KEEP_INLINE}"
_STATE_HERE = (
    f"{_KEEP_INLINE}, or make it a module-level function that takes what it needs as arguments (or injected values)"
)


def reference(
    target: Tool[..., Any] | Callable[..., Any], *, executor: str, allow_main: bool, subject: str = "it"
) -> ToolRef:
    """How a worker finds ``target``: its importable name, checked to lead back to it here.

    A module-level function (or `Tool`) travels by name. A ``functools.partial`` of one, and an
    instance with ``__call__`` of a module-level class, travel pickled: pickled once, here, with
    the function or class inside still found by name, so the worker's copy is what the partial
    or instance was when the dispatcher was built.

    Raises:
        ToolDefinitionError: It cannot be found by name: a method bound to an instance or a
            class, a lambda, a function defined in a function, a name since rebound,
            ``__main__`` where workers cannot import it, or a partial or instance that does
            not pickle. The message says which, and the fix.
    """
    fn = target.fn if isinstance(target, Tool) else target
    name = target.name if isinstance(target, Tool) else getattr(fn, "__name__", repr(fn))
    try:
        return _reference(target, fn, allow_main)
    except _Unsendable as exc:
        raise ToolDefinitionError(
            f"{subject} cannot be sent to executor {executor!r}: {exc.why}; {exc.fix}", tool=name
        ) from None


class _Unsendable(Exception):
    """Why a callable cannot reach a worker, and the fix (turned into a `ToolDefinitionError`)."""

    def __init__(self, why: str, fix: str = _MODULE_LEVEL):
        super().__init__(why)
        self.why, self.fix = why, fix


def _reference(target: Any, fn: Any, allow_main: bool) -> ToolRef:
    if isinstance(fn, types.MethodType):
        receiver = fn.__self__
        if isinstance(receiver, type):
            raise _Unsendable(f"it is a class method, bound to {receiver.__qualname__}", _STATE_HERE)
        owner = type(receiver).__qualname__
        raise _Unsendable(
            f"it is a method bound to one {owner} instance, whose state lives in this process", _STATE_HERE
        )
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if isinstance(fn, functools.partial) or not (isinstance(module, str) and isinstance(qualname, str)):
        return _pickled(fn, allow_main)  # a partial, or an instance with __call__: neither has a name
    if "<lambda>" in qualname:
        raise _Unsendable("it is a lambda")
    if "<locals>" in qualname:
        raise _Unsendable(f"{qualname} is defined inside a function")
    if module == "__main__" and not (allow_main and getattr(sys.modules.get("__main__"), "__file__", None)):
        raise _Unsendable("its module is __main__, which the workers cannot import")
    ref = ToolRef(module, qualname)
    try:
        found = ref.lookup()
    except (ImportError, AttributeError) as exc:
        raise _Unsendable(f"{module}.{qualname} cannot be found by name ({exc})") from None
    if found is not target and found is not fn and not (isinstance(found, Tool) and found.fn is fn):
        raise _Unsendable(f"{module}.{qualname} names another object")
    return ref


def _pickled(fn: Any, allow_main: bool) -> ToolRef:
    """A partial, or a callable instance, as a reference that carries it pickled."""
    partial = isinstance(fn, functools.partial)
    inner = fn.func if partial else type(fn)
    if not partial and not callable(fn):
        raise _Unsendable("it has no module-level name")
    named = getattr(inner, "__qualname__", None) or repr(inner)
    what = f"it is a functools.partial of {named}" if partial else f"it is a callable {named} instance"
    try:
        found = _reference(inner, inner, allow_main)
    except _Unsendable as exc:
        raise _Unsendable(f"{what}, and {exc.why.removeprefix('it is ')}", exc.fix) from None
    try:
        carried = pickle.dumps(fn, protocol=PROTOCOL)
    except Exception as exc:
        raise _Unsendable(f"{what}, which does not pickle ({type(exc).__name__}: {exc})") from None
    return ToolRef(found.module, found.qualname, carried)


publish("tinytools.executors", plan_routes, reference)
