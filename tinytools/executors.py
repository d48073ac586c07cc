"""Executors: run sync tools in process pools or on a Dask cluster, and bring every answer back.

The dispatcher does not grow a distributed system of its own; it hands calls to any
`concurrent.futures.Executor`. ``Dispatcher(tools, executor=pool)`` sends every sync tool to
``pool`` unless the tool says ``@tool(executor="inline")``; a mapping of names to executors
lets a tool pick one with ``@tool(executor="name")``, and ``"process"`` is tinytools' shared
process pool unless the mapping names another.

Everything before the call (limits, policies, validation, conversion, injection) and after it
(output checks, budgets, redaction, events) still happens in the dispatcher's process. What
travels is a reference to the tool (its module and qualified name, resolved by the worker),
the bound keyword arguments, and the answer back, all pickled here so a value that cannot
travel is named. A dispatcher that cannot send a tool refuses it when it is built.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tinytools._providers import factory_for, provide
from tinytools._routes import ExecutorError, RemoteToolError, Route, reap
from tinytools._worker import Remote, ToolRef
from tinytools.errors import ToolDefinitionError
from tinytools.tool import Tool

if TYPE_CHECKING:
    from tinytools.toolbox import Toolbox

__all__ = [
    "DEFAULT",
    "INLINE",
    "PROCESS",
    "ExecutorError",
    "RemoteToolError",
    "Route",
    "ToolRef",
    "plan_routes",
    "provide",
    "reference",
    "shared_process_pool",
]

INLINE = "inline"
"""``@tool(executor="inline")``: always run in the dispatcher's process."""
PROCESS = "process"
"""``@tool(executor="process")``: the mapping's ``"process"`` executor, else the shared pool."""
DEFAULT = "default"
"""The mapping key of the executor for tools that name none."""
_UNSENDABLE_RUNTIME = {"token": "a CancellationToken", "progress": "a Progress channel"}


def plan_routes(
    toolbox: Toolbox,
    executor: concurrent.futures.Executor | Mapping[str, concurrent.futures.Executor] | None,
) -> dict[str, Route]:
    """Decide, once per dispatcher, which tools leave the process and how.

    Raises:
        ToolDefinitionError: A tool names an executor the dispatcher does not have, cannot be
            sent (not importable by name, async, or takes a value that cannot travel), or marks
            a value remote with no `provide` factory registered.
    """
    executors = _named(executor)
    routes: dict[str, Route] = {}
    for tool in toolbox:
        name = tool.executor
        if name == INLINE or (name is None and (tool.is_async or DEFAULT not in executors)):
            continue
        name = name or DEFAULT
        target: Any = executors.get(name)
        if target is None and name == PROCESS:
            target = _SHARED
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
    for parameter, source in tool.injection_sources.items():
        if source in _UNSENDABLE_RUNTIME:
            raise ToolDefinitionError(
                f"{_UNSENDABLE_RUNTIME[source]} cannot travel to executor {name!r}; "
                "keep the tool in this process with @tool(executor='inline')",
                tool=tool.name,
                parameter=parameter,
            )
    local = executor is _SHARED or isinstance(executor, concurrent.futures.ProcessPoolExecutor)
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


def reference(
    target: Tool[..., Any] | Callable[..., Any], *, executor: str, allow_main: bool, subject: str = "it"
) -> ToolRef:
    """The name a worker finds ``target`` by, checked to lead back to it here.

    Raises:
        ToolDefinitionError: It has no importable module-level name (a lambda, a function
            defined in a function, a name since rebound, or ``__main__`` where workers
            cannot import it).
    """
    fn = target.fn if isinstance(target, Tool) else target
    name = target.name if isinstance(target, Tool) else getattr(fn, "__name__", repr(fn))
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)

    def refuse(why: str) -> ToolDefinitionError:
        return ToolDefinitionError(
            f"{subject} cannot be sent to executor {executor!r}: {why}; define it at module level in a module the "
            "workers can import, or keep the tool in this process with @tool(executor='inline')",
            tool=name,
        )

    if not isinstance(module, str) or not isinstance(qualname, str):
        raise refuse("it has no module-level name")
    if "<lambda>" in qualname:
        raise refuse("it is a lambda")
    if "<locals>" in qualname:
        raise refuse(f"{qualname} is defined inside a function")
    if module == "__main__" and not (allow_main and getattr(sys.modules.get("__main__"), "__file__", None)):
        raise refuse("its module is __main__, which the workers cannot import")
    ref = ToolRef(module, qualname, _positional(fn))
    try:
        found = ref.lookup()
    except (ImportError, AttributeError) as exc:
        raise refuse(f"{module}.{qualname} cannot be found by name ({exc})") from None
    if found is not target and found is not fn and not (isinstance(found, Tool) and found.fn is fn):
        raise refuse(f"{module}.{qualname} names another object")
    return ref


def _positional(fn: Callable[..., Any]) -> tuple[str, ...]:
    import inspect

    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_ONLY)


class _SharedPool:
    """tinytools' own process pool for ``@tool(executor="process")``, made on first use.

    One per process, shared by every dispatcher, sized to the CPU count. Workers start by
    ``forkserver`` where there is one (never by forking a threaded process). A pool broken by a
    dead worker is replaced on the next call.
    """

    def __init__(self) -> None:
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._retired: list[concurrent.futures.ProcessPoolExecutor] = []
        self._lock = threading.Lock()

    def get(self) -> concurrent.futures.ProcessPoolExecutor:
        """The pool, made now if there is none."""
        with self._lock:
            if self._pool is None:
                import multiprocessing

                method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    os.cpu_count(), mp_context=multiprocessing.get_context(method)
                )
            return self._pool

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Submit to the pool, replacing it once if a dead worker broke it."""
        pool = self.get()
        try:
            return pool.submit(fn, *args, **kwargs)
        except concurrent.futures.BrokenExecutor:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
                    self._retired.append(pool)
            reap(pool)
            pool.shutdown(wait=False)
            return self.get().submit(fn, *args, **kwargs)

    def broken_pools(self) -> list[concurrent.futures.ProcessPoolExecutor]:
        """The pools a dead worker broke whose workers may still be alive (to reap)."""
        with self._lock:
            self._retired = [p for p in self._retired if any(w.is_alive() for w in _workers(p))]
            current = [self._pool] if self._pool is not None and getattr(self._pool, "_broken", False) else []
            return [*current, *self._retired]

    def shutdown(self) -> None:
        """Stop the pool's workers (a later call starts a new pool)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _workers(pool: concurrent.futures.ProcessPoolExecutor) -> list[Any]:
    return list((getattr(pool, "_processes", None) or {}).values())


_SHARED = _SharedPool()


def shared_process_pool() -> concurrent.futures.ProcessPoolExecutor:
    """The process pool ``@tool(executor="process")`` uses when the dispatcher names none."""
    return _SHARED.get()
