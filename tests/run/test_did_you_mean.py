"""Did you mean: an unknown tool name close to one the model may call names that one.

Close means the same but for case and separators, or a few edits away (a swap of neighbours is
one); a far name, an ambiguous one, and a tool the allowlist hides are never suggested.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.run.paths import PATHS, options, run_call
from tinytools import Dispatcher, Toolbox, ToolCall, ToolNotFound, tool
from tinytools._run.near_misses import closest_name


@tool
def get_weather(city: str) -> str:
    """Look up the weather."""
    return city


@tool
def search_docs(query: str) -> str:
    """Search the docs."""
    return query


@tool
def delete_account(user: str) -> str:
    """Delete an account."""
    return user


TOOLS = Toolbox([get_weather, search_docs, delete_account])
OFFERED = TOOLS.names


@pytest.mark.parametrize(
    ("requested", "meant"),
    [
        ("get-weather", "get_weather"),  # separator
        ("GET_WEATHER", "get_weather"),  # case
        ("Get.Weather", "get_weather"),
        ("get weather", "get_weather"),
        ("get_waether", "get_weather"),  # transposition
        ("get_wether", "get_weather"),  # deletion
        ("get_weathers", "get_weather"),  # insertion
        ("get_weatjer", "get_weather"),  # substitution
        ("serach_docs", "search_docs"),  # transposition
        ("search_dcs", "search_docs"),
        ("Search-Dcos", "search_docs"),  # case, separator and a swap
        ("get_wthr", None),  # too far
        ("weather", None),
        ("lookup", None),
        ("get", None),
        ("", None),
    ],
)
def test_closest_name(requested: str, meant: str | None) -> None:
    assert closest_name(requested, OFFERED) == meant


def test_short_names_allow_only_case_and_separators() -> None:
    assert closest_name("ADD", ["add", "sub"]) == "add"
    assert closest_name("adds", ["add", "sub"]) == "add"  # a 4-letter name: one edit
    assert closest_name("addss", ["add", "sub"]) is None
    assert closest_name("adb", ["add", "sub"]) is None  # 3 letters: no edits at all
    assert closest_name("ping", ["pong"]) == "pong"
    assert closest_name("pink", ["pong"]) is None  # two edits for a short name is too far


def test_an_ambiguous_near_miss_is_not_suggested() -> None:
    assert closest_name("get_x", ["get_a", "get_b"]) is None
    assert closest_name("get_a_b", ["get-a-b", "get_a_b_"]) == "get-a-b"  # the closer one wins
    assert closest_name("Read_File", ["read_file", "read-file"]) is None


def test_a_huge_name_is_not_compared() -> None:
    assert closest_name("get_weather" * 10_000, OFFERED) is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(OFFERED), st.integers(0, 30), st.sampled_from(["swap", "drop", "case", "dash"]))
def test_one_slip_of_an_offered_name_is_suggested(name: str, at: int, slip: str) -> None:
    at %= len(name) - 1
    if slip == "swap":
        requested = name[:at] + name[at + 1] + name[at] + name[at + 2 :]
    elif slip == "drop":
        requested = name[:at] + name[at + 1 :]
    elif slip == "case":
        requested = name.upper()
    else:
        requested = name.replace("_", "-")
    if requested != name:
        assert closest_name(requested, OFFERED) == name


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_every_entry_point_suggests(entry: str, variant: str) -> None:
    result = run_call(entry, [get_weather, search_docs], ToolCall("c", "get-weather", "{}"), **options(variant))
    assert result.error is not None and result.error.code == "unknown_tool"
    assert result.error.message == (
        "Unknown tool 'get-weather'. Did you mean 'get_weather'? Available tools: get_weather, search_docs."
    )


def test_a_far_name_gets_the_list_only() -> None:
    result = Dispatcher(TOOLS).dispatch(ToolCall("c", "forecast", "{}"))
    assert result.error is not None
    assert result.error.message == "Unknown tool 'forecast'. Available tools: get_weather, search_docs, delete_account."


@pytest.mark.parametrize("entry", ["dispatch", "adispatch", "dispatch_many", "strict"])
def test_a_tool_the_allowlist_hides_is_never_suggested_nor_listed(entry: str) -> None:
    dispatcher = Dispatcher(TOOLS, strict=entry == "strict")
    call = ToolCall("c", "delete-account", "{}")
    allowed = ["get_weather", "search_docs"]
    if entry == "adispatch":
        result = asyncio.run(dispatcher.adispatch(call, allowed=allowed))
    elif entry == "dispatch_many":
        (result,) = dispatcher.dispatch_many([call], allowed=allowed)
    else:
        result = dispatcher.dispatch(call, allowed=allowed)
    assert result.error is not None and result.error.code == "unknown_tool"
    assert "delete_account" not in result.error.message
    assert result.error.message == "Unknown tool 'delete-account'. Available tools: get_weather, search_docs."
    shown = dispatcher.dispatch(call, allowed=["delete_account"])
    assert shown.error is not None and "Did you mean 'delete_account'?" in shown.error.message


def test_a_selected_toolbox_suggests_only_its_tools() -> None:
    result = Dispatcher(TOOLS.select(["get_weather"])).dispatch(ToolCall("c", "search-docs", "{}"))
    assert result.error is not None and "search_docs" not in result.error.message


def test_the_fail_policy_raises_with_the_suggestion() -> None:
    dispatcher = Dispatcher(TOOLS, unknown_tool="fail")
    with pytest.raises(ToolNotFound) as caught:
        dispatcher.dispatch(ToolCall("c", "Get_Weather", "{}"))
    assert caught.value.suggestion == "get_weather"
    assert "did you mean 'get_weather'?" in str(caught.value)
    with pytest.raises(ToolNotFound) as caught:
        dispatcher.dispatch(ToolCall("c", "delete-account", "{}"), allowed=["get_weather"])
    assert caught.value.suggestion is None


def reference_distance(a: str, b: str) -> int:
    """Optimal string alignment distance, the plain way: the whole table, no early exit."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
    return table[len(a)][len(b)]


def fold(name: str) -> str:
    return name.casefold().replace("-", "_").replace(".", "_").replace(" ", "_")


names = st.text(alphabet="abcAB_-. ", max_size=9)


@settings(max_examples=400, deadline=None)
@given(names, st.lists(names, max_size=5, unique=True))
def test_the_suggestion_is_the_one_closest_name_within_reach(requested: str, offered: list[str]) -> None:
    reach = 0 if len(fold(requested)) < 4 else 1 if len(fold(requested)) < 6 else 2
    distances = {name: reference_distance(fold(requested), fold(name)) for name in offered}
    near = [name for name, distance in distances.items() if distance <= reach]
    best = min((distances[name] for name in near), default=None)
    closest = [name for name in near if distances[name] == best]
    expected = closest[0] if len(closest) == 1 and closest[0] != requested else None
    assert closest_name(requested, offered) == expected
