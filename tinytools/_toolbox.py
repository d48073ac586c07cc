"""`Toolbox`: the tools an agent may call, held by name, with aliases and per-turn selection.

It also holds the algebra of toolsets: a toolbox made from an object's methods
(`Toolbox.from_object`), and new toolboxes made from others (`Toolbox.prefixed`,
`Toolbox.renamed`, `Toolbox.filtered`, `Toolbox.merge`). No operation changes the toolbox it
starts from, and a name two sources both claim is refused with both sources named.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tinytools._encoding import Encoders, check_encoders
from tinytools._errors import ToolDefinitionError, ToolDefinitionWarning
from tinytools._public import publish
from tinytools._tool import NAME_PATTERN, Tool, is_search, make_tool
from tinytools.policy import ToolPolicy

if TYPE_CHECKING:
    from tinytools._toolsets import Member

__all__ = ["Toolbox", "as_toolbox"]

_MAX_QUERY = 10_000
"""Characters of a search query that count; the rest is ignored (its cost stays bounded)."""
_REPR_ITEMS = 8
"""How many names (and aliases) a toolbox's ``repr`` shows before it says how many more."""
_FROM_OBJECT_FIX = "give one another name with @tool(name=...), or leave one out with exclude=[...]"
_MERGE_FIX = "rename one with Toolbox.renamed or Toolbox.prefixed first"
_RENAME_FIX = "choose a new name that no other tool or alias of the toolbox has"


class Toolbox:
    """Tools held by their names; names must differ even when case is ignored.

    ``Toolbox([get_weather, search])`` takes `Tool` objects or plain functions (which are
    turned into tools with default options). ``aliases`` maps other names a provider may use
    (``{"getWeather": "get_weather"}``) to canonical ones; results and events always carry the
    canonical name. ``deferred`` names tools (or gives them) to leave out of exports until a
    search reveals them in a run, as ``@tool(defer=True)`` does (see `Toolbox.search`).
    """

    def __init__(
        self,
        tools: Iterable[Tool[..., Any] | Callable[..., Any]] = (),
        *,
        aliases: Mapping[str, str] | None = None,
        encoders: Encoders | None = None,
        deferred: Iterable[str | Tool[..., Any]] = (),
    ):
        """Hold ``tools`` (see the class)."""
        self.encoders = check_encoders(encoders)
        """How outputs of other types encode (class -> function returning JSON-able data), for
        every dispatcher of this toolbox; a dispatcher's own ``encoders`` win (`tinytools._encoding`)."""
        self._tools: dict[str, Tool[..., Any]] = {}
        self._folded: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._sources: dict[str, str] = {}  # name or alias -> where it came from, for collision messages
        self.memo: dict[str, Any] = {}
        """What the layers above keep for this toolbox as it is now: emptied whenever the toolbox changes."""
        self._dispatcher: Any = None
        """The `Dispatcher` that `tinytools.dispatch` and `adispatch` run its calls on, made by their
        first call and dropped whenever the toolbox changes (the first thing every `dispatch` reads:
        an attribute of its own, where a `memo` entry costs a call about 10 ns more)."""
        self._index: Any = None  # the search index, made on first search
        for item in tools:
            self.add(item)
        for later in deferred:
            name = later.name if isinstance(later, Tool) else later
            if name not in self._tools:
                raise ToolDefinitionError(f"deferred= names {name!r}, which is not a tool of this toolbox", tool=name)
            self._tools[name] = self._tools[name].deferred()
        for alias, name in (aliases or {}).items():
            self.alias(alias, name)

    def add(self, item: Tool[..., Any] | Callable[..., Any]) -> Tool[..., Any]:
        """Add a tool (or a function, made into one) and return it.

        Raises:
            ToolDefinitionError: Another tool or alias has the same name, or the same name
                but for case.
        """
        added = item if isinstance(item, Tool) else make_tool(item)
        if added.binds is not None:
            raise ToolDefinitionError(
                f"{added.name!r} is a method not bound to an instance (it takes self); add the instance's "
                "tool (instance.method, or tool(instance.method)), or use Toolbox.from_object(instance)",
                tool=added.name,
            )
        self._put(added, None)
        self._forget()
        return added

    def alias(self, alias: str, name: str) -> None:
        """Let calls name the tool ``name`` as ``alias`` too.

        Raises:
            ToolDefinitionError: ``name`` is not in the toolbox, or ``alias`` is taken or invalid.
        """
        if name not in self._tools:
            raise ToolDefinitionError(f"cannot alias {alias!r} to {name!r}: no such tool", tool=name)
        self._put_alias(alias, name, None)
        self._forget()

    def _forget(self) -> None:
        """What the layers above kept for the toolbox as it was: gone, as it changed."""
        self.memo.clear()
        self._dispatcher = None

    def _claim(self, name: str, owner: str, source: str | None, fix: str | None) -> None:
        """Take ``name`` (a tool's, or an alias of the tool ``owner``), refusing one already taken."""
        folded = name.casefold()
        if folded in self._folded:
            other = self._folded[folded]
            same = "the same name" if other == name else "names equal but for case"
            first = _described(other, self._aliases.get(other), self._sources.get(other))
            second = _described(name, owner if owner != name else None, source)
            if fix is None:
                fix = "rename the tool with @tool(name=...)" if owner == name else "choose another alias"
            raise ToolDefinitionError(f"{first} and {second} have {same}; {fix}", tool=owner)
        self._folded[folded] = name
        if source is not None:
            self._sources[name] = source

    def _put(self, item: Tool[..., Any], source: str | None, *, fix: str | None = None) -> None:
        self._claim(item.name, item.name, source, fix)
        self._tools[item.name] = item
        self._index = None

    def _put_alias(self, alias: str, name: str, source: str | None, *, fix: str | None = None) -> None:
        if NAME_PATTERN.fullmatch(alias) is None:
            raise ToolDefinitionError(
                f"alias {alias[:80]!r} is not 1 to 64 ASCII letters, digits, '_' or '-'", tool=name
            )
        self._claim(alias, name, source, fix)
        self._aliases[alias] = name

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

    def __repr__(self) -> str:
        names = _cut([repr(name) for name in self._tools])
        if not self._aliases:
            return f"Toolbox([{names}])"
        aliases = _cut([f"{alias!r}: {name!r}" for alias, name in self._aliases.items()])
        return f"Toolbox([{names}], aliases={{{aliases}}})"

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
        view = Toolbox(chosen, encoders=self.encoders)
        for alias, name in self._aliases.items():
            if name in view._tools:
                view.alias(alias, name)
        return view

    @classmethod
    def from_object(
        cls,
        obj: object,
        *,
        prefix: str | None = None,
        include: Collection[str] | None = None,
        exclude: Collection[str] | None = None,
    ) -> Toolbox:
        """A toolbox of an object's own public methods, each a tool bound to that one instance.

        Every public method (its name does not start with ``_``) that the object's own classes
        define becomes a tool, in the order the classes define them, base classes first:
        methods (bound, so ``self`` is not in the schema), static methods (every parameter
        kept, whatever its name), class methods, and tools made with ``@tool`` in the class body
        (taken as that instance's bound tool, under the name they were given). Only what a class
        body defines as a method counts: properties, nested classes, dataclass fields, callables
        stored as values and the instance's own attributes are not tools. Methods inherited from
        the standard library or a library's base class (`threading.Thread`, `collections.UserDict`,
        pydantic's ``BaseModel``, ...; see `tinytools._toolsets`) are left out unless ``include``
        names them. Given a class instead of an instance, its static and class methods become
        tools; a plain method needs an instance and is refused.

        The methods of one instance share its state, so each tool of a method or class method is
        serial in batches (a call waits for the calls before it and runs alone) and one at a time
        across calls (separate dispatches, an MCP server's concurrent requests) unless its
        ``@tool`` says ``parallel_safe=True``; static methods keep their own setting. Finding no
        tool at all is most likely a mistake, and warns.

        Args:
            obj: The instance (or class) whose methods become tools.
            prefix: Put before every tool's name (``"fs_"`` gives ``fs_read``).
            include: Only these methods, by attribute name (a library base class's too).
            exclude: Leave these methods out, by attribute name.

        Raises:
            ToolDefinitionError: ``include`` or ``exclude`` names no public method of the object,
                a method cannot be a tool (the message names it and the ``exclude=[...]`` that
                leaves it out), or two methods give one tool name.

        Warns:
            ToolDefinitionWarning: No method became a tool.
        """
        from tinytools._toolsets import method_tool  # an object's toolsets load on first use

        owner = obj if isinstance(obj, type) else type(obj)
        box = cls()
        exclusive = threading.Lock()  # one object, one state: its serial methods run one at a time
        for attribute, member in _chosen(obj, owner, include, exclude):
            fix = f"leave it out with exclude=[{attribute!r}]" if include is None else "take it out of include="
            made = method_tool(obj, owner, attribute, member, prefix=prefix or "", fix=fix, exclusive=exclusive)
            box._put(made, f"from {owner.__qualname__}.{attribute}", fix=_FROM_OBJECT_FIX)
        if not box._tools:
            warnings.warn(
                f"Toolbox.from_object found no tools on {owner.__qualname__}: it takes the public methods its "
                "own classes define (not names starting with '_', nor what a standard-library or library base "
                "class defines, which include=[...] can name)",
                ToolDefinitionWarning,
                stacklevel=2,
            )
        return box

    def prefixed(self, prefix: str) -> Toolbox:
        """A new toolbox whose tool names (and aliases) all start with ``prefix``.

        Each tool's ``namespace`` is the prefix: OpenAI Responses can declare them as one
        namespace (``export_tools(..., namespaces=True)``).

        Raises:
            ToolDefinitionError: A prefixed name is no longer a valid tool name (too long).
        """
        box = self._renaming({name: prefix + name for name in self._tools}, alias_prefix=prefix)
        if prefix:
            for item in box._tools.values():
                item.namespace = prefix  # a copy of this box's tool: OpenAI Responses may group by it
        return box

    def renamed(self, names: Mapping[str, str]) -> Toolbox:
        """A new toolbox with some tools under other names: ``{"old": "new"}``.

        The tools not named keep theirs; aliases follow their tool to its new name; the old
        name is not kept (alias it if calls may still use it).

        Raises:
            ToolDefinitionError: A key names no tool of this toolbox, or a new name is taken
                or invalid.
        """
        unknown = [old for old in names if old not in self._tools]
        if unknown:
            raise ToolDefinitionError(
                f"cannot rename {unknown[0]!r}: no such tool (the tools are {', '.join(self._tools)})",
                tool=unknown[0],
            )
        return self._renaming({name: names.get(name, name) for name in self._tools})

    def filtered(self, predicate: Callable[[Tool[..., Any]], bool]) -> Toolbox:
        """A new toolbox of the tools ``predicate`` says True for, with their aliases.

        ``toolbox.filtered(lambda tool: not tool.needs_approval)`` keeps the tools that need no
        approver, for example; the same `Tool` objects are shared.
        """
        box = Toolbox(encoders=self.encoders)
        for name, item in self._tools.items():
            if predicate(item):
                box._put(item, self._sources.get(name))
        self._copy_aliases(box, {name: name for name in box._tools})
        return box

    @classmethod
    def merge(cls, *toolboxes: Toolbox | Tool[..., Any] | Iterable[Tool[..., Any]]) -> Toolbox:
        """A new toolbox holding the tools, aliases and encoders of every toolbox given, in order.

        Raises:
            ToolDefinitionError: Two of them have a tool (or alias) of the same name, or names
                equal but for case; the message names both sources (``toolbox 1``,
                ``toolbox 2``, and the method a tool came from, when known). Rename one with
                `renamed` or `prefixed` first. Or two give different encoders for one class.
        """
        parts = [as_toolbox(part) for part in toolboxes]
        box = cls(encoders=_merged_encoders(parts))
        for number, part in enumerate(parts, 1):
            for name, item in part._tools.items():
                box._put(item, _within(number, part._sources.get(name)), fix=_MERGE_FIX)
            for alias, name in part._aliases.items():
                box._put_alias(alias, name, _within(number, part._sources.get(alias)), fix=_MERGE_FIX)
        return box

    def _renaming(self, new_names: Mapping[str, str], *, alias_prefix: str = "") -> Toolbox:
        """A new toolbox of the same tools, each under ``new_names[name]``."""
        box = Toolbox(encoders=self.encoders)
        for name, item in self._tools.items():
            new = new_names[name]
            if new == name:
                box._put(item, self._sources.get(name), fix=_RENAME_FIX)
            else:
                box._put(item.renamed(new), f"renamed from {name!r}", fix=_RENAME_FIX)
        self._copy_aliases(box, new_names, alias_prefix)
        return box

    def _copy_aliases(self, box: Toolbox, new_names: Mapping[str, str], alias_prefix: str = "") -> None:
        for alias, name in self._aliases.items():
            if name in new_names:
                box._put_alias(alias_prefix + alias, new_names[name], self._sources.get(alias), fix=_RENAME_FIX)

    def policies(self) -> dict[str, ToolPolicy]:
        """A snapshot of every tool's policy, by name, for audit."""
        return {name: item.policy for name, item in self._tools.items()}

    def schemas(self, revealed: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The neutral declaration of every tool shown: ``{"name", "description", "input_schema"}``.

        Deferred tools are left out, unless ``revealed`` names them (they then come last, in
        its order; see `shown`).
        """
        return [item.definition() for item in self.shown(revealed)]

    @property
    def deferred(self) -> list[str]:
        """The names of the deferred tools: exported only once a search reveals them."""
        return [name for name, item in self._tools.items() if item.defer]

    def shown(self, revealed: Iterable[str] = ()) -> list[Tool[..., Any]]:
        """The tools every export shows: those not deferred, in order, then the ``revealed`` ones.

        Revealed tools come after the others, in the order they were revealed, so that what a
        provider was shown before stays the start of what it is shown now (its prompt cache
        stays warm).
        """
        shown = [item for item in self._tools.values() if not item.defer]
        later: dict[str, Tool[..., Any]] = {}
        for name in revealed:
            item = self.get(name) if isinstance(name, str) else None
            if item is not None and item.defer:
                later.setdefault(item.name, item)  # an alias and its tool are one tool
        return shown + list(later.values())

    def search(self, query: str, *, k: int = 5, deferred_only: bool = False) -> list[Tool[..., Any]]:
        """The ``k`` tools that best match ``query``, best first (`tinytools._search`: BM25).

        A tool is matched by the words of its name, its description, and its parameters' names
        and descriptions. The index is built on the first search and again after the toolbox
        changes. ``deferred_only`` searches the deferred tools alone.
        """
        indexed = self._index
        if indexed is None:
            from tinytools._search import ToolIndex, document_of  # search loads on first use

            tools = list(self._tools.values())  # a snapshot: a tool added meanwhile waits for the next index
            deferred = frozenset(number for number, item in enumerate(tools) if item.defer)
            indexed = self._index = (tools, ToolIndex([document_of(item) for item in tools]), deferred)
        tools, index, deferred = indexed  # which tools are deferred is worked out once, with the index
        among = deferred if deferred_only else None
        return [tools[number] for number, _ in index.search(query[:_MAX_QUERY], k, among=among)]

    def fingerprint(self, provider: str = "openai", **options: Any) -> str:
        """A short, stable hash of the exact bytes this toolbox's export for ``provider`` sends.

        The same tools give the same fingerprint in every process (any hash seed, import order
        or Python version); a changed byte changes it. ``provider`` is ``openai``,
        ``openai_responses``, ``anthropic``, ``gemini`` or ``mcp``; ``options`` are that
        adapter's ``export_tools`` options (see `tinytools._exports`).
        """
        from tinytools._exports import fingerprint  # exports load on first use

        return fingerprint(self, provider, **options)

    def diff(self, previous: Any, provider: str = "openai", **options: Any) -> Any:
        """Which tools were added, removed or changed (and where) since ``previous``, an earlier export.

        Returns an `ExportDiff` (`tinytools._exports`): see why a prompt cache would miss
        before paying for it.
        """
        from tinytools._exports import diff  # exports load on first use

        return diff(self, previous, provider, **options)

    def search_tool(self, *, k: int = 5) -> Tool[..., Any]:
        """The ``search_tools`` tool, added to this toolbox: the model finds deferred tools with it.

        It takes a ``query`` and returns the ``k`` best matching deferred tools' names,
        descriptions and input schemas, searching the toolbox of the dispatcher that runs it
        (a toolbox made from this one searches its own tools), less those a policy denies or the
        turn does not allow; that dispatcher reveals them for the rest of its run.

        Raises:
            ValueError: ``k`` is below 1.
        """
        existing = next((item for item in self._tools.values() if is_search(item)), None)
        if existing is not None:
            return existing
        from tinytools._search import search_tool  # search loads on first use

        return self.add(search_tool(k))

    def plan_tool(
        self, *, name: str = "run_plan", max_steps: int = 20, tools: Iterable[str] | None = None
    ) -> Tool[..., Any]:
        """A plan tool, added to this toolbox: the model sends many calls as one plan, checked before any runs.

        Its input schema is the plan format (see the "Call plans" docs page) with the names and
        arguments of the tools its steps may call: ``tools`` (names), or by default every tool of
        the toolbox now, less deferred tools and search and plan tools; add the tools first. Every
        step is checked before the first runs (names, arguments, references typed by the
        referenced tool's output schema, what the turn may call, policy, approval, budget); then
        each step is a call of its own through the dispatcher that runs the plan. The model reads
        each step's status and the outputs of the steps the plan returns; the application reads
        every step's `ToolResult` with `plan_steps`.

        Raises:
            ValueError: ``max_steps`` is below 1, there is no tool to plan with, or ``tools`` names
                a search or plan tool.
            ToolNotFound: ``tools`` names a tool the toolbox does not have.
            ToolDefinitionError: A tool's arguments cannot be a step's.
        """
        from tinytools._plan_tool import is_plan, plan_tool  # plans load on first use

        if tools is None:
            chosen = [item for item in self if not (item.defer or is_search(item) or is_plan(item))]
        else:
            chosen = [self[named] for named in dict.fromkeys(tools)]
            odd = [item.name for item in chosen if is_search(item) or is_plan(item)]
            if odd:
                raise ValueError(f"a plan's steps cannot call the search or plan tool {odd[0]!r}")
        return self.add(plan_tool(chosen, name=name, max_steps=max_steps))


def as_toolbox(tools: Toolbox | Tool[..., Any] | Iterable[Tool[..., Any] | Callable[..., Any]]) -> Toolbox:
    """``tools`` as a `Toolbox`: a toolbox as is, a single `Tool`, or an iterable of tools."""
    if isinstance(tools, Toolbox):
        return tools
    if isinstance(tools, Tool):
        return Toolbox([tools])
    return Toolbox(tools)


def _merged_encoders(parts: list[Toolbox]) -> dict[type, Callable[[Any], Any]]:
    merged: dict[type, Callable[[Any], Any]] = {}
    origin: dict[type, int] = {}
    for number, part in enumerate(parts, 1):
        for cls, encode in part.encoders.items():
            if cls in merged and merged[cls] is not encode:
                raise ToolDefinitionError(
                    f"toolbox {origin[cls]} and toolbox {number} encode {cls.__qualname__} differently; "
                    "give the merged toolbox one encoder for it"
                )
            merged[cls], origin[cls] = encode, number
    return merged


def _chosen(
    obj: object, owner: type, include: Collection[str] | None, exclude: Collection[str] | None
) -> list[tuple[str, Member]]:
    """The methods of ``obj`` that become tools, in definition order (base classes first)."""
    from tinytools._toolsets import members

    found = members(obj, owner)
    wanted, unwanted = _names(include), _names(exclude) or frozenset()
    for option, names in (("include", wanted), ("exclude", unwanted)):
        for name in sorted(names or ()):
            member = found.get(name)
            if member is None or not member.is_method:
                raise ToolDefinitionError(f"{option}= names {name!r}, which is {_not_method(found, name, owner)}")
    return [
        (name, member)
        for name, member in found.items()
        if member.is_method and (name in wanted if wanted is not None else not member.library) and name not in unwanted
    ]


def _not_method(found: Mapping[str, Member], name: str, owner: type) -> str:
    """Why ``name`` is not a method of ``owner``, for the message refusing it (the failure path only)."""
    member = found.get(name)
    if member is not None:
        return f"not a method ({member.why_not}) of {owner.__qualname__}"
    named = [attr for attr, other in found.items() if isinstance(other.raw, Tool) and other.raw.name == name]
    if named:
        return f"the name of the tool {owner.__qualname__}.{named[0]}; include= and exclude= take attribute names"
    return f"not a public method of {owner.__qualname__}"


def _names(names: Collection[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    return frozenset([names] if isinstance(names, str) else names)


def _described(name: str, alias_of: str | None, source: str | None) -> str:
    """``'name'``, with what it is and where it came from: ``'Pay2' (alias of 'pay', from toolbox 1)``."""
    notes = ([f"alias of {alias_of!r}"] if alias_of is not None else []) + ([source] if source is not None else [])
    return f"{name!r} ({', '.join(notes)})" if notes else repr(name)


def _within(number: int, source: str | None) -> str:
    return f"from toolbox {number}" if source is None else f"{source} in toolbox {number}"


def _cut(items: list[str]) -> str:
    shown = ", ".join(items[:_REPR_ITEMS])
    return shown if len(items) <= _REPR_ITEMS else f"{shown}, ... {len(items) - _REPR_ITEMS} more"


publish("tinytools", Toolbox)
