"""The gate: within one batch, a serial tool runs alone, however the call reached it."""

from __future__ import annotations

__all__ = ["Gate"]


class Gate:
    """Within one batch, a serial tool runs alone: it waits for the running calls, and holds the rest."""

    def __init__(self) -> None:
        import asyncio  # imported on first use: it alone costs more than importing tinytools

        self.running = 0
        self.serial = False
        self.changed = asyncio.Condition()

    async def enter(self, serial: bool) -> None:
        """Wait for the call's turn: a serial call waits until nothing runs, and holds the rest."""
        async with self.changed:
            if serial:
                await self.changed.wait_for(lambda: not self.serial and self.running == 0)
                self.serial = True
            else:
                await self.changed.wait_for(lambda: not self.serial)
            self.running += 1

    async def leave(self, serial: bool) -> None:
        """The call is over: let the waiting calls look again."""
        async with self.changed:
            self.running -= 1
            if serial:
                self.serial = False
            self.changed.notify_all()
