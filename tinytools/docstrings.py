"""A function's description and per-parameter descriptions, read from its docstring.

Google, NumPy, reST and Epydoc styles are recognised by docstring-parser.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Docstring", "parse_docstring"]


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

    parsed = docstring_parser.parse(text)
    parts = [part.strip() for part in (parsed.short_description, parsed.long_description) if part]
    parameters = {param.arg_name: " ".join(param.description.split()) for param in parsed.params if param.description}
    returns = parsed.returns.description if parsed.returns and parsed.returns.description else None
    return Docstring("\n\n".join(parts), parameters, returns)
