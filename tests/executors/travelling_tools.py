"""Tools with no module-level name of their own (partials, callable instances, methods), for the executor tests."""

from __future__ import annotations

import functools
import os
import threading

from tinytools import tool


def send(channel: str, text: str) -> dict[str, object]:
    """Send a message to a channel; say which process sent it."""
    return {"sent": f"{channel}:{text}", "pid": os.getpid()}


class Adder:
    """Adds, with an offset set when the instance is made."""

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.calls = 0

    def __call__(self, a: int, b: int) -> dict[str, int]:
        """Add two numbers and the offset."""
        self.calls += 1
        return {"sum": a + b + self.offset, "calls": self.calls, "pid": os.getpid()}


class Cart:
    """A cart whose state lives in one process."""

    def __init__(self) -> None:
        self.items: list[str] = []

    @tool
    def add(self, item: str) -> int:
        """Add an item."""
        self.items.append(item)
        return len(self.items)

    @tool(name="make_cart")
    @classmethod
    def make(cls, n: int) -> int:
        """Make a cart."""
        return n


sendops = tool(name="sendops")(functools.partial(send, channel="ops"))
nested_partial = tool(name="nested_partial")(functools.partial(functools.partial(send, "ops")))
ADDER = Adder(offset=10)
adder = tool(name="adder")(ADDER)
locked = tool(name="locked")(functools.partial(send, channel=threading.Lock()))  # type: ignore[arg-type]
