"""A call's secret values, and scrubbing them from text in every form the library writes them.

A secret injected as ``Injected(..., secret=True)`` may reach text raw, or as the library itself
writes it: JSON-escaped (an output or a preview is JSON text), ``repr``-escaped (a message built
with ``{key!r}``), XML-escaped (the XML text format), base64 (``bytes`` encode so in JSON), or as a
decimal (a numeric secret such as a PIN). `Secrets` knows all of those forms of each value, and
`Secrets.scrub` replaces, in one pass over the whole text:

- every run of 8 or more characters that is part of some form of a secret (so a cut, a prefix,
  a suffix or an overlap of two secrets shows fewer than 8 of its characters, never more);
- every whole occurrence of a form shorter than 8 characters (a short number only where no
  digit touches it).

Values are read by what they hold: a pydantic ``SecretStr``'s ``get_secret_value()``, bytes as
bytes. Scrubbing costs one regular-expression pass over the text per call that has secrets.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from tinytools._schema.strict_json import encodable

__all__ = ["REDACTED", "WINDOW", "Secrets", "forms_of"]

REDACTED = "[redacted]"
"""What a secret is replaced with in model-facing text."""
WINDOW = 8
"""Runs of this many characters of a secret are never shown."""
_URL_SAFE = str.maketrans("+/", "-_")
_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})


def forms_of(value: Any) -> set[str]:
    """Every text form in which the library could write ``value``."""
    reveal = getattr(value, "get_secret_value", None)
    if callable(reveal):
        return forms_of(reveal())
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        whole = _base64(data)  # the bytes as the whole of an output
        found = _base64_forms(data) | {whole, whole.translate(_URL_SAFE), repr(data)[2:-1]}
        with contextlib.suppress(UnicodeDecodeError):
            found |= _text_forms(data.decode("utf-8"))
        return found
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, (int, float)):
        return {repr(value), str(value), msgspec.json.encode(value).decode()}
    return _text_forms(str(value))


def _text_forms(text: str) -> set[str]:
    if not text:
        return set()
    utf8 = encodable(text)
    json_escaped = msgspec.json.encode(text)[1:-1].decode("utf-8", "surrogatepass") if utf8 else text
    single, double = repr(text)[1:-1], repr(text + '"')[1:-2]
    found = {text, json_escaped, single, double, text.translate(_XML)}
    return found | _base64_forms(text.encode("utf-8")) if utf8 else found


def _base64_forms(data: bytes) -> set[str]:
    """The base64 characters that ``data`` alone decides, wherever it starts in a longer encoding.

    Base64 writes 3 bytes as 4 characters, so the same bytes encode differently after 0, 1 or 2
    bytes of something else. For each offset, the characters whose 6 bits all come from ``data``
    are the same whatever surrounds it; those are the forms (standard and URL-safe alphabets).
    Only runs of at least `WINDOW` characters are kept: a shorter run is common text, not a sign
    of the secret.
    """
    found: set[str] = set()
    for offset in range(3):
        encoded = _base64(bytes(offset) + data)
        first = -(-8 * offset // 6)  # the first character with no bit of the bytes before
        last = 8 * (offset + len(data)) // 6  # past the last with no bit of the bytes after
        inner = encoded[first:last]
        found |= {inner, inner.translate(_URL_SAFE)} if len(inner) >= WINDOW else set()
    return found


_KEEP = 256  # sets of secrets kept compiled (a run usually injects the same few)


class Secrets:
    """The secret values of one call, ready to scrub from text."""

    __slots__ = ("_pattern", "forms")

    def __init__(self, values: Iterable[Any]):
        forms: set[str] = set()
        for value in values:
            forms |= forms_of(value)
        self.forms = frozenset(form for form in forms if form)
        """Every form of every secret, as text."""
        self._pattern = _pattern(self.forms)

    def __bool__(self) -> bool:
        return self._pattern is not None

    @classmethod
    def of(cls, values: list[Any]) -> Secrets:
        """The `Secrets` of these values, kept for the next call that injects the same ones."""
        try:
            key = tuple((value.__class__, value) for value in values)
            hash(key)
        except TypeError:  # an unhashable value: built for this call alone
            return cls(values)
        found = _MADE.get(key)
        if found is None:
            if len(_MADE) >= _KEEP:
                _MADE.clear()
            found = _MADE[key] = cls(values)
        return found

    def scrub(self, text: str) -> str:
        """``text`` with every run of a secret's characters replaced (see the module)."""
        spans = self.spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        last = 0
        for start, end in spans:
            pieces += (text[last:start], REDACTED)
            last = end
        pieces.append(text[last:])
        return "".join(pieces)

    def spans(self, text: str) -> list[list[int]]:
        """Where ``text`` shows a secret: ``[start, end)`` runs, in order, touching runs merged."""
        pattern = self._pattern
        if pattern is None or not text:
            return []
        spans: list[list[int]] = []
        for match in pattern.finditer(text):
            start = match.start()
            end = start + len(match.group(1) or match.group(2) or "")
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        return spans


_MADE: dict[tuple[Any, ...], Secrets] = {}


def _pattern(forms: frozenset[str]) -> re.Pattern[str] | None:
    """One pattern whose matches, at each position, are the windows and short forms found there.

    Group 1 matches a window of a long form (overlapping windows are found, being zero-width
    lookaheads); group 2 a whole short form.
    """
    windows = {form[i : i + WINDOW] for form in forms if len(form) >= WINDOW for i in range(len(form) - WINDOW + 1)}
    short = sorted((form for form in forms if len(form) < WINDOW), key=len, reverse=True)
    if not windows and not short:
        return None
    long_part = "|".join(re.escape(window) for window in sorted(windows)) or "(?!)"
    short_part = "|".join(_short(form) for form in short) or "(?!)"
    return re.compile(f"(?=({long_part}))|(?=({short_part}))", re.DOTALL)


def _short(form: str) -> str:
    escaped = re.escape(form)
    return rf"(?<!\d){escaped}(?!\d)" if form[0].isdigit() or form[-1].isdigit() else escaped


def _base64(data: bytes) -> str:
    """Standard base64 of ``data`` (``binascii`` loads with the first secret, not with ``import tinytools``)."""
    import binascii

    return binascii.b2a_base64(data, newline=False).decode()
