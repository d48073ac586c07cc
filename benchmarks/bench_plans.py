"""Call plans: what checking a plan costs, and what the model reads of one, against the same steps one by one.

    python benchmarks/bench_plans.py

1. **Validation**, for plans of 1 to 50 steps (each step after the first refers to the one before
   it, so every step has a reference to type-check): reading the plan call's arguments against the
   plan tool's schema and checking it whole (`tinytools._run.call_plans.check`), the work a plan
   pays before its first step. Floor, in the same run: dispatching the same steps one by one (as
   many single calls). The goal: at most 20 µs plus 3 µs per step (a least-squares line through
   the best figures gives the two figures).
2. **Running**: a whole plan through `Dispatcher.dispatch`, against the same steps dispatched one
   by one (no model round trips counted: only the library's own work).
3. **Bytes the model reads**: a 10-step plan returning one value, against the sum of the texts of
   the ten results the model would read when calling the tools one by one.
"""

from __future__ import annotations

import statistics
from typing import Any, TypedDict

import msgspec
from _timing import time_sync

from tinytools import Dispatcher, Toolbox, ToolCall, tool
from tinytools._run.call_plans import Checked, check
from tinytools._run.call_state import CallState

SIZES = (1, 5, 10, 20, 50)


class Offer(TypedDict):
    id: str
    price: float
    seats: list[str]


class Found(TypedDict):
    offers: list[Offer]
    query: str


@tool
def find(to: str, max_price: float = 900.0) -> Found:
    """Find flights to a city."""
    return {
        "offers": [{"id": f"{to}-{n}", "price": 100.0 + n, "seats": ["12A", "12B", "14C"]} for n in range(8)],
        "query": f"flights to {to} under {max_price}",
    }


def toolbox(others: int = 0) -> Toolbox:
    """``find`` and the plan tool; with ``others`` more tools listed before ``find`` in the plan's schema."""
    extra = []
    for number in range(others):

        def other(to: str, n: int = 1) -> str:
            """Another tool of the toolbox."""
            return to

        extra.append(tool(name=f"other{number}")(other))
    box = Toolbox([*extra, find])
    box.plan_tool(max_steps=max(SIZES))
    return box


def plan_of(size: int) -> dict[str, Any]:
    steps = [{"id": "s0", "tool": "find", "arguments": {"to": "OSL"}}]
    steps += [
        {"id": f"s{n}", "tool": "find", "arguments": {"to": {"$from": f"s{n - 1}", "at": "/offers/0/id"}}}
        for n in range(1, size)
    ]
    return {"steps": steps, "return": [f"s{size - 1}"]}


def validation(dispatcher: Dispatcher, size: int) -> tuple[float, float]:
    """µs to read and check a plan of ``size`` steps, and µs to dispatch its steps one by one."""
    plan_tool = dispatcher.toolbox["run_plan"]
    call = ToolCall("p", "run_plan", msgspec.json.encode(plan_of(size)))  # as a provider sends it: JSON text
    plan = dispatcher.plan(plan_tool)
    scope = dispatcher.scope(None, None, None, None)
    pipeline = dispatcher.pipeline

    def read_and_check() -> None:
        read = plan.read(call)
        state = CallState(call, plan, scope, 0)
        assert isinstance(check(pipeline, state, read.arguments), Checked)  # type: ignore[union-attr]

    singles = [ToolCall(f"c{n}", "find", b'{"to": "OSL"}') for n in range(size)]

    def one_by_one() -> None:
        for single in singles:
            dispatcher.dispatch(single)

    return time_sync(read_and_check).best / 1000, time_sync(one_by_one).best / 1000


def line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares: (intercept, slope)."""
    xs = [float(x) for x, _ in points]
    ys = [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum((x - mean_x) ** 2 for x in xs)
    return mean_y - slope * mean_x, slope


def main() -> None:
    box = toolbox()
    dispatcher = Dispatcher(box)
    print("1. validation (read + check), µs, against the same steps dispatched one by one")
    print(f"   {'steps':>5}  {'check':>9}  {'one by one':>11}  {'ratio':>6}")
    points = []
    for size in SIZES:
        checked, singles = validation(dispatcher, size)
        points.append((size, checked))
        print(f"   {size:>5}  {checked:>9.1f}  {singles:>11.1f}  {checked / singles:>6.2f}")
    fixed, per_step = line(points)
    verdict = "met" if fixed <= 20 and per_step <= 3 else "missed"
    print(f"   fit: {fixed:.1f} µs + {per_step:.2f} µs per step (goal: at most 20 + 3 per step: {verdict})")
    many = Dispatcher(toolbox(others=19))
    checked, singles = validation(many, max(SIZES))
    print(
        f"   {max(SIZES)} steps over 20 tools (each step the last tool of the schema): {checked:.1f} µs,"
        f" one by one {singles:.1f} µs, ratio {checked / singles:.2f}"
    )

    print("\n2. running, µs: a whole plan against its steps one by one")
    for size in (1, 10, 50):
        call = ToolCall("p", "run_plan", msgspec.json.encode(plan_of(size)))
        whole = time_sync(lambda call=call: Dispatcher(box).dispatch(call), repeat=5).best / 1000
        singles = [ToolCall(f"c{n}", "find", b'{"to": "OSL"}') for n in range(size)]
        floor = time_sync(lambda singles=singles: [Dispatcher(box).dispatch(c) for c in singles], repeat=5).best / 1000
        print(f"   {size:>3} steps: plan {whole:9.1f}   one by one {floor:9.1f}   ratio {whole / floor:5.2f}")

    print("\n3. bytes the model reads: a 10-step plan returning one value, against the ten results")
    result = Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan_of(10)))
    plan_bytes = len(result.text().encode())
    separate = [Dispatcher(box).dispatch(ToolCall(f"c{n}", "find", {"to": "OSL"})) for n in range(10)]
    separate_bytes = sum(len(item.text().encode()) for item in separate)
    print(f"   plan {plan_bytes} bytes; one by one {separate_bytes} bytes; ratio {plan_bytes / separate_bytes:.2f}")


if __name__ == "__main__":
    main()
