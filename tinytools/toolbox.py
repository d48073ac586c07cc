"""`Toolbox`: the tools an agent may call, held by name, and their exported declarations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tinytools.errors import ToolDefinitionError
from tinytools.tool import Tool, make_tool

__all__ = ["Toolbox"]


class Toolbox:
    """Tools held by their names; names must differ even when case is ignored.

    ``Toolbox([get_weather, search])`` takes `Tool` objects or plain functions (which are
    turned into tools with default options).
    """

    def __init__(self, tools: Iterable[Tool[..., Any] | Callable[..., Any]] = ()):
        self._tools: dict[str, Tool[..., Any]] = {}
        self._folded: dict[str, str] = {}
        for item in tools:
            self.add(item)

    def add(self, item: Tool[..., Any] | Callable[..., Any]) -> Tool[..., Any]:
        """Add a tool (or a function, made into one) and return it.

        Raises:
            ToolDefinitionError: Another tool has the same name, or the same name but for case.
        """
        added = item if isinstance(item, Tool) else make_tool(item)
        folded = added.name.casefold()
        if folded in self._folded:
            other = self._folded[folded]
            same = "the same name" if other == added.name else "names equal but for case"
            raise ToolDefinitionError(
                f"tools {other!r} and {added.name!r} have {same}; rename one with @tool(name=...)",
                tool=added.name,
            )
        self._tools[added.name] = added
        self._folded[folded] = added.name
        return added

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """The tools' names in the order they were added."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's neutral declaration: ``{"name", "description", "input_schema"}``."""
        return [item.definition() for item in self._tools.values()]
