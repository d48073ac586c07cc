"""Tool search that is also an allowlist: deferred tools stay out of every export and cannot be
called until a search (ours, a provider's, or the application's) reveals them in the run.

Provider shapes are checked against the ``openai`` and ``anthropic`` SDKs' own types.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from anthropic.types import (
    ToolParam,
    ToolResultBlockParam,
    ToolSearchToolBm25_20251119Param,
    ToolSearchToolRegex20251119Param,
    ToolSearchToolResultBlock,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    FunctionToolParam,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItem,
    ToolSearchToolParam,
)
from openai.types.responses.response_tool_search_output_item_param_param import (
    ResponseToolSearchOutputItemParamParam,
)

from tinytools import (
    Dispatcher,
    Rewrite,
    Toolbox,
    ToolCall,
    ToolDefinitionError,
    ToolFormat,
    ToolNotFound,
    tool,
)
from tinytools._search import Document, ToolIndex
from tinytools.formats import parse_calls, render_tools
from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses

from .run.paths import ENTRIES, run_call


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool(defer=True)
def searchFlights(origin: str, destination: str) -> list[str]:
    """Find flights between two airports.

    Args:
        origin: Airport the trip starts from.
        destination: Airport the trip ends at.
    """
    return [f"{origin}-{destination}"]


@tool
def book_hotel(city: str, nights: int) -> str:
    """Reserve a room.

    Args:
        city: Where to stay.
        nights: How many nights, counting from check-in day.
    """
    return f"{nights} nights in {city}"


@tool
def convert_currency(amount: float, currency: str) -> float:
    """Convert money into another currency.

    Args:
        amount: How much.
        currency: ISO code of the currency wanted.
    """
    return amount


def box() -> Toolbox:
    return Toolbox(
        [get_weather, searchFlights, book_hotel, convert_currency], deferred=["book_hotel", convert_currency]
    )


def test_deferred_tools_are_marked_by_the_decorator_or_the_toolbox() -> None:
    tools = box()
    assert tools.deferred == ["searchFlights", "book_hotel", "convert_currency"]
    assert book_hotel.defer is False  # the toolbox holds a deferred copy; the tool itself is unchanged
    with pytest.raises(ToolDefinitionError, match="not a tool of this toolbox"):
        Toolbox([get_weather], deferred=["nope"])


def _exported_names(tools: Toolbox, revealed: tuple[str, ...] = ()) -> dict[str, list[str]]:
    text = render_tools(tools, revealed=revealed)
    return {
        "schemas": [entry["name"] for entry in tools.schemas(revealed)],
        "openai": [entry["function"]["name"] for entry in openai.export_tools(tools, revealed=revealed)],
        "responses": [entry["name"] for entry in openai_responses.export_tools(tools, revealed=revealed)],
        "anthropic": [entry["name"] for entry in anthropic.export_tools(tools, revealed=revealed)],
        "gemini": [d["name"] for d in gemini.export_tools(tools, revealed=revealed)[0]["functionDeclarations"]],
        "mcp": [entry["name"] for entry in mcp.export_tools(tools, revealed=revealed)],
        "text": sorted(
            (name for name in ("get_weather", "searchFlights", "book_hotel", "convert_currency") if name in text),
            key=text.index,
        ),
    }  # fmt: skip


def test_deferred_tools_are_absent_from_every_export_until_revealed() -> None:
    tools = box()
    assert set(map(tuple, _exported_names(tools).values())) == {("get_weather",)}
    revealed = _exported_names(tools, ("convert_currency", "searchFlights"))
    assert set(map(tuple, revealed.values())) == {("get_weather", "convert_currency", "searchFlights")}


def test_every_text_format_leaves_deferred_tools_out() -> None:
    tools = box()
    for syntax in (ToolFormat.json(), ToolFormat.xml(), ToolFormat.ptype()):
        text = render_tools(tools, syntax)
        assert "get_weather" in text and "searchFlights" not in text and "book_hotel" not in text


def test_deferral_survives_the_toolbox_algebra() -> None:
    tools = box()
    assert tools.prefixed("travel_").deferred == [
        "travel_searchFlights",
        "travel_book_hotel",
        "travel_convert_currency",
    ]
    assert tools.filtered(lambda t: t.name != "searchFlights").deferred == ["book_hotel", "convert_currency"]
    assert Toolbox.merge(tools, Toolbox([tool(lambda: 1, name="one", description="One.")])).deferred == tools.deferred
    assert tools.select(["book_hotel", "get_weather"]).deferred == ["book_hotel"]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("what is the weather like", "get_weather"),
        ("search flights", "searchFlights"),
        ("flight from an airport", "searchFlights"),  # a word of a parameter's description
        ("reserving rooms", "book_hotel"),  # verb and plural forms meet
        ("check-in", "book_hotel"),
        ("ISO code", "convert_currency"),
    ],
)
def test_search_ranks_by_name_description_and_parameters(query: str, found: str) -> None:
    assert box().search(query, k=1)[0].name == found


def test_search_keeps_k_and_follows_changes_to_the_toolbox() -> None:
    tools = box()
    assert len(tools.search("city", k=5)) == 2 and tools.search("zzz") == []
    assert [t.name for t in tools.search("city", deferred_only=True)] == ["book_hotel"]

    @tool
    def translate(text: str) -> str:
        """Translate text into French."""
        return text

    assert tools.search("french") == []
    tools.add(translate)
    assert [t.name for t in tools.search("french")] == ["translate"]


def test_the_search_tool_reveals_what_it_finds_for_the_rest_of_the_run() -> None:
    tools = box()
    searcher = tools.search_tool(k=2)
    assert searcher.name == "search_tools" and tools.search_tool() is searcher
    assert [entry["name"] for entry in tools.schemas()] == ["get_weather", "search_tools"]
    dispatcher = Dispatcher(tools)
    refused = dispatcher.dispatch(ToolCall("a", "book_hotel", {"city": "Rome", "nights": 2}))
    assert refused.error is not None and refused.error.code == "tool_not_allowed"
    assert "search for it first with search_tools" in refused.error.message
    found = dispatcher.dispatch(ToolCall("s", "search_tools", {"query": "reserve a room"}))
    assert [entry["name"] for entry in found.output] == ["book_hotel"]
    assert found.output[0]["input_schema"] == book_hotel.input_schema
    assert dispatcher.revealed == ("book_hotel",)
    assert dispatcher.dispatch(ToolCall("b", "book_hotel", {"city": "Rome", "nights": 2})).output == "2 nights in Rome"
    assert [t.name for t in dispatcher.visible_tools()] == ["get_weather", "search_tools", "book_hotel"]
    later = Dispatcher(tools)  # another run: nothing revealed
    assert later.dispatch(ToolCall("c", "book_hotel", {"city": "Rome", "nights": 2})).is_error


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_never_revealed_deferred_tool_is_refused_on_every_entry_point(entry: str) -> None:
    call = ToolCall("x", "searchFlights", {"origin": "OSL", "destination": "CDG"})
    result = run_call(entry, [get_weather, searchFlights], call)
    assert result.error is not None and result.error.code == "tool_not_allowed" and result.call_id == "x"
    if entry.startswith("Dispatcher"):
        revealed = run_call(entry, [get_weather, searchFlights], call, revealed=["searchFlights"])
        assert revealed.output == ["OSL-CDG"]


def test_a_rewrite_or_a_middleware_cannot_reach_a_deferred_tool_unrevealed() -> None:
    rewrite = Dispatcher([get_weather, searchFlights], unknown_tool=Rewrite("searchFlights"))
    assert rewrite.dispatch(ToolCall("r", "fly", {"origin": "A", "destination": "B"})).error.code == "tool_not_allowed"

    class Redirect:
        def before_tool(self, call: ToolCall, tool: Any) -> ToolCall:
            return ToolCall(call.id, "searchFlights", {"origin": "A", "destination": "B"})

    moved = Dispatcher([get_weather, searchFlights], middleware=[Redirect()])
    result = moved.dispatch(ToolCall("m", "get_weather", {"city": "Oslo"}))
    assert result.error is not None and result.error.code == "tool_not_allowed"


def test_a_text_format_call_to_a_deferred_tool_is_refused() -> None:
    tools = Toolbox([get_weather, searchFlights])
    calls = parse_calls('<tool_call>{"name": "searchFlights", "arguments": {"origin": "A", "destination": "B"}}'
                        "</tool_call>", tools)  # fmt: skip
    (result,) = Dispatcher(tools).dispatch_many(calls)
    assert result.error is not None and result.error.code == "tool_not_allowed"


def test_unknown_tool_messages_name_no_unrevealed_tool() -> None:
    result = Dispatcher([get_weather, searchFlights]).dispatch(ToolCall("u", "searchFlight", {}))
    assert result.error is not None and "searchFlights" not in result.error.message
    with pytest.raises(ToolNotFound):
        Dispatcher([get_weather]).reveal(["nope"])


def test_reveals_only_grow_and_keep_their_order() -> None:
    dispatcher = Dispatcher(box(), revealed=["convert_currency"])
    dispatcher.reveal(["searchFlights", "convert_currency"])
    dispatcher.reveal(["book_hotel"])
    assert dispatcher.revealed == ("convert_currency", "searchFlights", "book_hotel")
    exported = openai.export_tools(dispatcher.toolbox, revealed=dispatcher.revealed)
    names = [entry["function"]["name"] for entry in exported]
    assert names == ["get_weather", "convert_currency", "searchFlights", "book_hotel"]


# --- provider-native search: shapes checked against the SDKs' own types ------------------


def _valid(kind: Any, value: Any) -> None:
    pydantic.TypeAdapter(kind).validate_python(value)


@pytest.mark.parametrize("execution", ["hosted", "client"])
def test_openai_responses_declares_deferred_tools_and_its_tool_search(execution: str) -> None:
    declared = openai_responses.export_tools(box(), tool_search=execution)  # type: ignore[arg-type]
    assert [entry.get("name") for entry in declared] == [
        "get_weather", "searchFlights", "book_hotel", "convert_currency", None
    ]  # fmt: skip
    assert [entry.get("defer_loading", False) for entry in declared[:4]] == [False, True, True, True]
    for entry in declared[:4]:
        _valid(FunctionToolParam, entry)
    _valid(ToolSearchToolParam, declared[-1])
    assert declared[-1]["type"] == "tool_search" and (execution == "client") == ("execution" in declared[-1])


def test_openai_responses_search_results_become_reveals() -> None:
    function = openai_responses.export_tools([get_weather])[0]
    output = ResponseToolSearchOutputItem.model_validate(
        {"id": "tso_1", "type": "tool_search_output", "execution": "server", "status": "completed",
         "tools": [{**function, "name": "searchFlights"}]}
    )  # fmt: skip
    call = ResponseToolSearchCall.model_validate(
        {"id": "tsc_1", "type": "tool_search_call", "execution": "client", "call_id": "call_1",
         "status": "completed", "arguments": {"query": "flights"}}
    )  # fmt: skip
    assert openai_responses.read_revealed([output.model_dump()]) == ["searchFlights"]
    assert openai_responses.read_revealed({"output": [output]}) == ["searchFlights"]
    assert openai_responses.read_searches([call]) == [("call_1", "flights")]
    answer = openai_responses.write_search("call_1", box().search("flights", k=1))
    _valid(ResponseToolSearchOutputItemParamParam, answer)
    dispatcher = Dispatcher(box())
    dispatcher.reveal(openai_responses.read_revealed([output]))
    assert dispatcher.dispatch(ToolCall("f", "searchFlights", {"origin": "A", "destination": "B"})).output == ["A-B"]


@pytest.mark.parametrize(
    ("kind", "shape"), [("bm25", ToolSearchToolBm25_20251119Param), ("regex", ToolSearchToolRegex20251119Param)]
)
def test_anthropic_declares_deferred_tools_and_its_tool_search(kind: str, shape: Any) -> None:
    declared = anthropic.export_tools(box(), tool_search=kind, cache_control={"type": "ephemeral"})  # type: ignore[arg-type]
    assert [entry.get("defer_loading", False) for entry in declared[:4]] == [False, True, True, True]
    for entry in declared[:4]:
        _valid(ToolParam, entry)
    _valid(shape, declared[-1])
    assert declared[-1]["cache_control"] == {"type": "ephemeral"}


def test_anthropic_search_results_become_reveals_and_client_search_answers_with_references() -> None:
    block = ToolSearchToolResultBlock.model_validate(
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": {"type": "tool_search_tool_search_result",
                     "tool_references": [{"type": "tool_reference", "tool_name": "book_hotel"}]}}
    )  # fmt: skip
    assert anthropic.read_revealed({"content": [block]}) == ["book_hotel"]
    assert anthropic.read_revealed([block.model_dump()]) == ["book_hotel"]
    answer = anthropic.write_search("toolu_1", box().search("room", k=1))
    _valid(ToolResultBlockParam, answer)
    assert answer["content"] == [{"type": "tool_reference", "tool_name": "book_hotel"}]


VOCABULARY = ["flight", "hotel", "city", "book", "cancel", "invoice", "send", "email", "weather", "room", "the", "a"]


@settings(max_examples=150, deadline=None)
@given(
    documents=st.lists(
        st.tuples(
            st.lists(st.sampled_from(VOCABULARY), max_size=4), st.lists(st.sampled_from(VOCABULARY), max_size=12)
        ),
        min_size=1,
        max_size=40,
    ),
    query=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5),
    k=st.integers(1, 6),
)
def test_the_pruned_search_ranks_exactly_as_adding_up_every_term(
    documents: list[tuple[list[str], list[str]]], query: list[str], k: int
) -> None:
    index = ToolIndex(Document("_".join(name), " ".join(text), [], []) for name, text in documents)
    everyone = frozenset(range(len(documents)))  # limiting the search to all of them turns pruning off
    assert index.search(" ".join(query), k) == index.search(" ".join(query), k, among=everyone)


# --- what an adversarial review found ---------------------------------------------------


@tool(defer=True)
def delete_account(user: str) -> str:
    """Delete a user account for good."""
    return f"deleted {user}"


def _catalog() -> Toolbox:
    catalog = Toolbox([get_weather, searchFlights, delete_account], aliases={"bh": "searchFlights"})
    catalog.search_tool()
    return catalog


def test_a_derived_toolbox_searches_its_own_tools() -> None:
    kept = _catalog().filtered(lambda t: t.name != "delete_account")
    found = Dispatcher(kept).dispatch(ToolCall("s", "search_tools", {"query": "delete a user account"}))
    assert [entry["name"] for entry in found.output] == []
    prefixed = _catalog().prefixed("p_")
    run = Dispatcher(prefixed)
    refused = run.dispatch(ToolCall("a", "p_searchFlights", {"origin": "A", "destination": "B"}))
    assert refused.error is not None and "search for it first with p_search_tools" in refused.error.message
    found = run.dispatch(ToolCall("s", "p_search_tools", {"query": "flights between airports"}))
    assert [entry["name"] for entry in found.output] == ["p_searchFlights"]
    assert run.dispatch(ToolCall("b", "p_searchFlights", {"origin": "A", "destination": "B"})).output == ["A-B"]


def test_search_finds_no_tool_a_policy_denies_or_the_turn_does_not_allow() -> None:
    from tinytools.policy import PolicyMiddleware, Rule

    deny = PolicyMiddleware(
        [Rule("no_deletes", lambda declared, _: "no" if declared.name == "delete_account" else None)]
    )
    run = Dispatcher(_catalog(), middleware=[deny])
    found = run.dispatch(ToolCall("s", "search_tools", {"query": "delete a user account"}))
    assert "delete_account" not in [entry["name"] for entry in found.output] and run.revealed == ()
    turn = Dispatcher(_catalog())
    (only,) = turn.dispatch_many(
        [ToolCall("s", "search_tools", {"query": "delete account flights"})], allowed=["search_tools", "searchFlights"]
    )
    assert [entry["name"] for entry in only.output] == ["searchFlights"]


def test_the_module_level_dispatch_keeps_no_reveal() -> None:
    from tinytools import dispatch

    catalog = _catalog()
    dispatch(ToolCall("s", "search_tools", {"query": "flights"}), catalog)
    later = dispatch(ToolCall("f", "searchFlights", {"origin": "A", "destination": "B"}), catalog)
    assert later.error is not None and later.error.code == "tool_not_allowed"


def test_a_journaled_run_replayed_elsewhere_keeps_its_reveals(tmp_path: Any) -> None:
    from tinytools import RunContext, SQLiteJournal

    calls = [
        ToolCall("s", "search_tools", {"query": "flights between airports"}),
        ToolCall("f", "searchFlights", {"origin": "A", "destination": "B"}),
    ]
    first = Dispatcher(_catalog(), journal=SQLiteJournal(tmp_path / "j.db"), context=RunContext(run_id="r"))
    done = [first.dispatch(call) for call in calls]
    again = Dispatcher(_catalog(), journal=SQLiteJournal(tmp_path / "j.db"), context=RunContext(run_id="r"))
    assert [again.dispatch(call) for call in calls] == done and again.revealed == ("searchFlights",)


def test_search_edges_give_clear_answers() -> None:
    catalog = _catalog()
    assert catalog.search("flights", k=0) == [] and catalog.search("flights", k=-3) == []
    with pytest.raises(ValueError, match="at least 1"):
        Toolbox([get_weather]).search_tool(k=0)

    @tool(defer=True)
    def reserve(city: str) -> str:
        """ホテルを予約する。Réserver une chambre."""
        return city

    local = Toolbox([reserve])
    assert local.search("ホテルを予約する")[0].name == "reserve"  # a word of another script is one word
    assert local.search("Réserver")[0].name == "reserve"
    before = len(search_words_cache())
    catalog.search(" ".join(f"junk{n}word" for n in range(2000)))
    assert len(search_words_cache()) == before  # a query's words are not remembered


def search_words_cache() -> dict[str, str]:
    from tinytools import _search as search

    return search._FOLDED


def test_an_alias_and_its_tool_are_revealed_once_in_exports() -> None:
    catalog = _catalog()
    names = [entry["name"] for entry in catalog.schemas(["bh", "searchFlights", 7])]  # type: ignore[list-item]
    assert names == ["get_weather", "search_tools", "searchFlights"]


def test_provider_readers_skip_what_is_not_a_name() -> None:
    odd = [{"type": "tool_search_output", "tools": [{"name": 5}, {"name": ["a"]}, {"name": "ok"}]}]
    assert openai_responses.read_revealed(odd) == ["ok"]
    text = [{"type": "tool_search_call", "execution": "client", "call_id": "c", "arguments": '{"query": "q"}'}]
    assert openai_responses.read_searches(text) == [("c", "q")]
    block = {
        "type": "tool_search_tool_result",
        "content": {"tool_references": [{"type": "tool_reference", "tool_name": 1}]},
    }
    assert anthropic.read_revealed([block]) == []


def test_a_stateless_http_app_refuses_deferred_tools() -> None:
    from tinytools.providers.mcp import http_app

    with pytest.raises(ValueError, match="stateless"):
        http_app(_catalog())
    assert http_app(_catalog(), stateless=False) is not None
