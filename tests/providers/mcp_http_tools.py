"""Tools served over streamable HTTP by tests/providers/test_mcp_http.py (``tinytools serve-mcp``).

``make_inject`` is the ``--inject`` factory: the server calls it, with nothing, for each session
whose call needs its values.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Annotated, Any, Literal

import anyio

from tinytools import ArtifactRef, CancellationToken, ImageContent, Injected, Progress, ToolError, ToolOutput, tool


class Greeter:
    """The injected value: made by the server process, never sent by a client."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


def make_inject() -> dict[str, Any]:
    """The server's injected values."""
    return {"greeter": Greeter(os.getpid())}


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Look up the current weather.

    Args:
        city: City name.
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 21.5, "unit": unit}


@tool
def greet(name: str, *, greeter: Annotated[Greeter, Injected]) -> str:
    """Greet someone with the server's injected greeter."""
    if not isinstance(greeter, Greeter):  # the file was loaded twice: once for tools, once for --inject
        raise ToolError("the greeter is a Greeter of another copy of this module")
    return f"hello {name} from {greeter.pid}"


@tool
def count(label: str, steps: int, progress: Progress) -> str:
    """Report each step as progress, a little apart (a sync tool: it runs on a worker thread)."""
    for step in range(1, steps + 1):
        time.sleep(0.05)
        progress.progress(step, total=steps, message=f"{label} {step}")
    return label


@tool
async def echo(tag: str, delay: float = 0.0) -> str:
    """Answer with the tag, after ``delay`` seconds."""
    await anyio.sleep(delay)
    return tag


@tool
def refuse(tag: str) -> str:
    """Fail on purpose, naming the tag."""
    raise ToolError(f"refused {tag}")


_LINGERING = {"now": 0, "cancelled": 0}
_ENDS: dict[str, str] = {}
"""How each tag's ``linger`` call stands: running, cancelled or finished."""
_LOCK = threading.Lock()


@tool
def linger(tag: str, seconds: float, token: CancellationToken, progress: Progress) -> str:
    """Wait ``seconds`` on a worker thread unless cancelled first, reporting the tag as progress."""
    with _LOCK:
        _LINGERING["now"] += 1
        _ENDS[tag] = "running"
    end = "finished"
    try:
        progress.progress(0, message=tag)
        if token.wait(seconds):
            end = "cancelled"
            with _LOCK:
                _LINGERING["cancelled"] += 1
        return tag
    finally:
        with _LOCK:
            _LINGERING["now"] -= 1
            _ENDS[tag] = end


@tool
def lingering() -> dict[str, int]:
    """How many ``linger`` calls are running now, and how many were cancelled so far."""
    with _LOCK:
        return dict(_LINGERING)


@tool
def linger_end(tag: str) -> str:
    """How the ``linger`` call of ``tag`` stands: running, cancelled, finished, or never ran."""
    with _LOCK:
        return _ENDS.get(tag, "never ran")


PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63fccf"
    "c0f01f0005000201ffa65f0e480000000049454e44ae426082"
)


@tool
def pixel() -> ToolOutput:
    """A one-pixel PNG, stored by whatever dispatcher serves the call."""
    image = (PIXEL, "image/png")
    return ToolOutput(None, content=[ImageContent(ArtifactRef.of(*image))], artifacts=[image])
