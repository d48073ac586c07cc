"""tinytools' own process pool, shared by every dispatcher in a process.

``@tool(executor="process")`` runs here unless the dispatcher has an executor of its own for it
(a single ``executor=``, or a mapping's ``"process"``). The pool is made on first use, sized to
the CPU count, starts workers by ``forkserver`` where there is one (never by forking a threaded
process), and is replaced when a dead worker breaks it. It is shut down when the interpreter
exits, or earlier by `shutdown_shared_pool`.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from tinytools._public import publish

__all__ = ["SHARED", "SharedPool", "reap", "shared_process_pool", "shutdown_shared_pool"]


class SharedPool:
    """tinytools' own process pool for ``@tool(executor="process")``, made on first use.

    One per process, shared by every dispatcher, sized to the CPU count. Workers start by
    ``forkserver`` where there is one (never by forking a threaded process). A pool broken by a
    dead worker is replaced on the next call. The first pool made registers `shutdown` to run at
    interpreter exit.
    """

    def __init__(self) -> None:
        self._exit_registered = False
        self._empty()

    def _empty(self) -> None:
        """No pool yet: as made, and in a child made by fork.

        There the parent's pool, its workers and its manager thread are the parent's: the child
        makes a pool of its own on first use, and leaves the parent's alone (shutting it down would
        wait on a thread the child does not have). Its calls are refused ``executor_unavailable``
        where the workers start by multiprocessing's forkserver, which is the parent's child (a
        call waited forever on the parent's pool on Python 3.13).
        """
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
                if not self._exit_registered:
                    # Left to the interpreter's teardown, the pool is collected after the modules
                    # its finalizer needs are gone: "Exception ignored in ... weakref_cb".
                    atexit.register(self.shutdown)
                    self._exit_registered = True
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
        """Stop the pool's workers, cancelling calls not started, and let the pool go.

        Waits for the calls already running. A later call starts a new pool.
        """
        with self._lock:
            pool, self._pool = self._pool, None
            retired, self._retired = self._retired, []
        for old in retired:
            old.shutdown(wait=False, cancel_futures=True)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _workers(pool: concurrent.futures.ProcessPoolExecutor) -> list[Any]:
    return list((getattr(pool, "_processes", None) or {}).values())


SHARED = SharedPool()
"""The one shared pool of this process."""
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=SHARED._empty)


def shared_process_pool() -> concurrent.futures.ProcessPoolExecutor:
    """The process pool ``@tool(executor="process")`` uses when the dispatcher has no executor for it."""
    return SHARED.get()


def shutdown_shared_pool() -> None:
    """Shut tinytools' shared process pool down now: its workers stop once their running calls end.

    Calls not started yet are cancelled (they end ``worker_lost``). This happens by itself when the
    interpreter exits; call it to free the workers sooner. A later ``"process"`` call starts a new
    pool.
    """
    SHARED.shutdown()


def reap(pool: object) -> None:
    """Kill the worker processes left in a process pool, if it is broken (see `Route.reap`)."""
    if not isinstance(pool, concurrent.futures.ProcessPoolExecutor) or not getattr(pool, "_broken", False):
        return
    processes = getattr(pool, "_processes", None) or {}
    with contextlib.suppress(RuntimeError):  # changed size while read: the manager is cleaning up
        for process in list(processes.values()):
            with contextlib.suppress(Exception):
                process.kill()


publish("tinytools.executors", shared_process_pool, shutdown_shared_pool)
