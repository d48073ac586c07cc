"""A function's description and per-parameter descriptions, read from its docstring.

Google, NumPy, reST and Epydoc styles are recognised by docstring-parser. Left to guess, it
parses a docstring once per style and keeps the richest reading; when the docstring carries
the marks of exactly one style (``Args:``, an underlined ``Parameters``, ``:param``,
``@param``) and that style reads something from it, that reading is the one guessing would
keep, in half the time.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Docstring", "parse_docstring"]

_MARKS = {  # broad on purpose: a docstring with the marks of two styles is left to guessing
    "GOOGLE": re.compile(r"^[ \t]*\w[\w \t]*:[ \t]*$", re.MULTILINE),
    "NUMPYDOC": re.compile(r"^[ \t]*(-+[ \t]*|\.\.[ \t]*\w+::.*)$", re.MULTILINE),  # or a `.. deprecated::`
    "REST": re.compile(r"^[ \t]*:", re.MULTILINE),
    "EPYDOC": re.compile(r"^[ \t]*@", re.MULTILINE),
}


@dataclass(frozen=True)
class Docstring:
    """What a docstring says about a tool."""

    description: str = ""
    """Summary and body, joined by a blank line."""
    parameters: dict[str, str] = field(default_factory=dict)
    """Parameter name -> description."""
    returns: str | None = None
    """What the return value is, when documented."""


def parse_docstring(fn: Callable[..., Any]) -> Docstring:
    """Read the description and parameter descriptions from ``fn``'s docstring."""
    text = inspect.getdoc(fn)
    if not text:
        return Docstring()
    import docstring_parser  # loaded by the first tool with a docstring, not by `import tinytools`

    styles = [style for style, mark in _MARKS.items() if mark.search(text)]
    try:
        parsed = docstring_parser.parse(text, docstring_parser.DocstringStyle[styles[0]]) if len(styles) == 1 else None
    except docstring_parser.ParseError:  # guessing keeps the readings that parse
        parsed = None
    if parsed is None or not parsed.meta:  # nothing read: guessing may keep more description
        parsed = docstring_parser.parse(text)
    parts = [part.strip() for part in (parsed.short_description, parsed.long_description) if part]
    parameters = {param.arg_name: " ".join(param.description.split()) for param in parsed.params if param.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return Docstring("\n\n".join(parts), parameters, returns)
