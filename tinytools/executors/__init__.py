"""Executors: run sync tools in process pools or on a Dask cluster, and bring every answer back.

The dispatcher does not grow a distributed system of its own; it hands calls to any
`concurrent.futures.Executor`. ``Dispatcher(tools, executor=pool)`` sends every sync tool to
``pool`` unless the tool says ``@tool(executor="inline")``; a mapping of names to executors
lets a tool pick one with ``@tool(executor="name")``, and ``"process"`` is tinytools' shared
process pool unless the mapping names another.

Everything before the call (limits, policies, validation, conversion, injection) and after it
(output checks, budgets, redaction, events) still happens in the dispatcher's process. What
travels is a reference to the tool (its module and qualified name, resolved by the worker), the
bound arguments, and the answer back, all pickled here so a value that cannot travel is named.

`routing` decides once per dispatcher which tools go where, `routes` carries one call there and
back, `worker` is what runs on the other side, `pools` holds the shared process pool and
`factories` the ``provide`` factories of values made where a tool runs.
"""

from tinytools.executors.factories import provide
from tinytools.executors.pools import shared_process_pool
from tinytools.executors.routes import ExecutorError, RemoteToolError, Route
from tinytools.executors.routing import DEFAULT, INLINE, PROCESS, plan_routes, reference
from tinytools.executors.worker import ToolRef

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
