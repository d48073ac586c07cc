r"""ECMA-262 patterns (``u`` flag) rewritten as Python `re` patterns that match the same strings.

This module owns the pattern translator behind ``pattern`` and ``patternProperties``.
``\d``, ``\w`` and ``\b`` are ASCII, ``.`` stops at line terminators, ``$`` is the end of the
input; constructs whose meaning differs (backreferences, ``\p{...}``, lone braces, inline flags,
named groups) are refused with `ValueError`, so a schema using them fails closed.
"""

from __future__ import annotations

import re

__all__ = ["translate_pattern"]

_WORD = "[A-Za-z0-9_]"
_BOUNDARY = {
    "b": f"(?:(?<!{_WORD})(?={_WORD})|(?<={_WORD})(?!{_WORD}))",
    "B": f"(?:(?<!{_WORD})(?!{_WORD})|(?<={_WORD})(?={_WORD}))",  # also at the empty input
}
_SPACE = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACE}
_CONTROLS = {"t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r"}
_GROUPS = ("?:", "?=", "?!", "?<=", "?<!")
_QUANTIFIER = re.compile(r"[*+?]|\{\d+(,\d*)?\}")
_HEX = re.compile(r"x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\}|c([A-Za-z])")


def _pattern_char(pattern: str, i: int) -> tuple[str, int]:
    """Read the escape whose letter is at ``i`` as one literal character, or refuse it."""
    c = pattern[i : i + 1]
    if c and c in _CONTROLS:
        return _CONTROLS[c], i + 1
    if c == "0" and not pattern[i + 1 : i + 2].isdigit():
        return "\0", i + 1
    if match := _HEX.match(pattern, i):
        code = next(group for group in match.groups() if group)
        point = ord(code) % 32 if match[4] else int(code, 16)
        if point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF:
            return chr(point), match.end()
    if c and c.isascii() and not c.isalnum() and c != "_":
        return c, i + 1
    raise ValueError(f"'\\{c}' means something else (or nothing) in ECMA-262")


def _class_char(pattern: str, i: int) -> tuple[str, int]:
    if pattern[i] != "\\":
        return pattern[i], i + 1
    return ("\b", i + 2) if pattern.startswith("b", i + 1) else _pattern_char(pattern, i + 1)


def _pattern_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate the character class whose body starts at ``i`` (just after '[')."""
    negate = pattern.startswith("^", i)
    i, parts = i + negate, []
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\" and pattern[i + 1 : i + 2] in ("d", "w", "s"):
            parts.append(_CLASSES[pattern[i + 1]])
            i += 2
            continue
        low, i = _class_char(pattern, i)
        if pattern.startswith("-", i) and pattern[i + 1 : i + 2] not in ("", "]"):
            high, i = _class_char(pattern, i + 1)
            parts.append(f"{re.escape(low)}-{re.escape(high)}")
        else:
            parts.append(re.escape(low))
    if i >= len(pattern):
        raise ValueError("unterminated character class")
    if not parts:
        return (r"[\x00-\U0010ffff]" if negate else "(?!)"), i + 1
    return f"[{'^' * negate}{''.join(parts)}]", i + 1


def translate_pattern(pattern: str) -> str:
    """Rewrite an ECMA-262 (``u`` flag) pattern as a Python one that matches the same strings.

    Raises:
        ValueError: The pattern uses a construct that has no exact Python equivalent.
    """
    out, groups, i, atom = [], [], 0, False
    while i < len(pattern):
        c = pattern[i]
        escape = pattern[i + 1 : i + 2] if c == "\\" else ""
        if escape and escape in "dwsDWS":
            text, atom, i = f"[{'^' * escape.isupper()}{_CLASSES[escape.lower()]}]", True, i + 2
        elif escape and escape in "bB":
            text, atom, i = _BOUNDARY[escape], False, i + 2
        elif c == "\\":
            char, i = _pattern_char(pattern, i + 1)
            text, atom = re.escape(char), True
        elif c == "[":
            (text, i), atom = _pattern_class(pattern, i + 1), True
        elif c == "(":
            kind = next((k for k in _GROUPS if pattern.startswith(k, i + 1)), "")
            if pattern.startswith("?", i + 1) and not kind:
                raise ValueError("only (?:...) groups and lookarounds are portable")
            groups.append(kind)
            text, atom, i = c + kind, False, i + 1 + len(kind)
        elif c == ")" and groups:
            text, atom, i = c, groups.pop() in ("", "?:"), i + 1  # lookarounds take no quantifier
        elif quantifier := _QUANTIFIER.match(pattern, i):
            if not atom:
                raise ValueError(f"{quantifier[0]!r} has nothing to repeat")
            lazy = pattern.startswith("?", quantifier.end())
            text, atom, i = quantifier[0] + "?" * lazy, False, quantifier.end() + lazy
        elif c in "{})]":
            raise ValueError(f"lone {c!r}")
        else:
            text = {".": r"[^\n\r\u2028\u2029]", "^": "^", "$": r"\Z", "|": "|"}.get(c, re.escape(c))
            atom, i = c not in "^$|", i + 1
        out.append(text)
    if groups:
        raise ValueError("unbalanced parenthesis")
    return "".join(out)
