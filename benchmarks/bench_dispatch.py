"""Per-call cost of `dispatch` against a floor measured in the same run.

    python benchmarks/bench_dispatch.py

The floor is what any tool layer must do: decode the JSON arguments with msgspec, call the
function directly, encode its output. Each row prints ns per call and its ratio to the floor
of the same tool, so the figures survive a noisy machine. A `Dispatcher` is measured bare and
with one pass-through middleware and a list's ``append`` as its event sink. Also measured: defining a tool (the
typed reader is built by the first call and the validator compiled by the first call that
needs it, so those are shown apart) and importing tinytools in a fresh process against
importing its four dependencies alone. The last lines say which of the project's goals this run
meets (ratios to this run's floors, times for middleware and definition).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from _timing import time_imports, time_sync

from tinytools import Dispatcher, Param, Toolbox, ToolCall, dispatch, tool

decode = msgspec.json.decode
encode = msgspec.json.encode


def one(query: str) -> dict:
    return {"query": query, "hits": 3}


def seven(
    query: str,
    language: str,
    limit: Annotated[int, Param(ge=1, le=100)],
    mode: Literal["fast", "thorough"],
    page: int | None = None,
    tags: list[str] | None = None,
    region: str = "eu",
) -> dict:
    return {"query": query, "hits": limit}


CASES = {
    "one-arg": (one, b'{"query": "rust agents"}', b'{"query": 42}'),
    "seven-arg": (
        seven,
        b'{"query": "rust agents", "language": "en", "limit": 10, "mode": "fast", "page": 2,'
        b' "tags": ["a", "b", "c"], "region": "us"}',
        b'{"query": "rust agents", "language": "en", "limit": 1000, "mode": "fast", "page": 2,'
        b' "tags": ["a", "b", "c"], "region": "us"}',
    ),
}


WATCHED = "  ... one middleware + a sink"
DEFINE = "define seven-arg tool (builds nothing yet)"
DEFINE_FUTURE = "  ... under future annotations"
IMPORT = "import tinytools (ms)"
"""Row labels the goals below read as well (one spelling each)."""


def best_ns(fn, repeat: int = 7) -> float:
    """Best of ``repeat`` autoranged timeit runs, in ns per call."""
    return time_sync(fn, repeat=repeat).best


def bench_calls() -> list[tuple[str, float, float]]:
    rows = []
    for label, (fn, valid, invalid) in CASES.items():
        made = tool(fn)
        box = Toolbox([made])
        good = ToolCall("c1", made.name, valid)
        bad = ToolCall("c2", made.name, invalid)
        assert dispatch(good, box).status == "succeeded"
        assert dispatch(bad, box).error.code == "invalid_arguments"

        def floor(fn=fn, valid=valid):
            return encode(fn(**decode(valid)))

        base = best_ns(floor)
        rows.append((f"{label} floor (decode + call + encode)", base, 1.0))
        for case, call in (("valid", good), ("invalid", bad)):
            ns = best_ns(lambda call=call, box=box: dispatch(call, box))
            rows.append((f"{label} dispatch, {case}", ns, ns / base))
        rows += _dispatcher_rows(label, box, good, base)
    return rows


class _Noop:
    """Middleware that lets every call through, as an audit log would."""

    def before_tool(self, call: ToolCall, tool: object) -> None:
        return None

    def after_tool(self, call: ToolCall, tool: object, result: object) -> None:
        return None


def _dispatcher_rows(label: str, box: Toolbox, call: ToolCall, base: float) -> list[tuple[str, float, float]]:
    """A `Dispatcher` as is, and with one middleware and an event sink (a sync call each)."""
    plain = Dispatcher(box)
    seen: list[object] = []
    watched = Dispatcher(box, middleware=[_Noop()], on_event=seen.append)
    rows = []
    for case, dispatcher in (("Dispatcher.dispatch", plain), (WATCHED, watched)):
        ns = best_ns(lambda dispatcher=dispatcher: dispatcher.dispatch(call))
        seen.clear()
        rows.append((f"{label} {case}, valid", ns, ns / base))
    return rows


SEVEN_SOURCE = """
from typing import Annotated, Literal
from tinytools import Param

def seven(query: str, language: str, limit: Annotated[int, Param(ge=1, le=100)],
          mode: Literal["fast", "thorough"], page: int | None = None,
          tags: list[str] | None = None, region: str = "eu") -> dict:
    return {}
"""


def bench_definition() -> list[tuple[str, float, float]]:
    # dont_inherit: this module's own `from __future__ import annotations` would otherwise turn
    # the "plain" annotations into strings as well
    plain: dict = {}
    exec(compile(SEVEN_SOURCE, "<seven>", "exec", dont_inherit=True), plain)  # annotations as objects
    future: dict = {}
    source = "from __future__ import annotations\n" + SEVEN_SOURCE
    exec(compile(source, "<seven>", "exec", dont_inherit=True), future)  # annotations as strings
    define = best_ns(lambda: tool(plain["seven"]), repeat=5)
    define_future = best_ns(lambda: tool(future["seven"]), repeat=5)
    text = CASES["seven-arg"][1]
    payload = decode(text)

    def first_call():  # a valid call builds the typed reader; the validator stays uncompiled
        made = tool(plain["seven"])
        dispatch(ToolCall("c1", made.name, text), Toolbox([made]))

    def compile_once():  # what an invalid call adds: compiling the validator
        tool(plain["seven"]).schema.validate(payload)

    with_reader = best_ns(first_call, repeat=3)
    with_compile = best_ns(compile_once, repeat=3)
    return [
        (DEFINE, define, 1.0),
        (DEFINE_FUTURE, define_future, define_future / define),
        ("  ... then its first valid call (reader)", with_reader, with_reader / define),
        ("  ... or its validator compiled", with_compile, with_compile / define),
    ]


def bench_import() -> list[tuple[str, float, float]]:
    """Median import times in fresh processes (bytecode cached as after a pip install), taking turns."""
    both = ["import typing_extensions, docstring_parser, msgspec, fastjsonschema", "import tinytools"]
    deps, ours = (sample.median for sample in time_imports(both, runs=21))
    return [
        ("import the four dependencies (ms)", deps, 1.0),
        (IMPORT, ours, ours / deps),
    ]


GOALS = (  # (row, what it is, "ratio" or "ns", at most): the project's aims, read from this run's rows
    ("seven-arg dispatch, valid", "seven-arg dispatch, valid", "ratio", 1.3),
    ("one-arg dispatch, valid", "one-arg dispatch, valid", "ratio", 2.5),
    ("seven-arg dispatch, invalid", "seven-arg dispatch, invalid", "ratio", 3.0),
    (f"one-arg {WATCHED}, valid", "one-arg, one middleware + a sink", "ns", 8_000),
    (DEFINE, "define seven-arg tool", "ns", 150_000),
    (DEFINE_FUTURE, "define it under future annotations", "ns", 150_000),
    (IMPORT, "import tinytools / its dependencies", "ratio", 1.3),
)


def goals(measured: dict[str, tuple[float, float]]) -> list[str]:
    """One line per goal: met or missed, and by how much, from the rows of this run."""
    lines = []
    for row, what, kind, most in GOALS:
        value, ratio = measured[row]
        got = ratio if kind == "ratio" else value
        if kind == "ratio":
            shown = f"{got:.2f}x (at most {most}x)"
        else:
            shown = f"{got / 1000:,.1f} us (at most {most / 1000:,.0f} us)"
        lines.append(_verdict(got <= most, what, shown))
    for label in ("one-arg", "seven-arg"):
        own = measured[f"{label} Dispatcher.dispatch, valid"][0] / measured[f"{label} dispatch, valid"][0]
        shown = f"{own:.2f}x (at most 1.05x)"
        lines.append(_verdict(own <= 1.05, f"{label} Dispatcher.dispatch / module dispatch", shown))
    return lines


def _verdict(met: bool, what: str, shown: str) -> str:
    return f"{'met   ' if met else 'MISSED'} {what:<48} {shown}"


def main() -> None:
    print(f"{'case':<44} {'time':>12} {'ratio':>8}")
    measured: dict[str, tuple[float, float]] = {}
    for title, rows, unit in (
        ("per call", bench_calls(), "ns"),
        ("definition", bench_definition(), "ns"),
        ("import", bench_import(), "ms"),
    ):
        print(f"-- {title}")
        for name, value, ratio in rows:
            measured[name] = (value, ratio)
            shown = f"{value / 1000:,.1f} us" if unit == "ns" and value > 10_000 else f"{value:,.0f} {unit}"
            if unit == "ms":
                shown = f"{value:,.1f} ms"
            print(f"{name:<44} {shown:>12} {ratio:>7.2f}x")
    print("-- goals")
    print("\n".join(goals(measured)))


if __name__ == "__main__":
    main()
