"""Cost of `InputSchema.validate` against raw fastjsonschema on the same schema, same run.

    python benchmarks/bench_validation.py

The floor is ``fastjsonschema.compile`` of the tool's input schema (``use_default=False``, so
it never writes into the arguments; no formats are in the schema). Its invalid rows only raise
fastjsonschema's own exception; ours also map it to an `ArgumentsError` with pointer, keyword,
parameter, reason and schema fragment. Each row prints ns per call (gc.collect(), then timeit
autorange, best of 7) and the ratio to the raw row of the same case. Also measured: parsing the
schema (with and without the defensive copy), and parsing plus compiling it, against
fastjsonschema compiling it. A second tool nests dataclasses ($ref, arrays of objects, an
optional object) to cover the other shapes `@tool` generates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastjsonschema
from _timing import time_sync
from bench_dispatch import seven  # the same seven-argument tool as the per-call benchmark

from tinytools import InputSchema, tool
from tinytools._errors import ArgumentsError


@dataclass
class Point:
    x: float
    y: float
    label: str | None = None


def draw(points: list[Point], origin: Point, style: Point | None = None, scale: float = 1.0) -> None:
    return None


GOOD: dict[str, Any] = {
    "query": "rust agents",
    "language": "en",
    "limit": 10,
    "mode": "fast",
    "page": 2,
    "tags": ["a", "b", "c"],
    "region": "us",
}
CASES: dict[str, dict[str, Any]] = {
    "valid": GOOD,
    "invalid: limit 1000 > maximum 100": {**GOOD, "limit": 1000},
    "invalid: tags[1] is 3, not a string": {**GOOD, "tags": ["a", 3]},
    "invalid: required 'query' missing": {k: v for k, v in GOOD.items() if k != "query"},
    "invalid: extra key 'bogus'": {**GOOD, "bogus": 1},
}
DRAWING: dict[str, Any] = {
    "points": [{"x": 0, "y": 1.5}, {"x": 2, "y": 3, "label": "b"}, {"x": 4.5, "y": 5}],
    "origin": {"x": 0, "y": 0},
    "style": None,
}
NESTED: dict[str, dict[str, Any]] = {
    "valid": DRAWING,
    "valid, style an object": {**DRAWING, "style": {"x": 1, "y": 1}},
    "invalid: points[1].y is a string": {**DRAWING, "points": [{"x": 0, "y": 0}, {"x": 1, "y": "2"}]},
}


def best_ns(fn, repeat: int = 7) -> float:
    """Best of ``repeat`` autoranged timeit runs, in ns per call."""
    return time_sync(fn, repeat=repeat).best


def caught(check: Callable[[Any], object], data: Any) -> Callable[[], object]:
    def run() -> object:
        try:
            return check(data)
        except (ArgumentsError, fastjsonschema.JsonSchemaValueException) as exc:
            return exc

    return run


def bench_calls(schema: InputSchema, cases: dict[str, dict[str, Any]]) -> list[tuple[str, float, float]]:
    raw = fastjsonschema.compile(schema.schema, use_default=False, use_formats=False)
    caught(schema.validate, {})()  # compile before timing: the first call replaces the method
    rows = []
    for label, data in cases.items():
        floor = best_ns(caught(raw, data))
        ours = best_ns(caught(schema.validate, data))
        rows.append((f"{label:<38} raw fastjsonschema", floor, 1.0))
        rows.append((f"{label:<38} InputSchema.validate", ours, ours / floor))
    return rows


def bench_parse(schema: InputSchema) -> list[tuple[str, float, float]]:
    text = schema.schema

    def parse_and_compile() -> None:
        InputSchema.parse(text).validate(GOOD)

    floor = best_ns(lambda: fastjsonschema.compile(text, use_default=False, use_formats=False), repeat=5)
    parse = best_ns(lambda: InputSchema.parse(text), repeat=5)
    owned = best_ns(lambda: InputSchema.parse(text, copy=False), repeat=5)  # never changes ``text``
    both = best_ns(parse_and_compile, repeat=5)
    return [
        ("fastjsonschema.compile", floor, 1.0),
        ("InputSchema.parse (checks + translation)", parse, parse / floor),
        ("InputSchema.parse(copy=False) (the same, no deep copy)", owned, owned / floor),
        ("InputSchema.parse + first validate (compiles)", both, both / floor),
    ]


def show(title: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{title}")
    for label, ns, ratio in rows:
        print(f"  {label:<62} {ns:>11,.0f} ns {ratio:>6.2f}x")


def main() -> None:
    schema = tool(seven).schema
    for label, data in CASES.items():
        try:
            schema.validate(data)
        except ArgumentsError as exc:
            fields = (exc.pointer, exc.keyword, exc.parameter, exc.reason)
            print(f"{label:<38} -> {fields}")
    show("validate, 7-argument tool (ratio: to raw fastjsonschema, same case)", bench_calls(schema, CASES))
    nested = tool(draw).schema
    show("validate, nested dataclasses (ratio: to raw fastjsonschema, same case)", bench_calls(nested, NESTED))
    show("parse and compile (ratio: to fastjsonschema.compile)", bench_parse(schema))


if __name__ == "__main__":
    main()
