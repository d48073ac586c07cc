"""The ``$ref`` calls of a compiled validator, and which targets one value could reach twice.

The generated validator is one function per ``$ref`` target, and a call site in each function
that references another; each site passes the value at a path below its function's input (a
key, an index, or any item or key of a loop). A target called from two sites whose values can
be the same one (levels of ``anyOf`` over the same definitions, or a recursive ``anyOf`` whose
branches both descend into the items) would be run once per path to it: ten to the power of
the levels. `repeated_targets` names those targets, so only their calls are remembered
(`tinytools._schema.codegen`); a target referenced from places that hold different values
(``src`` and ``dst`` of one ``Address`` type, the ``left`` and ``right`` of a tree) keeps its
direct call.

It reasons on paths from the root of the arguments: a function's paths are its callers' paths
followed by each call's steps. A function inside a loop of references can be reached at any
depth, so its paths are "anything that ends with" its steps. Two sites can pass the same value
when one of their paths can equal the other; when unsure, they can.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["Call", "repeated_targets"]

Step = str | int | None
"""A key, an index, or None for any key or item of a loop."""

MAX_PATHS = 32
"""More paths than this to one function and it is taken as reachable anywhere."""


class Call(NamedTuple):
    """One ``$ref`` call site of the generated code."""

    caller: str
    """The function the site is in."""
    target: str
    """The function it calls."""
    steps: tuple[Step, ...]
    """From the caller's input to the value it passes."""


class _Path(NamedTuple):
    anchored: bool
    """True: exactly ``steps`` from the root; False: any path that ends with ``steps``."""
    steps: tuple[Step, ...]


def repeated_targets(calls: Iterable[Call], entry: str) -> set[str]:
    """The targets that two of ``calls`` could call on the same value, starting from ``entry``."""
    calls = list(calls)
    paths = _paths(calls, entry)
    sites: dict[str, list[list[_Path]]] = {}  # target -> each site's paths
    for call in calls:
        sites.setdefault(call.target, []).append(
            [_Path(path.anchored, path.steps + call.steps) for path in paths.get(call.caller, ())]
        )
    return {target for target, found in sites.items() if _two_meet(found)}


def _two_meet(sites: list[list[_Path]]) -> bool:
    """Whether paths of two different sites can match the same value (many sites: assume so)."""
    if len(sites) > MAX_PATHS:
        return True
    return any(
        _overlap(one, other)
        for index, mine in enumerate(sites)
        for theirs in sites[index + 1 :]
        for one in mine
        for other in theirs
    )


def _paths(calls: list[Call], entry: str) -> dict[str, set[_Path]]:
    """Each function's paths from the root (a function no call reaches has none)."""
    callees: dict[str, list[Call]] = {}
    for call in calls:
        callees.setdefault(call.caller, []).append(call)
    looping = _in_loops(callees)
    paths: dict[str, set[_Path]] = {entry: {_Path(True, ())}}
    anywhere = {_Path(False, ())}
    pending = [entry]
    while pending:  # each function's set only grows, and is capped: this ends
        caller = pending.pop()
        for call in callees.get(caller, ()):
            if call.target in looping:
                grown = anywhere
            else:
                grown = paths.get(call.target, set()) | {
                    _Path(path.anchored, path.steps + call.steps) for path in paths[caller]
                }
                if len(grown) > MAX_PATHS:
                    grown = anywhere
            if grown != paths.get(call.target):
                paths[call.target] = grown
                pending.append(call.target)
    return paths


def _in_loops(callees: dict[str, list[Call]]) -> set[str]:
    """The functions on a loop of calls (including a call of itself), and every function they call."""
    looping: set[str] = set()
    for start in callees:
        stack, seen = [call.target for call in callees[start]], set()
        while stack:
            name = stack.pop()
            if name == start:
                looping.add(start)
                break
            if name not in seen:
                seen.add(name)
                stack.extend(call.target for call in callees.get(name, ()))
    reached, stack = set(looping), list(looping)
    while stack:
        for call in callees.get(stack.pop(), ()):
            if call.target not in reached:
                reached.add(call.target)
                stack.append(call.target)
    return reached


def _overlap(one: _Path, other: _Path) -> bool:
    """Whether some value's path can match both.

    An anchored path is exactly its steps; an open one is any path that ends with its steps.
    """
    if one.anchored and other.anchored and len(one.steps) != len(other.steps):
        return False
    for path, against in ((one, other), (other, one)):
        if against.anchored and not path.anchored and len(path.steps) > len(against.steps):
            return False  # every path it stands for is longer than the exact one
    ends = zip(reversed(one.steps), reversed(other.steps), strict=False)  # as long as the shorter
    return all(a is None or b is None or a == b for a, b in ends)
