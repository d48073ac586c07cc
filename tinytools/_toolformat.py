"""`ToolFormat`: the syntax a model writes a tool's calls in, when it calls tools through text.

A tool is shown and parsed as JSON (the default), as XML elements, or as p-type (Python-like
function calls, with an order for positional arguments). This module only describes the
choice; rendering and parsing live in `tinytools.formats`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from tinytools._errors import ToolDefinitionError
from tinytools._public import publish

__all__ = ["Syntax", "ToolFormat"]

Syntax = Literal["json", "xml", "ptype"]
"""The three call syntaxes."""

_SYNTAXES = ("json", "xml", "ptype")
XML_NAME = re.compile(r"[^\W\d][\w.-]*")
"""Parameter names that can be written as an XML element name."""


class ToolFormat:
    """How a tool is declared to a model and how its calls are read back from text.

    ``ToolFormat.json()`` (the default), ``ToolFormat.xml()``, or
    ``ToolFormat.ptype(["query", "limit"])``, where the list gives the parameters that may be
    passed by position, in order (by default every parameter, in the schema's order).
    """

    __slots__ = ("order", "syntax")

    syntax: Syntax
    order: tuple[str, ...] | None

    def __init__(self, syntax: Syntax, order: Iterable[str] | None = None) -> None:
        if syntax not in _SYNTAXES:
            raise ToolDefinitionError(f"unknown tool format {syntax!r}; use one of {', '.join(_SYNTAXES)}")
        if order is not None and syntax != "ptype":
            raise ToolDefinitionError("only the p-type format takes a positional order")
        object.__setattr__(self, "syntax", syntax)
        object.__setattr__(self, "order", None if order is None else _order(order))

    @classmethod
    def json(cls) -> ToolFormat:
        """Calls are JSON objects: ``{"name": "search", "arguments": {"query": "x"}}``."""
        return cls("json")

    @classmethod
    def xml(cls) -> ToolFormat:
        """Calls are elements: ``<search><query>x</query></search>``."""
        return cls("xml")

    @classmethod
    def ptype(cls, order: Iterable[str] | None = None) -> ToolFormat:
        """Calls look like Python calls: ``search("x", 5)`` or ``search(query="x", limit=5)``.

        Args:
            order: The parameters that may be given by position, in order. None means every
                parameter, in the order of the schema's properties.

        Raises:
            ToolDefinitionError: ``order`` is a single string or names a parameter twice.
        """
        return cls("ptype", order)

    def positional(self, parameters: Sequence[str]) -> tuple[str, ...]:
        """The names positional values map to, for a tool with these parameters."""
        if self.order is None:
            return tuple(parameters)
        return self.order

    def check(self, tool: str, parameters: Iterable[str]) -> None:
        """Refuse a format that cannot express a tool's parameters (run when the tool is defined).

        Raises:
            ToolDefinitionError: A positional name is not a model-visible parameter, or a
                parameter's name cannot be written in this syntax.
        """
        names = list(parameters)
        if self.syntax == "xml":
            for name in names:
                if XML_NAME.fullmatch(name) is None:
                    raise ToolDefinitionError(
                        "the XML format needs parameter names that are XML names; use ToolFormat.json()",
                        tool=tool,
                        parameter=name,
                    )
        if self.syntax == "ptype":
            for name in self.order or ():
                if name not in names:
                    raise ToolDefinitionError(
                        f"ToolFormat.ptype names {name!r}, which is not a parameter the model sees; "
                        f"choose from {', '.join(names) or '(none)'}",
                        tool=tool,
                        parameter=name,
                    )
            for name in names:
                if not name.isidentifier():
                    raise ToolDefinitionError(
                        "the p-type format needs parameter names that are identifiers; use ToolFormat.json()",
                        tool=tool,
                        parameter=name,
                    )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ToolFormat is immutable")

    def __reduce__(self) -> tuple[type[ToolFormat], tuple[Syntax, tuple[str, ...] | None]]:
        return ToolFormat, (self.syntax, self.order)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolFormat):
            return NotImplemented
        return self.syntax == other.syntax and self.order == other.order

    def __hash__(self) -> int:
        return hash((self.syntax, self.order))

    def __repr__(self) -> str:
        if self.order is not None:
            return f"ToolFormat.ptype({list(self.order)!r})"
        return f"ToolFormat.{self.syntax}()"


def _order(order: Iterable[str]) -> tuple[str, ...]:
    if isinstance(order, (str, bytes)):
        raise ToolDefinitionError(
            'ToolFormat.ptype takes a list of parameter names, e.g. ToolFormat.ptype(["query", "limit"])'
        )
    names = tuple(order)
    for name in names:
        if not isinstance(name, str):
            raise ToolDefinitionError(f"ToolFormat.ptype takes parameter names (strings); got {name!r}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ToolDefinitionError(f"ToolFormat.ptype names {', '.join(map(repr, duplicates))} twice")
    return names


publish("tinytools", ToolFormat)
