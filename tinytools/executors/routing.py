"""Which tools leave the process, and to which executor: decided once per dispatcher.

`plan_routes` gives a `Route` for every tool that leaves, refusing (with `ToolDefinitionError`)
a tool that could not travel, when the dispatcher is built rather than on its first call.
"""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tinytools.errors import ToolDefinitionError
from tinytools.executors.factories import factory_for
from tinytools.executors.pools import SHARED
from tinytools.executors.routes import Route
from tinytools.executors.worker import Remote, ToolRef
from tinytools.tool import Tool

if TYPE_CHECKING:
    from tinytools.toolbox import Toolbox

__all__ = ["DEFAULT", "INLINE", "PROCESS", "plan_routes", "reference"]

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
    ref = ToolRef(module, qualname)
    try:
        found = ref.lookup()
    except (ImportError, AttributeError) as exc:
        raise refuse(f"{module}.{qualname} cannot be found by name ({exc})") from None
    if found is not target and found is not fn and not (isinstance(found, Tool) and found.fn is fn):
        raise refuse(f"{module}.{qualname} names another object")
    return ref
