r"""Patterns whose matching can take time exponential in the text: found, so they can be refused.

Python's `re` backtracks. A repeated part that can match the same text in more than one way
(``^(a+)+$``, ``^(a|aa)+$``, ``^(\\w+\\s?)+$``) makes a text that almost matches take time that
doubles with each character, and the model writes the text. `backtracks` reads a translated
pattern's parse tree and says whether some repetition of it is ambiguous in one of two ways:

- a repetition inside it can end where the rest of the repeated part (or its next round) can
  go on with the same character, so the characters can be shared out between them in many
  ways;
- two alternatives of a choice inside it can begin with the same character.

The test is conservative: it looks at first characters, not at whole strings, so it also
refuses some patterns that match quickly (``^(ab|ac)+$``); each refusal says how to rewrite.
"""

from __future__ import annotations

import importlib
from typing import Any


def _modules() -> tuple[Any, Any]:
    """The parser of the `re` module and its constants (``sre_parse`` before Python 3.11)."""
    try:
        return importlib.import_module("re._parser"), importlib.import_module("re._constants")
    except ImportError:  # pragma: no cover - Python 3.10, where these names carry no warning
        return importlib.import_module("sre_parse"), importlib.import_module("sre_constants")


_sre, _codes = _modules()
ANY, ASSERT, ASSERT_NOT, BRANCH = _codes.ANY, _codes.ASSERT, _codes.ASSERT_NOT, _codes.BRANCH
CATEGORY, GROUPREF, IN, LITERAL = _codes.CATEGORY, _codes.GROUPREF, _codes.IN, _codes.LITERAL
MAX_REPEAT, MIN_REPEAT, NEGATE = _codes.MAX_REPEAT, _codes.MIN_REPEAT, _codes.NEGATE
NOT_LITERAL, RANGE, SUBPATTERN = _codes.NOT_LITERAL, _codes.RANGE, _codes.SUBPATTERN
ATOMIC_GROUP = getattr(_codes, "ATOMIC_GROUP", object())  # Python 3.11 and later
POSSESSIVE_REPEAT = getattr(_codes, "POSSESSIVE_REPEAT", object())

__all__ = ["backtracks"]

_ASCII = 128
_ALL = (1 << _ASCII) - 1
_REPEATS = (MAX_REPEAT, MIN_REPEAT)


class _Chars:
    """A set of characters, exact for ASCII; anything beyond is one flag (fail closed)."""

    __slots__ = ("ascii", "beyond")

    def __init__(self, ascii_bits: int = 0, beyond: bool = False):
        self.ascii = ascii_bits
        self.beyond = beyond

    def __or__(self, other: _Chars) -> _Chars:
        return _Chars(self.ascii | other.ascii, self.beyond or other.beyond)

    def meets(self, other: _Chars) -> bool:
        return bool(self.ascii & other.ascii) or (self.beyond and other.beyond)


_NOTHING = _Chars()
_EVERYTHING = _Chars(_ALL, True)


def backtracks(pattern: str) -> bool:
    """Whether matching ``pattern`` (Python syntax) may take time exponential in the text."""
    try:
        tree = _sre.parse(pattern)
    except Exception:  # what re cannot parse is refused elsewhere
        return False
    return _ambiguous(list(tree))


def _ambiguous(sequence: list[tuple[Any, Any]]) -> bool:
    """Whether some repetition in ``sequence`` (or below it) can match one text in many ways."""
    for op, arg in sequence:
        if op in _REPEATS:
            _, high, body = arg
            items = _flat(list(body))
            if high > 1 and _loop_is_ambiguous(items):
                return True
            if _ambiguous(list(body)):
                return True
        elif op is SUBPATTERN or op is ATOMIC_GROUP or op is POSSESSIVE_REPEAT:
            inner = arg[-1] if op is not POSSESSIVE_REPEAT else arg[2]
            if _ambiguous(list(inner)):
                return True
        elif (op is BRANCH and any(_ambiguous(list(branch)) for branch in arg[1])) or (
            op in (ASSERT, ASSERT_NOT) and _ambiguous(list(arg[1]))
        ):
            return True
    return False


def _loop_is_ambiguous(body: list[tuple[Any, Any]]) -> bool:
    """Whether one round of a repeated ``body`` can be split in two ways, or rounds overlap."""
    round_start, _ = _first(body)
    for index, (op, arg) in enumerate(body):
        if op in _REPEATS:
            low, high, inner = arg
            if low == high:
                continue  # a fixed count is a sequence, not a choice
            follow, rest_empty = _first(body[index + 1 :])
            if rest_empty:
                follow = follow | round_start  # the next round comes next
            if _first(_flat(list(inner)))[0].meets(follow):
                return True
        elif op is BRANCH:
            firsts = [_first(_flat(list(branch))) for branch in arg[1]]
            starts = [chars for chars, _ in firsts]
            if any(a.meets(b) for i, a in enumerate(starts) for b in starts[i + 1 :]):
                return True
            if any(empty for _, empty in firsts):  # a choice that may match nothing: as an optional part
                follow, rest_empty = _first(body[index + 1 :])
                if rest_empty:
                    follow = follow | round_start
                if any(chars.meets(follow) for chars in starts):
                    return True
    return False


def _flat(sequence: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The sequence with plain groups opened up (their content is part of it)."""
    flat: list[tuple[Any, Any]] = []
    for op, arg in sequence:
        if op is SUBPATTERN:
            flat += _flat(list(arg[-1]))
        else:
            flat.append((op, arg))
    return flat


def _first(sequence: list[tuple[Any, Any]]) -> tuple[_Chars, bool]:
    """The characters ``sequence`` can start with, and whether it can match the empty text."""
    found = _NOTHING
    for op, arg in sequence:
        chars, empty = _first_of(op, arg)
        found = found | chars
        if not empty:
            return found, False
    return found, True


def _first_of(op: Any, arg: Any) -> tuple[_Chars, bool]:
    if op is LITERAL:
        return _char(arg), False
    if op is NOT_LITERAL:
        return _Chars(_ALL & ~(1 << arg) if arg < _ASCII else _ALL, True), False
    if op is ANY or op is CATEGORY:
        return _EVERYTHING, False
    if op is IN:
        return _in(arg), False
    if op is SUBPATTERN or op is ATOMIC_GROUP:
        return _first(_flat(list(arg[-1])))
    if op in _REPEATS or op is POSSESSIVE_REPEAT:
        low, _, body = arg
        chars, empty = _first(_flat(list(body)))
        return chars, empty or low == 0
    if op is BRANCH:
        found, empty = _NOTHING, False
        for branch in arg[1]:
            chars, nothing = _first(_flat(list(branch)))
            found, empty = found | chars, empty or nothing
        return found, empty
    if op is GROUPREF:
        return _EVERYTHING, True
    return _NOTHING, True  # anchors and lookarounds match no character


def _char(code: int) -> _Chars:
    return _Chars(1 << code) if code < _ASCII else _Chars(0, True)


def _in(items: list[tuple[Any, Any]]) -> _Chars:
    found = _NOTHING
    negate = False
    for op, arg in items:
        if op is NEGATE:
            negate = True
        elif op is LITERAL:
            found = found | _char(arg)
        elif op is RANGE:
            low, high = arg
            bits = sum(1 << code for code in range(low, min(high, _ASCII - 1) + 1)) if low < _ASCII else 0
            found = found | _Chars(bits, high >= _ASCII)
        else:  # a category (\d, \w, \s inside a class): anything, to be safe
            found = found | _EVERYTHING
    if negate:
        return _Chars(_ALL & ~found.ascii, True)
    return found
