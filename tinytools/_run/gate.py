"""The gate: within one batch, a serial tool runs alone, however the call reached it."""

from __future__ import annotations

from typing import Any

__all__ = ["Gate"]


class Gate:
    """Within one batch, a serial tool runs alone: it waits for the running calls, and holds the rest.

    A call that finds the gate open passes at once, without waiting on anything: only a serial
    call waits (until nothing runs), and the calls that arrive while one runs.
    """

    def __init__(self) -> None:
        self.running = 0
        self.serial = False
        self.waiting: list[Any] = []

    async def enter(self, serial: bool) -> None:
        """Wait for the call's turn: a serial call waits until nothing runs, and holds the rest."""
        while self.serial or (serial and self.running):
            import asyncio  # only a waiting call needs a future

            waiter = asyncio.get_running_loop().create_future()
            self.waiting.append(waiter)
            try:
                await waiter
            finally:
                self.waiting.remove(waiter)
        self.running += 1
        self.serial = self.serial or serial

    async def leave(self, serial: bool) -> None:
        """The call is over: let the waiting calls look again."""
        self.running -= 1
        if serial:
            self.serial = False
        for waiter in self.waiting:
            if not waiter.done():
                waiter.set_result(None)
