"""Executors: run sync tools in process pools or on a Dask cluster, and bring every answer back.

The dispatcher does not grow a distributed system of its own; it hands calls to any
`concurrent.futures.Executor`. ``Dispatcher(tools, executor=pool)`` sends every sync tool to
``pool`` unless the tool says ``@tool(executor="inline")``, a tool that names an executor
(``"process"`` included) too; a mapping of names to executors lets a tool pick one with
``@tool(executor="name")``, and ``"process"`` is tinytools' shared process pool unless the
mapping names another. The shared pool shuts down when the interpreter exits, or at
`shutdown_shared_pool`.

Everything before the call (limits, policies, validation, conversion, injection) and after it
(output checks, budgets, redaction, events) still happens in the dispatcher's process. What
travels is a reference to the tool (its module and qualified name, resolved by the worker; a
partial or a callable instance, which has no name, pickled once with the names inside it), the
bound arguments, and the answer back, all pickled here so a value that cannot travel is named.
A bound method, whose instance lives here, cannot travel and is refused when the dispatcher is built.

`_placement` decides once per dispatcher which tools go where, `_transport` carries one call there
and back, `_worker` is what runs on the other side, `_pools` holds the shared process pool,
`_factories` the ``provide`` factories of values made where a tool runs, and `_failures` how a call
fails on its way there and back.
"""

from typing import TYPE_CHECKING, Any

from tinytools.executors._factories import provide
from tinytools.executors._failures import ExecutorError, RemoteToolError

if TYPE_CHECKING:  # what type checkers and the API reference read; at run time, `__getattr__` below
    from tinytools.executors._placement import DEFAULT, INLINE, PROCESS, plan_routes, reference
    from tinytools.executors._pools import shared_process_pool, shutdown_shared_pool
    from tinytools.executors._transport import Route
    from tinytools.executors._worker import ToolRef

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
    "shutdown_shared_pool",
]

_LATER = {
    "DEFAULT": "_placement",
    "INLINE": "_placement",
    "PROCESS": "_placement",
    "plan_routes": "_placement",
    "reference": "_placement",
    "Route": "_transport",
    "ToolRef": "_worker",
    "shared_process_pool": "_pools",
    "shutdown_shared_pool": "_pools",
}


if not TYPE_CHECKING:  # type checkers see the names imported above; a misspelt one stays an error

    def __getattr__(name: str) -> Any:
        """The names that need process pools and pickling, imported when first asked for.

        `import tinytools` reaches this package (for `provide`), and pays for none of that.
        """
        module = _LATER.get(name)
        if module is None:
            raise AttributeError(f"module 'tinytools.executors' has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(f"tinytools.executors.{module}"), name)


def __dir__() -> list[str]:
    """Every public name, those imported on first use too (`dir` and `help` list them all)."""
    return sorted({*globals(), *_LATER})
