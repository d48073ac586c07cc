"""`Toolbox.from_object` takes an object's own methods: not a library base's, not callable values."""

from __future__ import annotations

import collections
import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tinytools import Toolbox, ToolCall, ToolDefinitionError, ToolDefinitionWarning, dispatch, tool


def run(box: Toolbox, name: str, **arguments: Any) -> Any:
    result = dispatch(ToolCall("c1", name, arguments), box)
    assert result.status == "succeeded", result.error
    return result.output


def shout(text: str) -> str:
    """A module-level function, stored on classes below as a value."""
    return text.upper()


class Worker(threading.Thread):
    def work(self, n: int) -> int:
        """Work n units."""
        return n

    def run(self) -> None:
        """Overrides Thread.run: the application's own, so a tool."""


class Store(collections.UserDict):  # type: ignore[type-arg]
    def lookup(self, key: str) -> str | None:
        """Look a key up."""
        return self.data.get(key)


@dataclasses.dataclass
class Settings:
    key_fn: Callable[..., Any] = print
    formatter: Callable[[str], str] = shout
    pick: Callable[[int], int] = lambda n: n
    n: int = 3

    def get(self) -> int:
        """The setting."""
        return self.n


class Ledger:
    @staticmethod
    def describe(cls: str, n: int = 1) -> str:
        """Describe a class of entries."""
        return cls * n

    @tool
    @staticmethod
    def summarize(cls: str, n: int = 1) -> str:
        """Summarize a class of entries."""
        return f"{cls}:{n}"


class SubLedger(Ledger):
    def total(self) -> int:
        """The total."""
        return 0


STATIC_SCHEMA = {
    "type": "object",
    "properties": {"cls": {"type": "string"}, "n": {"type": "integer", "default": 1}},
    "required": ["cls"],
    "additionalProperties": False,
}


def test_a_standard_library_base_gives_no_tools_but_an_override_is_the_applications() -> None:
    box = Toolbox.from_object(Worker())
    assert box.names == ["run", "work"]  # Thread's run keeps its place; start, join, setDaemon... do not appear
    assert Toolbox.from_object(Store()).names == ["lookup"]


def test_include_may_still_pick_a_library_bases_method() -> None:
    box = Toolbox.from_object(Worker(), include=["work", "is_alive"])
    assert box.names == ["is_alive", "work"]
    assert run(box, "is_alive") is False
    assert Toolbox.from_object(Store(), exclude=["get"]).names == ["lookup"]  # exclude= of one is no error


def test_a_pydantic_model_gives_its_own_methods() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Counter(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        count: int = 0

        def bump(self, by: int) -> int:
            """Bump the counter."""
            self.count += by
            return self.count

    counter = Counter()
    box = Toolbox.from_object(counter)
    assert box.names == ["bump"]
    assert run(box, "bump", by=2) == 2 and counter.count == 2


def test_callable_values_are_not_methods() -> None:
    settings = Settings()
    settings.extra = shout  # type: ignore[attr-defined]
    assert Toolbox.from_object(settings).names == ["get"]
    for field in ("key_fn", "formatter", "pick"):
        with pytest.raises(ToolDefinitionError) as info:
            Toolbox.from_object(settings, include=[field])
        assert info.value.reason == f"include= names {field!r}, which is not a method (a dataclass field) of Settings"


def test_a_function_stored_on_a_class_or_an_instance_is_not_a_method() -> None:
    class Holder:
        loud = shout

        def act(self, x: int) -> int:
            """Act."""
            return x

    holder = Holder()
    setattr(holder, "act", lambda y: y)  # noqa: B010 (shadows the method, as an instance may)
    with pytest.warns(ToolDefinitionWarning, match="found no tools on .*Holder"):
        assert Toolbox.from_object(holder).names == []
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(holder, include=["act"])
    assert "this instance's own attribute" in info.value.reason
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Holder(), include=["loud"])
    assert "a function defined elsewhere and stored on the class" in info.value.reason


def test_a_cached_method_is_still_a_method() -> None:
    class Maths:
        @functools.lru_cache(maxsize=8)  # noqa: B019
        def square(self, n: int) -> int:
            """Square n."""
            return n * n

    box = Toolbox.from_object(Maths())
    assert box.names == ["square"]
    assert run(box, "square", n=3) == 9


@pytest.mark.parametrize("obj", [Ledger(), Ledger, SubLedger()])
def test_a_static_method_keeps_its_first_parameter_whatever_its_name(obj: object) -> None:
    box = Toolbox.from_object(obj, include=["describe", "summarize"])
    assert box.names == ["describe", "summarize"]
    for name in box.names:
        assert box[name].input_schema == STATIC_SCHEMA
    assert run(box, "describe", cls="ab", n=2) == "abab"
    assert run(box, "summarize", cls="ab") == "ab:1"


def test_a_method_that_cannot_be_a_tool_is_named_with_the_exclude_that_leaves_it_out() -> None:
    class Search:
        def find(self, **filters: str) -> list[str]:
            """Find by filters."""
            return list(filters)

        def size(self) -> int:
            """How many."""
            return 0

    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Search())
    assert info.value.tool == "find" and info.value.parameter == "filters"
    assert info.value.reason.startswith("method test_a_method_that_cannot_be_a_tool_is_named_with_the_exclude_")
    assert "Search.find cannot be a tool: **kwargs cannot be expressed" in info.value.reason
    assert info.value.reason.endswith("; or leave it out with exclude=['find']")
    assert Toolbox.from_object(Search(), exclude=["find"]).names == ["size"]
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Search(), include=["find"])
    assert info.value.reason.endswith("; or take it out of include=")


def test_include_by_a_tools_name_says_it_takes_attribute_names() -> None:
    class Named:
        @tool(name="read_it")
        def read(self) -> int:
            """Read."""
            return 1

    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Named(), include=["read_it"])
    assert "the name of the tool" in info.value.reason and "Named.read" in info.value.reason
    assert "take attribute names" in info.value.reason
