"""Run limits and cooperative cancellation: `Limits` and `CancellationToken`.

A `Dispatcher` is one run: its `Limits` (call budget, deadline, argument size) count from its
creation. A `CancellationToken` is the run's (or one call's) cancel signal; a tool that wants
to stop cleanly receives it by injection, simply by annotating a parameter with its type.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["TOKEN_KEY", "CancellationToken", "CancelledCall", "Limits", "in_daemon_thread"]

TOKEN_KEY = "tinytools:cancellation"
"""The ``inject`` key under which the dispatcher passes the run's token."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one run of a `Dispatcher`.

    A call past a bound is not executed; it gets a failed result that says which bound
    (``budget_exhausted``, ``deadline_exceeded``, ``arguments_too_large``).
    """

    max_tool_calls: int | None = None
    """Calls the run may make, recoveries (unknown tool, bad arguments) included."""
    deadline: float | None = None
    """Seconds from the dispatcher's creation after which no call starts."""
    max_argument_bytes: int | None = None
    """Largest JSON text of one call's arguments, refused before it is decoded."""


class CancellationToken:
    """A cancel signal that sync and async code can both check and wait on.

    ``token.cancelled`` to poll, ``token.wait(timeout)`` to block a thread,
    ``await token.wait_async()`` to wait in a coroutine. Children (one per call) are
    cancelled with their parent.
    """

    def __init__(self, parent: CancellationToken | None = None):
        self._event = threading.Event()
        self._callbacks: list[Callable[[], Any]] = []
        self._lock = threading.Lock()
        self.reason: str | None = None
        """Why it was cancelled (``"cancelled"``, ``"timeout"``), or None."""
        self._detach: Callable[[], None] = lambda: None
        if parent is not None:
            self._detach = parent.on_cancel(lambda: self.cancel(parent.reason or "cancelled"))

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation; runs the registered callbacks once."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call ``callback`` when cancelled (at once if already cancelled).

        Returns:
            A function that unregisters the callback, for work that ended first.
        """
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], Any]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def detach(self) -> None:
        """Stop following the parent token (when the call this token belongs to is over)."""
        self._detach()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; returns `cancelled`."""
        return self._event.wait(timeout)

    async def wait_async(self) -> None:
        """Wait in a coroutine until cancelled."""
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(settle)

        self.on_cancel(wake)
        await future

    def raise_if_cancelled(self) -> None:
        """Raise `CancelledCall` if cancellation was requested (for cooperative tools)."""
        if self.cancelled:
            raise CancelledCall(self.reason or "cancelled")


class CancelledCall(Exception):
    """Raised by `CancellationToken.raise_if_cancelled` inside a tool that stops early."""


def in_daemon_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
    """Run ``fn`` in a new daemon thread; a call that never returns cannot block exit."""
    import concurrent.futures

    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=work, name=f"tinytools:{getattr(fn, '__name__', 'work')}", daemon=True).start()
    return future
