"""Tools the executor tests send to worker processes: importable by name, so workers find them."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Annotated

from tinytools import Injected, Invocation, RetryableError, ToolCall, ToolError, ToolOutput, tool
from tinytools.executors import provide


@dataclass
class Point:
    x: float
    y: float


class Handle:
    """Stands for a session or client: it holds a lock, so it cannot be pickled."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()


@provide("handle")
def make_handle() -> Handle:
    return Handle()


@tool
def where(n: int) -> dict[str, int]:
    """Say which process ran the call."""
    return {"n": n, "pid": os.getpid()}


@tool
def norm(point: Point, scale: float = 1.0) -> float:
    """Length of a point's vector (the argument arrives as a Point)."""
    assert isinstance(point, Point) and isinstance(scale, float)
    return ((point.x**2 + point.y**2) ** 0.5) * scale


@tool(executor="inline")
def local(n: int) -> int:
    """Stay in the dispatcher's process."""
    return os.getpid()


@tool
def fail(kind: str) -> str:
    """Raise what is asked for."""
    if kind == "tool":
        raise ToolError("the order does not exist", code="not_found")
    if kind == "exit":
        raise SystemExit(3)
    raise ValueError("secret internals")


@tool
def echo_key(text: str, *, api_key: Annotated[str, Injected("api_key", secret=True)]) -> str:
    """Echo the secret back (the dispatcher must redact it)."""
    return f"{text} {api_key}"


@tool
def use_handle(*, handle: Annotated[Handle, Injected("handle")]) -> int:
    """Take an injected value that cannot travel."""
    return handle.pid


@tool
def use_remote_handle(*, handle: Annotated[Handle, Injected("handle", remote=True)]) -> int:
    """Take a value the worker makes itself."""
    return handle.pid


@tool
def who(call: ToolCall, invocation: Invocation) -> dict[str, object]:
    """Take the call and the invocation, which travel."""
    return {"id": call.id, "tool": invocation.tool_name, "left": invocation.time_left}


@tool(timeout=0.3)
def slow(seconds: float) -> str:
    """Sleep past the timeout."""
    time.sleep(seconds)
    return "done"


@tool(timeout=0.3, idempotent=True)
def slow_idempotent(seconds: float) -> str:
    """Sleep past the timeout, harmlessly."""
    time.sleep(seconds)
    return "done"


@tool(idempotent=True, retries=2)
def flaky(path: str) -> int:
    """Ask for a retry until a file records two earlier tries (attempts span processes)."""
    with open(path, "a+") as log:
        log.seek(0)
        tries = len(log.read())
        log.write("x")
    if tries < 2:
        raise RetryableError("busy")
    return tries + 1


@tool
def die(code: int) -> str:
    """Kill the worker process mid-call."""
    os._exit(code)


@tool
def die_later(seconds: float) -> str:
    """Sleep, then kill the worker process."""
    time.sleep(seconds)
    os._exit(1)


@tool
def unpicklable() -> ToolOutput:
    """Return an output that pickles only as plain data."""
    return ToolOutput({"n": 1}, content="one")


@tool
def lock_output() -> object:
    """Return something that neither pickles nor encodes."""
    return threading.Lock()


@tool
def positional(a: int, /, b: int) -> int:
    """Take a positional-only parameter."""
    return a * 10 + b


@tool
def spin(n: int) -> int:
    """Burn CPU."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


@tool(executor="process")
def where_process(n: int) -> int:
    """Run in tinytools' shared process pool."""
    return os.getpid()


@tool(executor="process")
def die_process(code: int) -> str:
    """Kill a worker of the shared process pool."""
    os._exit(code)


@tool(executor="cpu")
def heavy(n: int) -> int:
    """Go to the executor named "cpu"."""
    return os.getpid()


@tool(executor="process", idempotent=True, retries=1)
def die_once(path: str) -> str:
    """Kill the worker on the first attempt; answer on the second (the file remembers)."""
    if not os.path.exists(path):
        open(path, "w").close()
        os._exit(1)
    return "second attempt"


@tool
def trace_here() -> dict[str, str]:
    """The trace and parent span current where the tool runs (a worker continues the caller's trace)."""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}", "pid": str(os.getpid())}
