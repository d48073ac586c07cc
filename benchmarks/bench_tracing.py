"""What tracing costs a call, against the same dispatcher with tracing off, in the same run.

    python benchmarks/bench_tracing.py

Rows, each the median of alternating rounds (a noisy machine hits them all alike):

- **off**: ``Dispatcher(tools, tracing=False)``, the floor. A dispatcher where
  ``opentelemetry-api`` is not installed does exactly this (its tracer is None).
- **API absent**: the same call in a subprocess where ``opentelemetry`` cannot be imported, against
  ``tracing=False`` in that subprocess.
- **API, no provider**: ``opentelemetry.trace`` imported, no tracer provider set: the default
  dispatcher checks, per call, whether one was set since (goal: at most 1 µs over the floor).
- **SDK, in-memory exporter**: a `TracerProvider` with a `SimpleSpanProcessor` over an
  `InMemorySpanExporter` and a `MeterProvider`: every call gets its span and its duration.

Two call shapes: a plain call (the express path while nothing traces) and a call through the
whole pipeline (a dispatcher with an event sink).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

ROUNDS = 9
CALLS = 3_000

ABSENT = """
import json, sys, time, statistics
sys.modules["opentelemetry"] = None  # cannot be imported: as if not installed
from tinytools import Dispatcher, ToolCall, tool

@tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

calls = [ToolCall(f"c{n}", "add", {"a": n, "b": 1}) for n in range(%(calls)d)]
def per_call(d):
    start = time.perf_counter()
    for call in calls:
        d.dispatch(call)
    return (time.perf_counter() - start) / len(calls) * 1e6
default, off = Dispatcher([add]), Dispatcher([add], tracing=False)
rows = {"default": [], "off": []}
for _ in range(%(rounds)d):
    rows["default"].append(per_call(default))
    rows["off"].append(per_call(off))
print(json.dumps({k: statistics.median(v) for k, v in rows.items()}))
"""


def _per_call_us(dispatcher: Any, calls: list[Any]) -> float:
    dispatch = dispatcher.dispatch
    start = time.perf_counter()
    for call in calls:
        dispatch(call)
    return (time.perf_counter() - start) / len(calls) * 1e6


def main() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tinytools import Dispatcher, ToolCall, Tracing, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    sdk = Tracing(tracer_provider=tracer_provider, meter_provider=meter_provider)
    calls = [ToolCall(f"c{n}", "add", {"a": n, "b": 1}) for n in range(CALLS)]

    def sink(event: Any) -> None:
        return None

    shapes = {
        "plain call": {},
        "whole pipeline": {"on_event": sink},
    }
    for shape, options in shapes.items():
        dispatchers = {
            "off (floor)": Dispatcher([add], tracing=False, **options),
            "API, no provider": Dispatcher([add], **options),
            "SDK, in-memory exporter": Dispatcher([add], tracing=sdk, **options),
        }
        rows: dict[str, list[float]] = {name: [] for name in dispatchers}
        for _ in range(ROUNDS):
            for name, dispatcher in dispatchers.items():
                rows[name].append(_per_call_us(dispatcher, calls))
                exporter.clear()
        floor = statistics.median(rows["off (floor)"])
        print(f"\n{shape} ({CALLS} calls x {ROUNDS} rounds, medians)")
        print(f"  {'row':<26}{'us/call':>10}{'over floor':>12}{'ratio':>8}")
        for name, values in rows.items():
            median = statistics.median(values)
            print(f"  {name:<26}{median:>10.2f}{median - floor:>+12.2f}{median / floor:>8.2f}")

    script = ABSENT % {"calls": CALLS, "rounds": ROUNDS}
    absent = json.loads(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    )
    print("\nAPI absent (a subprocess where opentelemetry cannot be imported; plain call)")
    print(f"  default dispatcher {absent['default']:.2f} us/call, tracing=False {absent['off']:.2f} us/call,")
    print(f"  ratio {absent['default'] / absent['off']:.2f}")


if __name__ == "__main__":
    main()
