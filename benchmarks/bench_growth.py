"""Cost stays linear in what the model sends: double each hostile input and print the growth.

    python benchmarks/bench_growth.py [--quick]

Each family is a kind of input a model can send that once cost more than its size. Every row
doubles the input and prints the time of one call at each size and the growth ratio per
doubling (2.0 is linear, 4.0 quadratic). The floor row, measured in the same run, is msgspec
decoding a valid JSON text of the same size, which is as linear as parsing gets. Families:

- ``set flood``: a ``set[int]`` argument whose integers all hash alike (``k * (2**61 - 1)``).
- ``salvage``: a reply whose JSON call is broken, nested 4 levels deep and twice as deep per
  doubling (up to 60), behind filler that a parser reading each level again reads again.
- ``repeated keys``: a text call whose arguments repeat keys, which is refused.
- ``p-type repeated key``: a p-type object whose first key comes again at its end.
- ``lone surrogates``: calls each after a lone surrogate (each call is checked for one).
- ``decimal``: a ``Decimal`` argument of ever more digits.
- ``long key``: an unexpected argument whose key doubles in length (the error echoes it cut).
- ``nested failures``: a list of models whose every item is wrong in two places; every failure
  at any depth is counted (ten are listed), so the work is a walk over the whole argument.

Times are the best of several runs; what matters is the ratio, which noise moves little.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import msgspec

from tinytools import Toolbox, ToolCall, dispatch, tool
from tinytools.formats import ToolFormat, parse_calls


@tool
def members(values: set[int]) -> int:
    """Count distinct values."""
    return len(values)


@tool
def search(query: str) -> str:
    """Search."""
    return query


@tool
def price(amount: Decimal) -> str:
    """Echo an amount."""
    return str(amount)


@tool(format=ToolFormat.ptype(["data"]))
def tally(data: dict[str, int]) -> int:
    """Sum the values."""
    return sum(data.values())


@dataclass
class Stop:
    city: str
    nights: int


@tool
def route(stops: list[Stop]) -> int:
    """Count the stops."""
    return len(stops)


TOOLS = Toolbox([members, search, price, route])
PTYPE_TOOLS = Toolbox([tally])
COLLIDE = 2**61 - 1


def set_flood(size: int) -> Callable[[], object]:
    call = ToolCall("c", "members", msgspec.json.encode({"values": [k * COLLIDE for k in range(size // 20)]}))
    return lambda: dispatch(call, TOOLS)


def salvage(size: int) -> Callable[[], object]:
    depth = min(60, size // 4096)  # a scan follows at most 64 levels
    inner = '{"name": "search", "arguments": {"query": "x",}}'
    filler = '"' + "f" * (size // depth) + '"'
    for _ in range(depth):
        inner = f'{{"a": {filler}, "b": {inner}}}'
    return lambda: parse_calls(inner, TOOLS)


def repeated_keys(size: int) -> Callable[[], object]:
    pairs = ", ".join(f'"k{i % 50}": {i}' for i in range(size // 12))
    text = '{"name": "search", "arguments": {' + pairs + "}}"
    return lambda: [dispatch(call, TOOLS) for call in parse_calls(text, TOOLS)]


def ptype_repeat(size: int) -> Callable[[], object]:
    pairs = ", ".join(f'"k{i}": {i}' for i in range(size // 12))
    text = f'tally(data={{{pairs}, "k0": 0}})'
    return lambda: parse_calls(text, PTYPE_TOOLS)


def surrogates(size: int) -> Callable[[], object]:
    text = "".join('\ud800 {"name": "search", "arguments": {"query": "x"}}' for _ in range(size // 50))
    return lambda: parse_calls(text, TOOLS)


def decimal(size: int) -> Callable[[], object]:
    call = ToolCall("c", "price", '{"amount": "' + "9" * size + '.5"}')
    return lambda: dispatch(call, TOOLS)


def long_key(size: int) -> Callable[[], object]:
    call = ToolCall("c", "search", msgspec.json.encode({"query": "x", "k" * size: 1}))
    return lambda: dispatch(call, TOOLS)


def nested_failures(size: int) -> Callable[[], object]:
    call = ToolCall("c", "route", msgspec.json.encode({"stops": [{"city": 1, "nights": "x"}] * (size // 28)}))
    return lambda: dispatch(call, TOOLS)


def floor(size: int) -> Callable[[], object]:
    text = msgspec.json.encode({"values": list(range(size // 8))})
    return lambda: msgspec.json.decode(text)


FAMILIES: dict[str, Callable[[int], Callable[[], object]]] = {
    "floor (msgspec decode)": floor,
    "set flood": set_flood,
    "salvage": salvage,
    "repeated keys": repeated_keys,
    "p-type repeated key": ptype_repeat,
    "lone surrogates": surrogates,
    "decimal": decimal,
    "long key": long_key,
    "nested failures": nested_failures,
}


def best_seconds(work: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer runs")
    options = parser.parse_args()
    sizes = [2**exponent * 1024 for exponent in range(4, 9 if options.quick else 11)]
    runs = 3 if options.quick else 7
    print(f"{'family':<24}" + "".join(f"{size // 1024:>8} KiB" for size in sizes) + "   growth per doubling")
    for name, build in FAMILIES.items():
        times = [best_seconds(build(size), runs) for size in sizes]
        growth = [later / earlier for earlier, later in itertools.pairwise(times)]
        cells = "".join(f"{seconds * 1e3:>9.2f}ms" for seconds in times)
        print(f"{name:<24}{cells}   " + " ".join(f"{ratio:.1f}" for ratio in growth))


if __name__ == "__main__":
    main()
