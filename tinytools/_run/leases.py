"""Leases: how a worker says, through a shared journal, that it is still running the calls it claimed.

A journaled call's entry names its owner (host, process) and a lease: a time until which the owner
holds it. While this process runs a call, one daemon thread per dispatcher renews the leases of
the calls it holds, a third of the way through each lease, by a compare-and-set that keeps the
entry's step. A worker on another host that finds the call still ``started`` waits while the lease
holds; once it has expired (the owner died, or lost its journal), the call is taken over and
follows the dead-owner rules: ``reconcile``, a re-run if the tool is idempotent, else
``outcome_unknown``. On the owner's own host the process-start check decides first (a dead
process is known at once; see `tinytools._run.journals.holds`).
"""

from __future__ import annotations

import logging
import threading
import time

from tinytools._run.journals import Journal

__all__ = ["Leases"]


class Leases:
    """The leases one dispatcher's process holds on the calls it runs, renewed by one daemon thread."""

    __slots__ = ("_ends", "_failing", "_held", "_lock", "_thread", "_wake", "owner", "seconds", "store")

    def __init__(self, store: Journal, owner: str, seconds: float):
        self.store = store
        self.owner = owner
        self.seconds = seconds
        self._held: dict[str, int] = {}
        self._ends: dict[str, float] = {}
        """When each held lease runs out unless renewed: taken at the hold, moved by each renewal."""
        self._failing: dict[str, bool] = {}
        """Keys whose last renewal failed, and whether their lease was warned run out (each warned once)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def until(self) -> float:
        """When a lease taken or renewed now runs out."""
        return time.time() + self.seconds

    def hold(self, key: str, step: int) -> None:
        """Keep renewing the lease on the entry ``key`` while it stays at ``step``."""
        with self._lock:
            self._held[key] = step
            self._ends[key] = self.until()
            self._failing.pop(key, None)
            if self._thread is None:
                self._thread = threading.Thread(target=self._renew, name="tinytools-leases", daemon=True)
                self._thread.start()

    def drop(self, key: str) -> None:
        """Stop renewing: the call ended, parked, or was handed back."""
        with self._lock:
            self._forget(key)

    def _forget(self, key: str) -> None:
        self._held.pop(key, None)
        self._ends.pop(key, None)
        self._failing.pop(key, None)

    def held(self) -> dict[str, int]:
        """The entries whose leases are renewed, by key, with their steps."""
        with self._lock:
            return dict(self._held)

    def _renew(self) -> None:
        while True:
            self._wake.wait(self.seconds / 3)
            with self._lock:
                if not self._held:
                    self._thread = None  # a later hold starts another
                    return
                held = list(self._held.items())
            until = self.until()
            for key, step in held:
                try:
                    kept = self.store.renew(key, step, self.owner, until)
                except Exception as exc:  # unreachable or closed: tried again next round, warned once
                    self._failed(key, step, exc)
                    continue
                with self._lock:
                    if self._held.get(key) != step:
                        continue
                    if kept:
                        self._ends[key] = until
                        self._failing.pop(key, None)
                    else:  # it moved on (or was taken over): not ours to renew any more
                        self._forget(key)

    def _failed(self, key: str, step: int, exc: Exception) -> None:
        """A renewal that raised: warned once, and once more if the lease runs out before one succeeds.

        The call runs on here, so the renewals go on (quietly) until it ends: a journal back after an
        outage holds the lease again. Past the lease's end another worker may take the call over.
        """
        log = logging.getLogger("tinytools.journal")
        with self._lock:
            if self._held.get(key) != step:
                return
            ran_out = time.time() >= self._ends.get(key, 0.0)
            warned = self._failing.get(key)
            if warned is None:
                log.warning("renewing the lease on %s failed (%s); trying again while the call runs", key[:12], exc)
            if ran_out and not warned:
                log.warning(
                    "the lease on %s ran out while the journal could not renew it (%s): another worker may take "
                    "the call over",
                    key[:12],
                    exc,
                )
            self._failing[key] = ran_out or bool(warned)
