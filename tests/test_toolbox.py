from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools import (
    Dispatcher,
    Tool,
    Toolbox,
    ToolCall,
    ToolDefinitionError,
    ToolDefinitionWarning,
    ToolPolicy,
    adispatch,
    adispatch_many,
    dispatch,
    dispatch_many,
    tool,
)


def first(x: int) -> int:
    """The first tool."""
    return x


def second(y: str) -> str:
    """The second tool."""
    return y


def test_holds_tools_by_name_and_exports_schemas() -> None:
    box = Toolbox([tool(first), second])
    assert box.names == ["first", "second"]
    assert isinstance(box["second"], Tool)
    assert "first" in box and "third" not in box
    assert len(box) == 2 and [t.name for t in box] == ["first", "second"]
    assert box.schemas() == [
        {
            "name": "first",
            "description": "The first tool.",
            "input_schema": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "additionalProperties": False,
            },
        },
        {
            "name": "second",
            "description": "The second tool.",
            "input_schema": {
                "type": "object",
                "properties": {"y": {"type": "string"}},
                "required": ["y"],
                "additionalProperties": False,
            },
        },
    ]


@pytest.mark.parametrize("other_name", ["first", "FIRST", "First"])
def test_duplicate_names_are_refused_naming_both(other_name: str) -> None:
    box = Toolbox([first])
    with pytest.raises(ToolDefinitionError) as info:
        box.add(tool(name=other_name)(second))
    assert "'first'" in str(info.value) and repr(other_name) in str(info.value)


class Notes:
    """A small application object whose methods become tools."""

    kind: ClassVar[str] = "notes"

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}

    def write(self, title: str, text: str) -> int:
        """Write a note.

        Args:
            title: The note's title.
            text: What it says.
        """
        self.notes[title] = text
        return len(self.notes)

    def read(self, title: str) -> str | None:
        """Read a note by its title."""
        return self.notes.get(title)

    @staticmethod
    def version() -> str:
        """The notes format version."""
        return "1"

    @classmethod
    def describe(cls, verbose: bool = False) -> str:
        """What this toolset is."""
        return cls.kind + (" (verbose)" if verbose else "")

    @property
    def count(self) -> int:
        return len(self.notes)

    @functools.cached_property
    def index(self) -> list[str]:
        return sorted(self.notes)

    class JournalEntry:
        """A nested class is not a tool."""

    limit = 10

    def _private(self) -> None:
        """Not public."""


class MoreNotes(Notes):
    def delete(self, title: str) -> bool:
        """Delete a note."""
        return self.notes.pop(title, None) is not None


def run(box: Toolbox, name: str, **arguments: Any) -> Any:
    result = dispatch(ToolCall("c1", name, arguments), box)
    assert result.status == "succeeded", result.error
    return result.output


def test_public_methods_become_tools_bound_to_one_instance() -> None:
    notes = Notes()
    box = Toolbox.from_object(notes)
    assert box.names == ["write", "read", "version", "describe"]
    assert box["write"].definition() == {
        "name": "write",
        "description": "Write a note.",
        "input_schema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The note's title."},
                "text": {"type": "string", "description": "What it says."},
            },
            "required": ["title", "text"],
            "additionalProperties": False,
        },
    }
    assert run(box, "write", title="a", text="x") == 1
    assert notes.notes == {"a": "x"}
    assert run(box, "read", title="a") == "x"
    assert run(box, "version") == "1"
    assert run(box, "describe", verbose=True) == "notes (verbose)"
    for item in box:
        assert "self" not in item.input_schema["properties"] and "cls" not in item.input_schema["properties"]


def test_two_instances_make_two_independent_toolsets() -> None:
    first_notes, second_notes = Notes(), Notes()
    run(Toolbox.from_object(first_notes), "write", title="a", text="x")
    assert first_notes.notes == {"a": "x"} and second_notes.notes == {}


def test_inherited_methods_come_first_and_overrides_keep_their_place() -> None:
    assert Toolbox.from_object(MoreNotes()).names == ["write", "read", "version", "describe", "delete"]


def test_prefix_include_and_exclude() -> None:
    notes = Notes()
    assert Toolbox.from_object(notes, prefix="notes_", include=["read", "write"]).names == [
        "notes_write",
        "notes_read",
    ]
    assert Toolbox.from_object(notes, exclude=("version", "describe")).names == ["write", "read"]
    assert Toolbox.from_object(notes, include="read").names == ["read"]


@pytest.mark.parametrize(
    ("option", "name", "why"),
    [
        ("include", "erase", "not a public method"),
        ("exclude", "erase", "not a public method"),
        ("include", "_private", "not a public method"),
        ("include", "count", "not a method"),
        ("include", "index", "not a method"),
        ("include", "JournalEntry", "not a method"),
        ("include", "limit", "not a method"),
    ],
)
def test_names_that_are_not_public_methods_are_refused(option: str, name: str, why: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Notes(), **{option: [name]})
    assert f"{option}= names {name!r}" in info.value.reason and why in info.value.reason
    assert "Notes" in info.value.reason


def test_a_class_gives_its_static_and_class_methods_and_refuses_plain_ones() -> None:
    assert Toolbox.from_object(Notes, include=["version", "describe"]).names == ["version", "describe"]
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Notes)
    assert info.value.tool == "write" and "needs an instance" in info.value.reason


class Search:
    def __init__(self, index: dict[str, str]) -> None:
        self.index = index

    @tool(name="find", idempotent=True)
    def lookup(self, key: str) -> str:
        """Look a key up."""
        return self.index[key]

    def size(self) -> int:
        """How many keys there are."""
        return len(self.index)


def test_a_tool_made_in_the_class_body_is_taken_bound_under_its_name() -> None:
    box = Toolbox.from_object(Search({"k": "v"}), prefix="s_")
    assert box.names == ["s_find", "s_size"]
    assert box["s_find"].idempotent is True
    assert box["s_find"].input_schema["properties"] == {"key": {"type": "string"}}
    assert run(box, "s_find", key="k") == "v"


class Counter:
    """A counter: each call reads the count, then writes it back one higher."""

    def __init__(self) -> None:
        self.count = 0

    def increment(self) -> int:
        """Add one; returns the new count."""
        seen = self.count
        time.sleep(0.005)  # a window for another call to read the same count, as real work would leave
        self.count = seen + 1
        return self.count

    @staticmethod
    def pure(n: int) -> int:
        """Shares nothing with the instance."""
        return n


def _batch_of_increments(way: str, box: Toolbox) -> list[Any]:
    calls = [ToolCall(f"c{n}", "increment", {}) for n in range(8)]
    if way == "Dispatcher.dispatch_many":
        results = Dispatcher(box).dispatch_many(calls)  # the README's loop
    elif way == "dispatch_many":
        results = dispatch_many(calls, box)
    else:
        results = asyncio.run(adispatch_many(calls, box))
    return [result.output for result in results]


@pytest.mark.parametrize("way", ["Dispatcher.dispatch_many", "dispatch_many", "adispatch_many"])
def test_the_methods_of_one_instance_are_serial_in_a_batch(way: str) -> None:
    counter = Counter()
    box = Toolbox.from_object(counter)
    assert _batch_of_increments(way, box) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert counter.count == 8
    assert box["increment"].parallel_safe is False and box["pure"].parallel_safe is True  # no shared state


class Meeting:
    """Two parties who must both arrive before either leaves."""

    def __init__(self) -> None:
        self.both_here = threading.Barrier(2, timeout=30)

    @tool(parallel_safe=True)
    def arrive(self, who: str) -> str:
        """Arrive, and wait for the other party."""
        self.both_here.wait()  # a serial batch would leave the first caller here alone: BrokenBarrierError
        return who

    @tool(parallel_safe=False, idempotent=True)
    def leave(self) -> str:
        """Leave."""
        return "left"

    @tool(idempotent=True)
    def note(self) -> str:
        """Options other than parallel_safe leave a method serial."""
        return "noted"


def test_a_method_whose_tool_says_parallel_safe_runs_concurrently() -> None:
    box = Toolbox.from_object(Meeting(), prefix="m_")
    results = Dispatcher(box).dispatch_many(
        [ToolCall("a", "m_arrive", {"who": "ann"}), ToolCall("b", "m_arrive", {"who": "bo"})]
    )
    assert [(result.status, result.output) for result in results] == [("succeeded", "ann"), ("succeeded", "bo")]
    assert [box[name].parallel_safe for name in ("m_arrive", "m_leave", "m_note")] == [True, False, False]


def test_an_object_without_tools_warns() -> None:
    class Hidden:
        def _secret(self) -> int:
            return 1

    with pytest.warns(ToolDefinitionWarning, match="found no tools on .*Hidden"):
        assert len(Toolbox.from_object(Hidden())) == 0


def test_two_methods_claiming_one_name_are_refused_naming_both() -> None:
    class Clash:
        @tool(name="size")
        def measure(self) -> int:
            """Measure."""
            return 1

        def size(self) -> int:
            """Size."""
            return 2

    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Clash())
    assert info.value.tool == "size"
    assert "Clash.measure" in info.value.reason and "Clash.size" in info.value.reason


def test_algebra_returns_new_toolboxes_and_leaves_the_old_untouched() -> None:
    box = Toolbox([first, second], aliases={"one": "first"})
    before = (box.names, box.aliases, list(box))
    prefixed = box.prefixed("fs_")
    renamed = box.renamed({"second": "other"})
    filtered = box.filtered(lambda item: item.name == "second")
    assert (box.names, box.aliases, list(box)) == before
    assert prefixed.names == ["fs_first", "fs_second"] and prefixed.aliases == {"fs_one": "fs_first"}
    assert renamed.names == ["first", "other"] and renamed.aliases == {"one": "first"}
    assert renamed["first"] is box["first"] and "second" not in renamed
    assert filtered.names == ["second"] and filtered.aliases == {}
    assert filtered["second"] is box["second"]


def test_a_renamed_tool_keeps_everything_but_its_name() -> None:
    policy = ToolPolicy.read_only()

    @tool(timeout=2.0, idempotent=True, retries=2, parallel_safe=False, policy=policy, validate_output=True)
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    copy = Toolbox([echo]).renamed({"echo": "say"})["say"]
    assert copy.name == "say" and copy.fn is echo.fn
    for attribute in (
        "description",
        "schema",
        "output_schema",
        "slots",
        "timeout",
        "idempotent",
        "retries",
        "parallel_safe",
        "policy",
        "validate_output",
        "format",
        "executor",
        "expose_errors",
        "injected",
    ):
        assert getattr(copy, attribute) == getattr(echo, attribute), attribute
    result = dispatch(ToolCall("c1", "say", {"text": "hi"}), Toolbox([copy]))
    assert (result.name, result.output) == ("say", "hi")


def test_renaming_refuses_unknown_names_and_collisions() -> None:
    box = Toolbox([first, second])
    with pytest.raises(ToolDefinitionError) as info:
        box.renamed({"third": "x"})
    assert info.value.tool == "third" and "no such tool" in info.value.reason
    with pytest.raises(ToolDefinitionError) as info:
        box.renamed({"second": "first"})
    assert info.value.reason == (
        "'first' and 'first' (renamed from 'second') have the same name; "
        "choose a new name that no other tool or alias of the toolbox has"
    )
    with pytest.raises(ToolDefinitionError):
        box.prefixed("x" * 60)


def test_merge_keeps_every_tool_and_alias_in_order() -> None:
    left = Toolbox([first], aliases={"one": "first"})
    right = Toolbox.from_object(Notes(), include=["read"])
    merged = Toolbox.merge(left, right, tool(third))
    assert merged.names == ["first", "read", "third"] and merged.aliases == {"one": "first"}
    assert merged["one"] is left["first"]
    assert left.names == ["first"] and right.names == ["read"]


def third(z: float) -> float:
    """The third tool."""
    return z


@pytest.mark.parametrize("clashing", ["first", "FIRST"])
def test_merge_refuses_a_collision_naming_both_toolboxes(clashing: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.merge(Toolbox([first]), Toolbox([tool(name=clashing)(second)]))
    assert info.value.tool == clashing
    assert "'first' (from toolbox 1)" in info.value.reason
    assert f"{clashing!r} (from toolbox 2)" in info.value.reason


def test_merge_names_the_methods_tools_came_from() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.merge(Toolbox.from_object(Notes()), Toolbox.from_object(MoreNotes(), include=["read"]))
    assert "'read' (from Notes.read in toolbox 1)" in info.value.reason
    assert "'read' (from MoreNotes.read in toolbox 2)" in info.value.reason


def test_merge_refuses_an_alias_that_collides_with_a_tool() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.merge(Toolbox([first], aliases={"read": "first"}), Toolbox.from_object(Notes()))
    assert info.value.reason.startswith(
        "'read' (alias of 'first', from toolbox 1) and 'read' (from Notes.read in toolbox 2) have the same name"
    )


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (
            lambda: Toolbox([first, tool(name="FIRST")(second)]),
            "'first' and 'FIRST' have names equal but for case; rename the tool with @tool(name=...)",
        ),
        (
            lambda: Toolbox([first, second], aliases={"second": "first"}),
            "'second' and 'second' (alias of 'first') have the same name; choose another alias",
        ),
        (
            lambda: Toolbox([first], aliases={"Pay2": "first"}).renamed({"first": "pay2"}),
            "'pay2' (renamed from 'first') and 'Pay2' (alias of 'pay2') have names equal but for case; "
            "choose a new name that no other tool or alias of the toolbox has",
        ),
    ],
)
def test_a_collision_says_what_each_name_is_and_the_fix_that_applies(build: Any, reason: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        build()
    assert info.value.reason == reason
    assert "((" not in info.value.reason


names = st.text(alphabet="abAB_", min_size=1, max_size=3)


@given(st.lists(names, unique_by=str.casefold), st.lists(names, unique_by=str.casefold))
def test_merge_succeeds_exactly_when_no_name_is_shared_but_for_case(left: list[str], right: list[str]) -> None:
    boxes = [Toolbox([tool(name=name)(first) for name in part]) for part in (left, right)]
    if {name.casefold() for name in left} & {name.casefold() for name in right}:
        with pytest.raises(ToolDefinitionError):
            Toolbox.merge(*boxes)
    else:
        assert Toolbox.merge(*boxes).names == left + right


def test_repr_shows_names_and_aliases_and_cuts_long_lists() -> None:
    assert repr(Toolbox()) == "Toolbox([])"
    assert (
        repr(Toolbox([first, second], aliases={"x": "first"})) == "Toolbox(['first', 'second'], aliases={'x': 'first'})"
    )
    many = Toolbox([tool(name=f"t{number}")(first) for number in range(20)])
    assert repr(many) == "Toolbox(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7', ... 12 more])"


def test_a_single_tool_works_wherever_a_toolbox_does() -> None:
    add = tool(first)
    call = ToolCall("c1", "first", {"x": 3})
    outputs = [
        dispatch(call, add).output,
        asyncio.run(adispatch(call, add)).output,
        dispatch_many([call], add)[0].output,
        asyncio.run(adispatch_many([call], add))[0].output,
        Dispatcher(add).dispatch(call).output,
    ]
    assert outputs == [3] * 5
    assert dispatch(ToolCall("c2", "second", {"y": "a"}), add).error.code == "unknown_tool"


def test_algebra_keeps_the_encoders_and_merge_refuses_two_for_one_class() -> None:
    from fractions import Fraction

    box = Toolbox([first, second], encoders={Fraction: str})
    kept = (
        box.prefixed("p_"),
        box.renamed({"first": "one"}),
        box.filtered(bool),
        box.select(),
        Toolbox.merge(box, [third]),
    )
    for made in kept:
        assert made.encoders == {Fraction: str}
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.merge(box, Toolbox([third], encoders={Fraction: float}))
    assert "toolbox 1 and toolbox 2" in info.value.reason and "Fraction" in info.value.reason


def test_a_class_method_made_with_tool_needs_an_instance_when_given_the_class() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox.from_object(Search, include=["lookup"])
    assert "needs an instance" in info.value.reason


def test_a_single_tool_keeps_its_default_dispatcher_between_calls() -> None:
    from tinytools._run.shortcuts import default_dispatcher

    add = tool(first)
    call = ToolCall("c1", "first", {"x": 3})
    assert dispatch(call, add).output == 3 and add.invoke({"x": 4}).output == 4
    made = default_dispatcher(add)
    assert default_dispatcher(add) is made and made.toolbox.names == ["first"]
    renamed = add.renamed("one")  # a copy of the tool copies the cached toolbox's key too
    assert default_dispatcher(renamed).toolbox.names == ["one"]
    assert dispatch(ToolCall("c2", "one", {"x": 5}), renamed).output == 5
    assert dispatch(ToolCall("c3", "one", {"x": 5}), add).error.code == "unknown_tool"
    made.toolbox.add(second)  # the cached toolbox changed: the tool makes a new one of itself alone
    assert default_dispatcher(add).toolbox.names == ["first"]


def test_a_toolbox_that_changed_runs_its_calls_on_a_new_default_dispatcher() -> None:
    from tinytools._run.shortcuts import default_dispatcher

    box = Toolbox([first])
    assert dispatch(ToolCall("c1", "first", '{"x": 1}'), box).output == 1
    before = default_dispatcher(box)
    for change in (lambda: box.add(second), lambda: box.alias("uno", "first")):
        ran = before.calls
        change()
        assert dispatch(ToolCall("c2", "first", '{"x": 2}'), box).output == 2
        after = default_dispatcher(box)
        assert after is not before and before.calls == ran  # the old dispatcher's paths ran nothing more
        assert after.calls == 1
        assert dispatch(ToolCall("c3", "first", '{"x": 3}'), box).output == 3 and after.calls == 2
        assert asyncio.run(adispatch(ToolCall("c4", "first", '{"x": 4}'), box)).output == 4 and after.calls == 3
        before = after
    assert dispatch(ToolCall("c5", "uno", '{"x": 5}'), box).output == 5
    assert dispatch(ToolCall("c6", "second", '{"y": "s"}'), box).output == "s"


def test_a_single_tools_cached_toolbox_does_not_keep_it_alive() -> None:
    import gc
    import weakref

    add = tool(first)
    assert add.invoke({"x": 1}).output == 1
    gone = weakref.ref(add)
    del add
    gc.collect()
    assert gone() is None


def test_the_methods_of_one_instance_run_one_at_a_time_across_separate_calls() -> None:
    counter = Counter()
    box = Toolbox.from_object(counter)

    async def gathered() -> list[Any]:
        dispatcher = Dispatcher(box)
        calls = [dispatcher.adispatch(ToolCall(f"c{n}", "increment", {})) for n in range(8)]
        return [result.output for result in await asyncio.gather(*calls)]

    assert sorted(asyncio.run(gathered())) == list(range(1, 9))

    threaded = Dispatcher(box)  # from several threads of sync code at once, too
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda n: threaded.dispatch(ToolCall(f"t{n}", "increment", {})).output, range(8)))
    assert sorted(outputs) == list(range(9, 17))

    async def two_batches() -> None:
        dispatcher = Dispatcher(box)
        batch = [ToolCall(f"b{n}", "increment", {}) for n in range(4)]
        await asyncio.gather(dispatcher.adispatch_many(batch), dispatcher.adispatch_many(batch))

    asyncio.run(two_batches())
    assert counter.count == 24


def test_an_mcp_client_calling_one_objects_methods_at_once_loses_no_update() -> None:
    from mcp import Client

    from tinytools.providers.mcp import build_server

    counter = Counter()
    server = build_server(Toolbox.from_object(counter))

    async def talk() -> list[Any]:
        async with Client(server, mode="legacy") as client:
            answers = await asyncio.gather(*(client.call_tool("increment", {}) for _ in range(8)))
            return [answer.structured_content for answer in answers]

    answers = asyncio.run(talk())
    assert sorted(answer["result"] for answer in answers) == list(range(1, 9))
