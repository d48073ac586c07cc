"""`Toolbox`: the tools an agent may call, held by name, with aliases and per-turn selection."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from tinytools.encoding import Encoders, check_encoders
from tinytools.errors import ToolDefinitionError
from tinytools.policy import ToolPolicy
from tinytools.tool import NAME_PATTERN, Tool, make_tool

__all__ = ["Toolbox"]


class Toolbox:
    """Tools held by their names; names must differ even when case is ignored.

    ``Toolbox([get_weather, search])`` takes `Tool` objects or plain functions (which are
    turned into tools with default options). ``aliases`` maps other names a provider may use
    (``{"getWeather": "get_weather"}``) to canonical ones; results and events always carry the
    canonical name.
    """

    def __init__(
        self,
        tools: Iterable[Tool[..., Any] | Callable[..., Any]] = (),
        *,
        aliases: Mapping[str, str] | None = None,
        encoders: Encoders | None = None,
    ):
        self.encoders = check_encoders(encoders)
        """How outputs of other types encode (class -> function returning JSON-able data), for
        every dispatcher of this toolbox; a dispatcher's own ``encoders`` win (`tinytools.encoding`)."""
        self._tools: dict[str, Tool[..., Any]] = {}
        self._folded: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._dispatcher: Any = None  # the default Dispatcher of tinytools.run.dispatch, made on first use
        for item in tools:
            self.add(item)
        for alias, name in (aliases or {}).items():
            self.alias(alias, name)

    def add(self, item: Tool[..., Any] | Callable[..., Any]) -> Tool[..., Any]:
        """Add a tool (or a function, made into one) and return it.

        Raises:
            ToolDefinitionError: Another tool or alias has the same name, or the same name
                but for case.
        """
        added = item if isinstance(item, Tool) else make_tool(item)
        self._claim(added.name, added.name)
        self._tools[added.name] = added
        self._dispatcher = None
        return added

    def alias(self, alias: str, name: str) -> None:
        """Let calls name the tool ``name`` as ``alias`` too.

        Raises:
            ToolDefinitionError: ``name`` is not in the toolbox, or ``alias`` is taken or invalid.
        """
        if name not in self._tools:
            raise ToolDefinitionError(f"cannot alias {alias!r} to {name!r}: no such tool", tool=name)
        if NAME_PATTERN.fullmatch(alias) is None:
            raise ToolDefinitionError(
                f"alias {alias[:80]!r} is not 1 to 64 ASCII letters, digits, '_' or '-'", tool=name
            )
        self._claim(alias, name)
        self._aliases[alias] = name
        self._dispatcher = None

    def _claim(self, name: str, owner: str) -> None:
        folded = name.casefold()
        if folded in self._folded:
            other = self._folded[folded]
            same = "the same name" if other == name else "names equal but for case"
            raise ToolDefinitionError(
                f"{other!r} and {name!r} have {same}; rename one with @tool(name=...)", tool=owner
            )
        self._folded[folded] = name

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool called ``name`` (or aliased so), or None."""
        found = self._tools.get(name)
        if found is None and name in self._aliases:
            return self._tools[self._aliases[name]]
        return found

    def __getitem__(self, name: str) -> Tool[..., Any]:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """The tools' canonical names in the order they were added."""
        return list(self._tools)

    @property
    def aliases(self) -> dict[str, str]:
        """Alias -> canonical name."""
        return dict(self._aliases)

    def select(self, names: Iterable[str] | None = None, *, state: Any = None) -> Toolbox:
        """The tools to offer this turn, as a new toolbox sharing the same `Tool` objects.

        Args:
            names: Keep only these tools (canonical names or aliases); None keeps all.
            state: The application's state, passed to each tool's ``enabled`` function;
                a tool whose function says False is left out.
        """
        wanted = None if names is None else {self[name].name for name in names}
        chosen = [
            tool
            for tool in self._tools.values()
            if (wanted is None or tool.name in wanted) and (tool.enabled is None or tool.enabled(state))
        ]
        view = Toolbox(chosen)
        for alias, name in self._aliases.items():
            if name in view._tools:
                view.alias(alias, name)
        return view

    def policies(self) -> dict[str, ToolPolicy]:
        """A snapshot of every tool's policy, by name, for audit."""
        return {name: item.policy for name, item in self._tools.items()}

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's neutral declaration: ``{"name", "description", "input_schema"}``."""
        return [item.definition() for item in self._tools.values()]
