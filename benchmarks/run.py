"""tinytools against the floor and its peers, measured side by side in one run.

    pip install -e ".[bench]" && python benchmarks/run.py [--quick] [--no-save] [--only call import ...]

A run of every section is saved to ``results.json`` and the chart (the performance page shows
it); a run of some sections (``--only``) is printed only.

Sections (each row's ratio is to the floor row of its own section, measured in the same run):

- ``call``: ns per call of a one-argument tool and a seven-argument tool with constraints, on
  a valid and an invalid payload, arguments given as JSON text. The floor is msgspec decode +
  direct call + msgspec encode, with no validation. A peer whose API takes a dict gets the
  payload decoded by msgspec, the cheapest decoder there is; an async path is timed by awaiting
  many calls inside one event loop. On an invalid payload tinytools returns a result the model
  can read; the peers' rows stop at the raised exception (their cheapest handling).
- ``import``: ms to import each library in a fresh interpreter (median of 9, bytecode cached
  by an untimed first run). The floor imports tinytools' four dependencies.
- ``define``: us to define one seven-argument tool until it is ready to serve: decorated,
  schema exported, one valid call made (so what a valid call builds lazily is built). The floor
  reads the signature and type hints and makes the same call.
- ``build``: ms to define 1,000 tools and export all their schemas (no calls).
- ``memory``: bytes held per tool (tracemalloc) after defining 100 tools and calling each
  once. The floor is the plain function itself.
- ``batch``: ms for 1,000 async calls that each sleep 10 ms, at most 64 at once:
  ``Dispatcher.adispatch_many`` against ``asyncio.gather`` under a semaphore.

Peer loggers are silenced while timing, so no row pays for printing a warning. Results go to
``benchmarks/results.json`` beside this file and ``docs/assets/results.png`` (the chart the docs show).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _peers import Adapter, available_adapters
from _report import check_targets, draw_chart, markdown, print_table, write_json
from _timing import Sample, time_async, time_import, time_once, time_sync, traced_bytes

HERE = Path(__file__).resolve().parent
CHART = HERE.parent / "docs" / "assets" / "results.png"
KINDS = {"one": "one-arg", "seven": "seven-arg"}
SECTIONS = ("call", "import", "define", "build", "memory", "batch")


class Settings:
    """Counts and repeats; ``--quick`` shrinks them for a smoke run."""

    def __init__(self, quick: bool) -> None:
        self.call_repeat = 3 if quick else 7
        self.import_runs = 3 if quick else 9
        self.define_tools = 10 if quick else 50
        self.define_repeat = 3 if quick else 5
        self.build_tools = 1_000
        self.build_repeat = 1 if quick else 3
        self.memory_tools = 20 if quick else 100
        self.batch_repeat = 1 if quick else 5


def row(label: str, case: str, sample: Sample, floor: float | None, **extra: Any) -> dict[str, Any]:
    median = sample.median
    return {
        "library": label,
        "case": case,
        "median": median,
        "best": sample.best,
        "values": list(sample.values),
        "ratio": median / floor if floor else 1.0,
        **extra,
    }


def bench_call(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    rows = []
    for kind, kind_label in KINDS.items():
        floor = None
        for adapter in adapters:
            if "call" not in adapter.sections:
                continue
            good, bad = adapter.prepare(kind)
            timer = time_async if adapter.async_calls else time_sync
            valid = timer(good, repeat=settings.call_repeat)
            floor = floor or valid.median
            rows.append(row(adapter.label, f"{kind_label} valid", valid, floor))
            if adapter.label != "floor":
                invalid = timer(bad, repeat=settings.call_repeat)
                rows.append(row(adapter.label, f"{kind_label} invalid", invalid, floor))
            print(f"  call: {adapter.label}, {kind_label}", file=sys.stderr)
    return {"key": "call", "title": "Per call", "unit": "ns", "rows": rows}


def bench_import(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    rows = []
    floor = None
    for adapter in adapters:
        if "import" not in adapter.sections:
            continue
        sample = time_import(adapter.import_statement, runs=settings.import_runs)
        floor = floor or sample.median
        rows.append(row(adapter.name, adapter.import_statement, sample, floor))
        print(f"  import: {adapter.label}", file=sys.stderr)
    return {"key": "import", "title": "Import in a fresh process", "unit": "ms", "rows": rows}


def _define_all(adapter: Adapter, state: Any, fns: list[Any]) -> Any:
    if adapter.is_async:

        async def run() -> list[Any]:
            return [await adapter.define_ready(state, fn) for fn in fns]

        return run()
    return [adapter.define_ready(state, fn) for fn in fns]


def bench_define(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    rows = []
    floor = None
    count = settings.define_tools
    for adapter in adapters:
        if "define" not in adapter.sections:
            continue
        warm = adapter.start()
        outcome = _define_all(adapter, warm, adapter.functions("seven", 1, prefix="warm"))
        if asyncio.iscoroutine(outcome):
            asyncio.run(outcome)
        sample = time_once(
            lambda adapter=adapter: (adapter.start(), adapter.functions("seven", count, prefix="d")),
            lambda state, adapter=adapter: _define_all(adapter, *state),
            repeat=settings.define_repeat,
        )
        per_tool = Sample(tuple(value / count * 1e9 for value in sample.values))
        floor = floor or per_tool.median
        rows.append(row(adapter.name, "define one seven-arg tool, ready to serve", per_tool, floor))
        print(f"  define: {adapter.label}", file=sys.stderr)
    return {"key": "define", "title": "Define one tool", "unit": "ns", "rows": rows}


def bench_build(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    rows = []
    floor = None
    count = settings.build_tools
    for adapter in adapters:
        if "build" not in adapter.sections:
            continue
        sample = time_once(
            lambda adapter=adapter: adapter.functions("seven", count, prefix="b"),
            adapter.build,
            repeat=settings.build_repeat,
        )
        in_ms = Sample(tuple(value * 1e3 for value in sample.values))
        floor = floor or in_ms.median
        rows.append(row(adapter.name, f"{count:,} tools defined and exported", in_ms, floor))
        print(f"  build: {adapter.label}", file=sys.stderr)
    return {"key": "build", "title": f"Build {count:,} tools", "unit": "ms", "rows": rows}


def bench_memory(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    rows = []
    floor = None
    count = settings.memory_tools
    for adapter in adapters:
        if "memory" not in adapter.sections:
            continue
        if adapter.name == "floor":
            used, _ = traced_bytes(lambda adapter=adapter: adapter.functions("seven", count, prefix="m"))
        else:
            state = adapter.start()
            fns = adapter.functions("seven", count, prefix="m")
            used, kept = traced_bytes(lambda adapter=adapter, state=state, fns=fns: _define_all(adapter, state, fns))
            del kept, state, fns
        per_tool = Sample((used / count,))
        floor = floor or per_tool.median
        rows.append(row(adapter.name, "bytes held per tool", per_tool, floor))
        print(f"  memory: {adapter.label}", file=sys.stderr)
    return {"key": "memory", "title": "Memory per tool", "unit": "B", "rows": rows}


BATCH_CALLS = 1_000
BATCH_CONCURRENCY = 64
BATCH_SLEEP = 0.01


async def _sleep(n: int) -> int:
    await asyncio.sleep(BATCH_SLEEP)
    return n


async def _gather() -> list[int]:
    semaphore = asyncio.Semaphore(BATCH_CONCURRENCY)

    async def one(n: int) -> int:
        async with semaphore:
            return await _sleep(n)

    return await asyncio.gather(*(one(n) for n in range(BATCH_CALLS)))


async def _dispatcher() -> list[Any]:
    from tinytools import Dispatcher, ToolCall, tool

    dispatcher = Dispatcher([tool(_sleep, name="sleep")], max_concurrency=BATCH_CONCURRENCY)
    calls = [ToolCall(f"c{n}", "sleep", {"n": n}) for n in range(BATCH_CALLS)]
    return await dispatcher.adispatch_many(calls)


def bench_batch(adapters: list[Adapter], settings: Settings) -> dict[str, Any]:
    def seconds(make: Any) -> Sample:
        values = []
        for _ in range(settings.batch_repeat):
            start = time.perf_counter()
            asyncio.run(make())
            values.append((time.perf_counter() - start) * 1e3)
        return Sample(tuple(values))

    case = f"{BATCH_CALLS:,} x {BATCH_SLEEP * 1e3:.0f} ms sleeps, {BATCH_CONCURRENCY} at once"
    asyncio.run(_gather())  # untimed: the first dispatcher imports its runner
    asyncio.run(_dispatcher())
    floor = seconds(_gather)
    ours = seconds(_dispatcher)
    print("  batch", file=sys.stderr)
    return {
        "key": "batch",
        "title": "Batch of async calls",
        "unit": "ms",
        "rows": [
            row("floor: asyncio.gather + semaphore", case, floor, floor.median),
            row("tinytools Dispatcher.adispatch_many", case, ours, floor.median),
        ],
    }


BENCHES = {
    "call": bench_call,
    "import": bench_import,
    "define": bench_define,
    "build": bench_build,
    "memory": bench_memory,
    "batch": bench_batch,
}


def metadata(adapters: list[Adapter], skipped: list[str], quick: bool) -> dict[str, Any]:
    return {
        "command": "python benchmarks/run.py" + (" --quick" if quick else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": {adapter.name: adapter.version() for adapter in adapters if adapter.name != "floor"},
        "notes": {adapter.label: adapter.notes for adapter in adapters},
        "skipped": skipped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--no-save", action="store_true", help="print only; write no JSON or PNG")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SECTIONS,
        default=list(SECTIONS),
        metavar="SECTION",
        help="measure these sections alone (printed, not saved: results.json holds one whole run)",
    )
    parser.add_argument(
        "--report", action="store_true", help="measure nothing: print, chart and tabulate the saved results.json"
    )
    parser.add_argument("--markdown", action="store_true", help="also print the performance page's tables")
    options = parser.parse_args()
    if options.report:
        results = json.loads((HERE / "results.json").read_text())
        print_table(results)
        draw_chart(results, CHART)
        if options.markdown:
            print("\n" + markdown(results))
        return

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    adapters, skipped = available_adapters()
    if skipped:
        print(f"skipped (not installed; pip install -e '.[bench]'): {', '.join(skipped)}", file=sys.stderr)
    settings = Settings(options.quick)
    started = time.perf_counter()
    sections = [BENCHES[key](adapters, settings) for key in SECTIONS if key in options.only]
    results = {"meta": metadata(adapters, skipped, options.quick), "sections": sections}
    results["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    results["targets"] = check_targets(sections)
    print_table(results)
    if set(options.only) != set(SECTIONS) and not options.no_save:
        print("\nnot saved: results.json and the chart hold one run of every section", file=sys.stderr)
    elif not options.no_save:
        write_json(results, HERE / "results.json")
        draw_chart(results, CHART)
        print(f"\nwrote {HERE / 'results.json'} and {CHART}")
    if options.markdown:
        print("\n" + markdown(results))


if __name__ == "__main__":
    main()
