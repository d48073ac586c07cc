"""MCP serving over streamable HTTP on 127.0.0.1: tinytools against FastMCP, in the same run.

    python benchmarks/bench_mcp.py              # ~3 minutes
    python benchmarks/bench_mcp.py --quick      # ~40 seconds
    python benchmarks/bench_mcp.py --markdown   # the tables of docs/performance.md
    python benchmarks/bench_mcp.py --chart docs/assets/mcp.png

Each server runs in a subprocess of its own (uvicorn, stateless streamable HTTP, log level
warning) and serves the same two tools, ``add(a: int, b: int) -> int`` and
``echo(text: str) -> str``. The client is the ``mcp`` SDK's in this process: over HTTP, N
concurrent clients, each making a fixed number of calls (add and echo alternately), once as
``mcp.Client(url)`` speaks by default (the sessionless 2026-07-28 protocol, "http" rows) and once
as a 2025-handshake ``ClientSession`` ("http 2025" rows); over stdio, one session (one server
process) with N concurrent callers. One client process
saturates this machine before either server does, so beside calls per second and p50/p99
latency the table shows the server process's own CPU seconds over the calls (utime + stime
from ``/proc/<pid>/stat``) and the calls per server CPU-second: the server's capacity.

The "client" rows compare, at concurrency 1 against the tinytools server, a bare ``mcp``
``ClientSession.call_tool`` with tinytools' client: ``connect(url)`` and then
``Dispatcher(box).adispatch(...)``, which validates the arguments against the remote schema
and reads the result back. Rounds of the two alternate so a noisy machine hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

SERVERS = ("tinytools", "fastmcp")
CONCURRENCY = (1, 8, 32)
TICKS = os.sysconf("SC_CLK_TCK")
Row = tuple[str, str, int, dict[str, float]]
"""Server, transport, concurrency, and the figures measured."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def _tinytools() -> list[Any]:
    from tinytools import tool

    return [tool(add), tool(echo)]


def _fastmcp() -> Any:
    from fastmcp import FastMCP

    server = FastMCP("bench")
    server.tool(add)
    server.tool(echo)
    return server


def _serve(kind: str, port: str) -> None:
    """The server side (a subprocess): ``kind`` on 127.0.0.1:``port``, or on stdio."""
    if port == "stdio":
        from tinytools.providers.mcp import serve

        serve(_tinytools(), name="bench") if kind == "tinytools" else _fastmcp().run("stdio", show_banner=False)
        return
    import uvicorn

    from tinytools.providers.mcp import http_app

    app = http_app(_tinytools(), name="bench") if kind == "tinytools" else _fastmcp().http_app(stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(kind: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, str(port)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the {kind} server exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"the {kind} server did not listen on port {port}")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


@contextlib.asynccontextmanager
async def _sdk_session(url: str, default: bool = False) -> Any:
    """A client of ``url``: ``mcp.Client`` as it negotiates by default, or a 2025-handshake ``ClientSession``."""
    from mcp import Client, ClientSession
    from mcp.client.streamable_http import streamable_http_client

    if default:
        async with Client(url) as client:
            yield client
        return
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


def _sdk_caller(session: Any) -> Callable[[int], Awaitable[Any]]:
    async def call(i: int) -> Any:
        if i % 2:
            result = await session.call_tool("echo", {"text": "hello"})
        else:
            result = await session.call_tool("add", {"a": i, "b": 1})
        if result.is_error:
            raise RuntimeError(f"call failed: {result}")
        return result

    return call


def _tinytools_caller(box: Any) -> Callable[[int], Awaitable[Any]]:
    from tinytools import Dispatcher, ToolCall

    dispatcher = Dispatcher(box)
    sent = itertools.count()  # every call an id of its own: a call id sent again is answered from the run

    async def call(i: int) -> Any:
        if i % 2:
            request = ToolCall(f"c{next(sent)}", "echo", '{"text": "hello"}')
        else:
            request = ToolCall(f"c{next(sent)}", "add", f'{{"a": {i}, "b": 1}}')
        result = await dispatcher.adispatch(request)
        if result.is_error:
            raise RuntimeError(f"call failed: {result}")
        return result

    return call


async def _calls(call: Callable[[int], Awaitable[Any]], count: int, latencies: list[float]) -> None:
    clock = time.perf_counter
    for i in range(count):
        start = clock()
        await call(i)
        latencies.append(clock() - start)


@contextlib.asynccontextmanager
async def _stdio_session(kind: str) -> Any:
    """An SDK session to a server subprocess of its own over stdio; yields (session, its pid)."""
    import psutil  # type: ignore[import-untyped]
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    before = {child.pid for child in psutil.Process().children()}
    quiet = {**os.environ, "FASTMCP_LOG_LEVEL": "WARNING"}
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve", kind, "stdio"], env=quiet)
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        (pid,) = {child.pid for child in psutil.Process().children()} - before
        yield session, pid


async def _load_stdio(kind: str, concurrency: int, total: int) -> dict[str, float]:
    """One stdio session (one server process), ``concurrency`` callers sharing it, ``total`` calls."""
    async with _stdio_session(kind) as (session, pid):
        return await _timed([session] * concurrency, pid, total)


async def _load(url: str, pid: int, concurrency: int, total: int, default: bool) -> dict[str, float]:
    """``concurrency`` SDK clients making ``total`` calls between them (``default``: as ``mcp.Client`` negotiates)."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(_sdk_session(url, default)) for _ in range(concurrency)]
        return await _timed(sessions, pid, total)


async def _timed(sessions: list[Any], pid: int, total: int) -> dict[str, float]:
    """The sessions making ``total`` calls between them, timed; the server's CPU read around them."""
    concurrency = len(sessions)
    for session in sessions:  # warm up each session and the server's code paths
        await _calls(_sdk_caller(session), 4, [])
    latencies: list[float] = []
    each = max(1, total // concurrency)
    cpu, wall = _cpu_seconds(pid), time.perf_counter()
    await asyncio.gather(*(_calls(_sdk_caller(s), each, latencies) for s in sessions))
    wall, cpu = time.perf_counter() - wall, _cpu_seconds(pid) - cpu
    return _summary(latencies, wall, cpu)


def _summary(latencies: list[float], wall: float, cpu: float | None) -> dict[str, float]:
    ordered = sorted(latencies)
    row = {
        "calls": len(ordered),
        "per_s": len(ordered) / wall,
        "p50_ms": 1e3 * statistics.median(ordered),
        "p99_ms": 1e3 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
    }
    if cpu is not None:
        row["cpu_s"] = cpu
        row["per_cpu_s"] = len(ordered) / cpu if cpu > 0 else float("nan")
    return row


async def _client_floor(url: str, count: int, rounds: int) -> dict[str, dict[str, float]]:
    """Concurrency 1 against one server: a bare SDK session against tinytools' client."""
    from tinytools.providers.mcp import connect

    timings: dict[str, list[float]] = {"mcp ClientSession": [], "tinytools connect+Dispatcher": []}
    walls = dict.fromkeys(timings, 0.0)
    async with _sdk_session(url) as session, connect(url) as box:
        callers = dict(zip(timings, (_sdk_caller(session), _tinytools_caller(box)), strict=True))
        for caller in callers.values():
            await _calls(caller, 20, [])
        for _ in range(rounds):
            for label, caller in callers.items():
                start = time.perf_counter()
                await _calls(caller, count // rounds, timings[label])
                walls[label] += time.perf_counter() - start
    return {label: _summary(timings[label], walls[label], None) for label in timings}


async def _run(quick: bool) -> tuple[list[Row], dict[str, dict[str, float]]]:
    total = 400 if quick else 2400
    rows: list[Row] = []
    floor: dict[str, dict[str, float]] = {}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        started = {}
        for kind in SERVERS:
            proc, url = _start(kind)
            procs.append(proc)
            started[kind] = (proc.pid, url)
        for transport, default in (("http", True), ("http 2025", False)):
            for concurrency in CONCURRENCY:
                for kind, (pid, url) in started.items():
                    rows.append((kind, transport, concurrency, await _load(url, pid, concurrency, total, default)))
        for concurrency in CONCURRENCY:
            for kind in SERVERS:
                rows.append((kind, "stdio", concurrency, await _load_stdio(kind, concurrency, total)))
        floor = await _client_floor(started["tinytools"][1], 300 if quick else 1600, 4 if quick else 8)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return rows, floor


def _ratios(rows: list[Row], figure: str) -> dict[tuple[str, int], float]:
    """tinytools' ``figure`` over FastMCP's, for each transport and concurrency."""
    by = {(kind, way, c): row for kind, way, c, row in rows}
    return {
        (way, c): by["tinytools", way, c][figure] / by["fastmcp", way, c][figure]
        for kind, way, c, _ in rows
        if kind == "tinytools"
    }


def _print(rows: list[Row], floor: dict[str, dict[str, float]], md: bool) -> None:
    ratios, speeds = _ratios(rows, "per_cpu_s"), _ratios(rows, "per_s")
    head = [
        "server",
        "transport",
        "at once",
        "calls/s",
        "p50",
        "p99",
        "server CPU",
        "calls/server CPU-s",
        "capacity x",
        "calls/s x",
    ]
    lines = []
    for kind, way, c, row in rows:
        mark = f"{ratios[way, c]:.2f}x" if kind == "tinytools" else ""
        speed = f"{speeds[way, c]:.2f}x" if kind == "tinytools" else ""
        lines.append(
            [
                kind,
                way,
                str(c),
                f"{row['per_s']:,.0f}",
                f"{row['p50_ms']:.2f} ms",
                f"{row['p99_ms']:.2f} ms",
                f"{row['cpu_s']:.2f} s",
                f"{row['per_cpu_s']:,.0f}",
                mark,
                speed,
            ]
        )
    _table(head, lines, md)
    print()
    base = next(iter(floor.values()))
    head = ["client (concurrency 1, tinytools server)", "calls/s", "p50", "p99", "p50 x"]
    lines = [
        [
            label,
            f"{r['per_s']:,.0f}",
            f"{r['p50_ms']:.2f} ms",
            f"{r['p99_ms']:.2f} ms",
            f"{r['p50_ms'] / base['p50_ms']:.2f}x",
        ]
        for label, r in floor.items()
    ]
    _table(head, lines, md)


def _chart(rows: list[Row], path: Path) -> None:
    """Calls per server CPU-second, tinytools beside FastMCP, for each transport and concurrency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(kind, way, c): row["per_cpu_s"] for kind, way, c, row in rows}
    order = {"http": 0, "http 2025": 1, "stdio": 2}
    groups = sorted({(way, c) for _, way, c, _ in rows}, key=lambda g: (order.get(g[0], 3), g[1]))
    figure, axis = plt.subplots(figsize=(12, 3.8))
    width = 0.38
    for offset, (kind, colour) in enumerate((("tinytools", "#1f77b4"), ("fastmcp", "#ff7f0e"))):
        places = [i + (offset - 0.5) * width for i in range(len(groups))]
        axis.bar(places, [by[kind, way, c] for way, c in groups], width, label=kind, color=colour)
    for i, (way, c) in enumerate(groups):
        top = max(by["tinytools", way, c], by["fastmcp", way, c])
        axis.annotate(f"{by['tinytools', way, c] / by['fastmcp', way, c]:.1f}x", (i, top), ha="center", va="bottom")
    axis.set_xticks(range(len(groups)), [f"{way}, {c} at once" for way, c in groups])
    axis.set_ylabel("calls per server CPU-second")
    axis.set_title("MCP server capacity: tinytools / FastMCP serving the same tools", fontsize=10)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _table(head: list[str], lines: list[list[str]], md: bool) -> None:
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
        for line in lines:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]
    for line in [head, *lines]:
        print(
            "  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(line, widths, strict=True)))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (~40 s)")
    parser.add_argument("--markdown", action="store_true", help="print the performance page's tables")
    parser.add_argument("--chart", type=Path, metavar="PNG", help="also draw server capacity as a bar chart")
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve[0], args.serve[1])
        return
    began = time.perf_counter()
    rows, floor = asyncio.run(_run(args.quick))
    _print(rows, floor, args.markdown)
    if args.chart:
        _chart(rows, args.chart)
    print(f"\n({time.perf_counter() - began:.0f} s; capacity x is tinytools / FastMCP calls per server CPU-second)")


if __name__ == "__main__":
    main()
