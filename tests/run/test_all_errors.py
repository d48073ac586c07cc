"""Every invalid argument at once, on every entry point: one message the model reads, and details.

The listing is made where arguments are validated, the one validation stage of the pipeline, so
each entry point (module `dispatch`/`adispatch`, a `Dispatcher` sync, async and batched, strict,
with middleware or an event sink), the text formats and the MCP server carry the same text.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Annotated, Any, Literal

import anyio
import msgspec
import pytest
from mcp import Client

from tests.run.paths import PATHS, options, run_call
from tinytools import (
    ArgumentsError,
    Dispatcher,
    Injected,
    InvalidToolArgs,
    Param,
    Toolbox,
    ToolCall,
    ToolEvent,
    dispatch,
    tool,
)
from tinytools._errors import MAX_LISTED
from tinytools.formats import ToolFormat, parse_calls, render_call
from tinytools.providers import mcp


@tool
def weather(
    city: str,
    unit: Literal["c", "f"] = "c",
    days: Annotated[int, Param(ge=1, le=7)] = 1,
    tags: list[str] | None = None,
) -> str:
    """Look up the weather.

    Args:
        city: City name.
        unit: Temperature unit.
        days: Days ahead.
        tags: Labels.
    """
    return city


BAD = {"unit": "k", "days": 30, "tags": [1], "zz": 1}
"""Four bad arguments and one missing: ``city``."""
NAMED = ["city", "unit", "days", "tags", "zz"]


def names(details: dict[str, Any]) -> list[str]:
    return [entry["parameter"] for entry in details["errors"]]


@pytest.mark.parametrize(("entry", "variant"), PATHS)
@pytest.mark.parametrize("as_text", [True, False], ids=["text", "dict"])
def test_every_entry_point_lists_every_bad_argument(entry: str, variant: str, as_text: bool) -> None:
    arguments: Any = '{"unit": "k", "days": 30, "tags": [1], "zz": 1}' if as_text else dict(BAD)
    result = run_call(entry, [weather], ToolCall("c1", "weather", arguments), **options(variant))
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "invalid_arguments"
    details = result.error.details
    assert details is not None and names(details) == NAMED and details["unlisted"] == 0
    assert (details["pointer"], details["keyword"], details["parameter"]) == ("", "required", "city")
    assert [entry["pointer"] for entry in details["errors"]] == ["", "/unit", "/days", "/tags/0", "/zz"]
    message = result.error.message
    assert message.splitlines()[0] == "Invalid arguments: tool 'weather', 5 problems:"
    for name in NAMED:
        assert f"- argument {name!r} at " in message
    assert 'expected one of "c", "f"' in message and "expected at most 7; got 30" in message  # strict adds null
    assert 'Schema of \'days\': {"type":"integer","minimum":1,"maximum":7' in message


def test_strict_mode_lists_against_the_strict_rendering() -> None:
    result = Dispatcher([weather], strict=True).dispatch(ToolCall("c1", "weather", {"unit": "k", "days": 30}))
    assert result.error is not None and result.error.details is not None
    assert names(result.error.details) == ["city", "tags", "unit", "days"]  # strict: every property required
    assert 'expected one of "c", "f", null; got "k"' in result.error.message


def test_one_bad_argument_keeps_the_single_message() -> None:
    result = dispatch(ToolCall("c1", "weather", {"city": "Oslo", "days": 30}), [weather])
    assert result.error is not None and result.error.details == {
        "pointer": "/days",
        "keyword": "maximum",
        "parameter": "days",
    }
    assert result.error.message.startswith("Invalid arguments: tool 'weather', argument 'days' at /days: expected")


def test_the_message_is_bounded() -> None:
    arguments = {"city": "Oslo", **{f"{'k' * 300}{index}": index for index in range(500)}}
    result = dispatch(ToolCall("c1", "weather", arguments), [weather])
    assert result.error is not None and result.error.details is not None
    assert len(result.error.details["errors"]) == MAX_LISTED and result.error.details["unlisted"] == 500 - MAX_LISTED
    assert result.error.message.endswith(f"- and {500 - MAX_LISTED} more, not listed.")
    assert len(result.error.message) < MAX_LISTED * 1_000
    assert "k" * 201 not in result.error.message  # made-up names are cut to the echo limit


def test_fail_policy_raises_one_error_listing_them_all() -> None:
    with pytest.raises(ArgumentsError) as caught:
        Dispatcher([weather], invalid_args="fail").dispatch(ToolCall("c1", "weather", dict(BAD)))
    assert [each.parameter for each in caught.value.errors] == NAMED
    assert str(caught.value).startswith("tool 'weather': argument 'city' at /: missing required argument 'city'; ")


def test_the_event_carries_the_listing_error() -> None:
    events: list[ToolEvent] = []
    Dispatcher([weather], on_event=events.append).dispatch(ToolCall("c1", "weather", dict(BAD)))
    (invalid,) = [event for event in events if isinstance(event, InvalidToolArgs)]
    assert [each.parameter for each in invalid.error.errors] == NAMED


@pytest.mark.parametrize("syntax", ["json", "xml", "ptype"])
def test_text_calls_list_every_bad_argument(syntax: str) -> None:
    text_format = ToolFormat(syntax)  # type: ignore[arg-type]
    text = render_call(ToolCall("c1", "weather", dict(BAD)), weather, format=text_format)
    (call,) = parse_calls(f"Let me look.\n{text}\n", [weather], format=text_format)
    result = dispatch(call, [weather])
    assert result.error is not None and result.error.details is not None
    assert names(result.error.details) == NAMED


async def _over_mcp() -> Any:
    async with Client(mcp.build_server(Toolbox([weather])), mode="legacy") as client:
        return await client.call_tool("weather", dict(BAD))


def test_the_mcp_server_sends_the_listing_message() -> None:
    result = anyio.run(_over_mcp)
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("Error: Invalid arguments: tool 'weather', 5 problems:\n")
    assert all(f"- argument {name!r} at " in text for name in NAMED)


SECRET = "sk-live-0123456789abcdef"


@tool
def keyed(a: int, b: int, *, key: Annotated[str, Injected("api_key", secret=True)]) -> int:
    """Add, with a key."""
    return a + b


def test_a_secret_echoed_in_several_entries_is_redacted_in_each() -> None:
    call = ToolCall("c1", "keyed", {"a": SECRET, "b": SECRET, SECRET: 1})
    result = dispatch(call, [keyed], inject={"api_key": SECRET})
    assert result.error is not None and result.error.details is not None
    assert len(result.error.details["errors"]) == 3
    text = msgspec.json.encode(result.error).decode()
    assert SECRET[:8] not in text and SECRET[-8:] not in text


@dataclasses.dataclass
class Address:
    city: str
    zip: Annotated[str, Param(pattern="^[0-9]{5}$")]
    floor: int


@tool
def ship(to: Address, via: Address | None = None, weight: float = 1.0) -> str:
    """Ship a parcel."""
    return to.city


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_every_entry_point_lists_the_problems_inside_a_model_each_with_its_own_schema(entry: str, variant: str) -> None:
    call = ToolCall("c1", "ship", {"to": {"city": 1, "floor": "x", "x": 1}, "via": None, "weight": "heavy"})
    result = run_call(entry, [ship], call, **options(variant))
    assert result.error is not None and result.error.details is not None
    assert [(e["pointer"], e["keyword"]) for e in result.error.details["errors"]] == [
        ("/to", "required"),
        ("/to/city", "type"),
        ("/to/floor", "type"),
        ("/to/x", "additionalProperties"),
        ("/weight", "type"),
    ]
    lines = result.error.message.splitlines()
    assert lines[0] == "Invalid arguments: tool 'ship', 5 problems:"
    assert lines[1].startswith("- argument 'to' at /to: missing required property 'zip'. Schema: {\"type\":\"string\"")
    assert lines[2] == '- argument \'to\' at /to/city: expected string; got 1. Schema: {"type":"string"}'
    assert lines[4] == "- argument 'to' at /to/x: unexpected property 'x' (allowed: city, zip, floor)."
    assert lines[5].startswith("- argument 'weight' at /weight: expected number")  # strict mode: "or null"
    assert "Schema of 'weight': " in lines[5]
    assert '"properties"' not in result.error.message  # no line quotes the whole model


def test_one_problem_inside_an_optional_model_quotes_the_failing_value_s_schema() -> None:
    arguments = {"to": {"city": "Oslo", "zip": "01500", "floor": 1}, "via": {"city": "Rome", "zip": "1", "floor": 2}}
    result = dispatch(ToolCall("c1", "ship", arguments), [ship])
    assert result.error is not None and result.error.details == {
        "pointer": "/via/zip",
        "keyword": "pattern",
        "parameter": "via",
    }
    assert result.error.message == (
        "Invalid arguments: tool 'ship', argument 'via' at /via/zip: expected a string matching "
        '"^[0-9]{5}$"; got "1". Schema: {"type":"string","pattern":"^[0-9]{5}$"}'
    )


@tool
def book(room: uuid.UUID, day: datetime.date, seats: int = 1) -> str:
    """Book a room for a day.

    Args:
        room: The room's id.
        day: The day.
        seats: How many seats.
    """
    return f"{room} {day} {seats}"


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_every_entry_point_lists_every_value_that_cannot_become_its_type(entry: str, variant: str) -> None:
    # values the schema passes but that are no UUID or no date: each is a line, as a schema failure is
    call = ToolCall("c1", "book", {"room": "not-a-uuid", "day": "2024-13-45", "seats": 2})
    result = run_call(entry, [book], call, **options(variant))
    assert result.error is not None and result.error.code == "invalid_arguments"
    assert result.error.details is not None and names(result.error.details) == ["room", "day"]
    lines = result.error.message.splitlines()
    assert lines[0] == "Invalid arguments: tool 'book', 2 problems:"
    assert lines[1].startswith("- argument 'room' at /room: expected a UUID string; got \"not-a-uuid\".")
    assert lines[2].startswith("- argument 'day' at /day: expected an ISO 8601 date string")


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_a_value_that_cannot_become_its_type_is_listed_beside_the_schemas_failures(entry: str, variant: str) -> None:
    call = ToolCall("c1", "book", {"room": "not-a-uuid", "day": "2024-01-02", "seats": "two", "colour": "red"})
    result = run_call(entry, [book], call, **options(variant))
    assert result.error is not None and result.error.details is not None
    # in strict mode a null may stand for an argument left out until the reading restores it, so the
    # converters wait for a reading the schema passed
    expected = ["seats", "colour"] if variant == "strict" else ["seats", "colour", "room"]
    assert names(result.error.details) == expected
    assert result.error.message.splitlines()[0] == f"Invalid arguments: tool 'book', {len(expected)} problems:"


def test_values_that_cannot_become_their_type_past_the_listing_are_counted() -> None:
    namespace: dict[str, Any] = {"uuid": uuid}
    parameters = ", ".join(f"p{n}: uuid.UUID" for n in range(MAX_LISTED + 3))
    exec(f"def many({parameters}) -> int:\n    '''Take many ids.'''\n    return 0", namespace)
    many = tool(namespace["many"])
    sent = {f"p{n}": f"bad-{n}" for n in range(MAX_LISTED + 3)}
    for _ in range(2):  # the first call, then the express path
        result = dispatch(ToolCall("c1", "many", sent), [many])
        assert result.error is not None and result.error.details is not None
        assert names(result.error.details) == [f"p{n}" for n in range(MAX_LISTED)]
        assert result.error.details["unlisted"] == 3
        assert result.error.message.splitlines()[-1] == "- and 3 more, not listed."


def test_past_the_listing_no_argument_the_schema_refused_is_converted_as_well() -> None:
    namespace: dict[str, Any] = {"uuid": uuid}
    parameters = ", ".join(f"p{n}: uuid.UUID" for n in range(MAX_LISTED + 3))
    exec(f"def ids({parameters}) -> int:\n    '''Take many ids.'''\n    return 0", namespace)
    ids = tool(namespace["ids"])
    sent = {f"p{n}": n for n in range(MAX_LISTED + 3)}  # numbers, not strings: every one fails the schema
    result = dispatch(ToolCall("c1", "ids", sent), [ids])
    assert result.error is not None and result.error.details is not None
    assert len(result.error.details["errors"]) + result.error.details["unlisted"] == MAX_LISTED + 3
