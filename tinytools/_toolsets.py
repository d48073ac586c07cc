"""Which attributes of an object are its own methods, and the tool each one makes.

`Toolbox.from_object` reads an object through this module. A method is what a class body
defines as one: a function written in that class body, a ``staticmethod``, a ``classmethod``, a
`Tool` made there with ``@tool``, or a wrapper of such a function that binds like one
(``functools.lru_cache``). Everything else is a value, even when callable: a dataclass field
whose default is a function, a module's function stored on the class, an instance's own
attribute. Methods inherited from the standard library or from a library's base class
(``threading.Thread.start``, ``pydantic.BaseModel.model_dump``) are not the application's and
are left out unless named in ``include=``.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Any

from tinytools._errors import ToolDefinitionError
from tinytools._tool import Tool, make_tool

__all__ = ["LIBRARY_PACKAGES", "Member", "members", "method_tool"]

LIBRARY_PACKAGES = frozenset(
    {"attr", "attrs", "msgspec", "pydantic", "pydantic_core", "tinytools", "typing_extensions"}
)
"""Top-level packages (besides the standard library) whose base classes' methods are not tools."""

_STDLIB = os.path.dirname(os.__file__)
"""The standard library's folder (where ``os`` itself lives)."""


class Member:
    """One public attribute of an object, as `Toolbox.from_object` sees it."""

    __slots__ = ("defined_by", "is_method", "library", "raw", "why_not")

    def __init__(self, raw: Any, defined_by: type | None, why_not: str | None, library: bool):
        self.raw = raw
        """What the class ``__dict__`` (or the instance's) holds under the name."""
        self.defined_by = defined_by
        """The most derived class that defines it; None for an instance's own attribute."""
        self.why_not = why_not
        """Why it is not a method (``"a property, a class or a value"``), or None for a method."""
        self.is_method = why_not is None
        """Whether it can become a tool."""
        self.library = library
        """Whether a standard-library or library base class defines it (a tool only through ``include=``)."""


def members(obj: object, owner: type) -> dict[str, Member]:
    """Every public attribute of ``obj``'s classes, base classes first, the most derived definition winning."""
    found: dict[str, Member] = {}
    for klass in reversed(owner.__mro__):
        library = is_library_class(klass)
        fields = vars(klass).get("__dataclass_fields__", {})
        for name, raw in vars(klass).items():
            if not name.startswith("_"):
                why_not = "a dataclass field" if name in fields else _why_not_a_method(raw)
                found[name] = Member(raw, klass, why_not, library)  # an override keeps its base's place
    own = None if obj is owner else getattr(obj, "__dict__", None)
    if isinstance(own, dict):
        for name in [name for name in own if name in found and found[name].is_method]:
            found[name] = Member(own[name], None, "this instance's own attribute, which hides the class's", False)
    return found


@functools.lru_cache(maxsize=256)
def _is_library_module(module: str) -> bool:
    top = module.partition(".")[0]
    if top in LIBRARY_PACKAGES:
        return True
    if top not in sys.stdlib_module_names:
        return False
    path = getattr(sys.modules.get(top), "__file__", None)  # an application's own `calendar.py` is not the stdlib's
    return path is None or (path.startswith(_STDLIB) and "-packages" not in path)


def is_library_class(klass: type) -> bool:
    """Whether ``klass`` comes from the standard library or from `LIBRARY_PACKAGES`."""
    return _is_library_module(getattr(klass, "__module__", None) or "builtins")


def _why_not_a_method(raw: Any) -> str | None:
    if isinstance(raw, (staticmethod, classmethod, Tool, functools.partialmethod)):
        return None
    if inspect.isfunction(raw):
        return None if _in_a_class_body(raw) else "a function defined elsewhere and stored on the class"
    if isinstance(raw, type) or hasattr(type(raw), "__set__") or hasattr(type(raw), "__delete__"):
        return "a property, a class or a value"
    wrapped = inspect.unwrap(raw) if callable(raw) and hasattr(type(raw), "__get__") else None
    if inspect.isfunction(wrapped) and _in_a_class_body(wrapped):
        return None  # functools.lru_cache and other wrappers that bind like the method they wrap
    return "a property, a class or a value"


def _in_a_class_body(fn: Any) -> bool:
    owner, _, _ = fn.__qualname__.rpartition(".")
    return bool(owner) and not owner.endswith("<locals>")


def method_tool(
    obj: object, owner: type, attribute: str, member: Member, *, prefix: str, fix: str, exclusive: Any = None
) -> Tool[..., Any]:
    """The tool ``obj``'s method ``attribute`` makes, bound to ``obj`` and named ``prefix + attribute``.

    A static method reaches `make_tool` as the ``staticmethod`` itself, so its first parameter is
    kept; a method is bound through its descriptor, as ``obj.attribute`` would be. A method bound
    to the instance or the class shares its state with the others, so its tool is serial in
    batches and runs holding ``exclusive`` (one lock for the object's methods: calls from separate
    dispatches, an MCP server's requests, wait for each other) unless its ``@tool`` says
    ``parallel_safe=True`` (or ``False``, which it already is).

    Raises:
        ToolDefinitionError: It cannot be a tool; the message names the method and ``fix``.
    """
    raw = member.raw
    if obj is owner and (inspect.isfunction(raw) or (isinstance(raw, Tool) and raw.binds == "instance")):
        raise ToolDefinitionError(
            f"{owner.__qualname__}.{attribute} is a plain method and needs an instance; "
            f"pass an instance ({owner.__qualname__}(...)) to Toolbox.from_object, or {fix}",
            tool=attribute,
        )
    value = raw if isinstance(raw, staticmethod) else raw.__get__(None if obj is owner else obj, owner)
    try:
        if isinstance(value, Tool):
            made = value if not prefix else value.renamed(prefix + value.name)
        else:
            made = make_tool(value, name=prefix + attribute)
        return made if made.static or made.options.parallel_safe is not None else made.serial(exclusive)
    except ToolDefinitionError as exc:
        where = (member.defined_by or owner).__qualname__
        raise ToolDefinitionError(
            f"method {where}.{attribute} cannot be a tool: {exc.reason}; or {fix}",
            tool=exc.tool,
            parameter=exc.parameter,
        ) from None
