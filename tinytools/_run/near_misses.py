"""Near misses: the tool a model probably meant when it named one that does not exist.

A requested name is a near miss of an offered one when the two are the same but for case and
the separators ``_``, ``-``, ``.`` and space, or, for names of four characters or more, within
a small edit distance of each other (one edit below six characters, two from six on; swapping
two neighbouring characters counts as one edit). Only an unambiguous match is suggested: when
two offered names are equally close, neither is. The caller passes only the names the model may
call this turn, so a suggestion never reveals a tool the allowlist hides. This runs on the
unknown-tool path only; a known name never comes here.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["closest_name"]

_LONGEST = 1024  # no tool is named anything this long; a longer name is not folded
_SEPARATORS = str.maketrans({"-": "_", ".": "_", " ": "_"})


def _folded(name: str) -> str:
    return name.casefold().translate(_SEPARATORS)


def _reach(length: int) -> int:
    """The most edits between a name of ``length`` characters and the one it may stand for."""
    return 0 if length < 4 else 1 if length < 6 else 2


def closest_name(requested: str, offered: Iterable[str]) -> str | None:
    """The offered name ``requested`` is an unambiguous near miss of (see the module), or None."""
    if len(requested) > _LONGEST:
        return None
    wanted = _folded(requested)
    reach = _reach(len(wanted))
    best: list[str] = []
    best_distance = reach + 1
    for name in offered:
        folded = _folded(name)
        if abs(len(folded) - len(wanted)) > min(reach, best_distance):
            continue
        distance = 0 if folded == wanted else _distance(wanted, folded, min(reach, best_distance))
        if distance > reach:
            continue
        if distance < best_distance:
            best, best_distance = [name], distance
        elif distance == best_distance:
            best.append(name)
    return best[0] if len(best) == 1 and best[0] != requested else None


def _distance(a: str, b: str, limit: int) -> int:
    """Edits (insert, delete, replace, swap of neighbours) from ``a`` to ``b``; ``limit + 1`` once it is more."""
    if limit <= 0:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, right in enumerate(b, 1):
            cost = left != right
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and j > 1 and left == b[j - 2] and a[i - 2] == right:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1] if previous[-1] <= limit else limit + 1
