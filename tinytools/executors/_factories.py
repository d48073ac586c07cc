"""Values made where a tool runs: the factories behind ``Injected("key", remote=True)``.

A session, a client or a connection pool cannot travel to another process. A tool that needs
one marks the parameter ``remote=True``, and a factory registered with `provide` makes the
value once per process, in whichever process runs the tool: a worker of a process pool or a
Dask cluster, or the dispatcher's own process when the tool runs inline.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tinytools._public import publish

__all__ = ["factory_for", "provide", "provided"]

F = TypeVar("F", bound=Callable[[], Any])

_FACTORIES: dict[str, Callable[[], Any]] = {}
_VALUES: dict[Callable[[], Any], Any] = {}
_LOCK = threading.Lock()


def provide(key: str) -> Callable[[F], F]:
    """Register the factory of the value injected as ``key`` into ``remote=True`` parameters.

    The factory takes no argument and runs at most once per process, on first use. It must be
    defined at module level, so a worker can import it by name. A later registration for the
    same key replaces an earlier one.

    ```python
    @provide("db")
    def connect() -> Database:
        return Database.connect(os.environ["DATABASE_URL"])
    ```
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"provide() takes the inject key as a non-empty string, not {key!r}")

    def register(fn: F) -> F:
        _FACTORIES[key] = fn
        return fn

    return register


def factory_for(key: str) -> Callable[[], Any] | None:
    """The factory registered for ``key`` in this process, or None."""
    return _FACTORIES.get(key)


def provided(factory: Callable[[], Any]) -> Any:
    """The value ``factory`` makes, made once per process."""
    try:
        return _VALUES[factory]
    except KeyError:
        pass
    with _LOCK:
        if factory not in _VALUES:
            _VALUES[factory] = factory()
        return _VALUES[factory]


publish("tinytools.executors", provide)
