"""A tour of tinytools: define tools, show their schemas, dispatch good and bad calls.

Run it with:  python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Annotated, Literal

from tinytools import Injected, Param, Toolbox, ToolCall, ToolError, adispatch, dispatch, tool


class WeatherService:
    """Stands in for a real client the application owns; the model never sees it."""

    def current(self, city: str) -> float:
        if city.lower() == "atlantis":
            raise ToolError(f"no weather station in {city}", code="unknown_city")
        return 10.0 + len(city) % 7


@tool
def get_weather(
    city: str,
    unit: Literal["c", "f"] = "c",
    *,
    service: Annotated[WeatherService, Injected],
) -> dict:
    """Look up the current temperature in a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    celsius = service.current(city)
    return {
        "city": city,
        "temperature": celsius if unit == "c" else celsius * 9 / 5 + 32,
        "unit": unit,
    }


@dataclasses.dataclass
class Booking:
    """A table reservation."""

    restaurant: str
    guests: int
    notes: list[str] = dataclasses.field(default_factory=list)


@tool
def book_table(
    booking: Booking,
    confirm: Annotated[bool, "Set to true once the user agreed."] = False,
) -> str:
    """Reserve a table at a restaurant."""
    state = "confirmed" if confirm else "held"
    return f"{booking.guests} guests at {booking.restaurant}: {state}"


@tool
async def search_docs(
    query: Annotated[str, Param(min_length=2, description="Words to look for.")],
    limit: Annotated[int, Param(ge=1, le=20)] = 5,
) -> list[str]:
    """Search the documentation."""
    await asyncio.sleep(0)
    return [f"{query} result {n}" for n in range(1, limit + 1)]


tools = Toolbox([get_weather, book_table, search_docs])


def show(title: str, call: ToolCall) -> None:
    result = dispatch(call, tools, inject={"service": WeatherService()})
    print(f"\n# {title}")
    print(f"call:   {call.name}({call.arguments})")
    print(f"status: {result.status}")
    if result.error is None:
        print(f"output: {json.dumps(result.output)}")
    else:
        print(f"error:  [{result.error.code}] {result.error.message}")


def main() -> None:
    print("# What the model sees (the injected `service` is not there)")
    print(json.dumps(tools.schemas(), indent=2))

    show("A valid call", ToolCall("call_1", "get_weather", '{"city": "Paris", "unit": "f"}'))
    show(
        "Nested types are converted",
        ToolCall(
            "call_2",
            "book_table",
            '{"booking": {"restaurant": "Chez Nous", "guests": 4}, "confirm": true}',
        ),
    )
    show(
        "An async tool, from sync code",
        ToolCall("call_3", "search_docs", '{"query": "tools", "limit": 2}'),
    )
    show(
        "Invalid arguments",
        ToolCall("call_4", "get_weather", '{"city": "Paris", "unit": "kelvin"}'),
    )
    show(
        "A constraint broken deep inside",
        ToolCall("call_5", "book_table", '{"booking": {"restaurant": "Chez Nous", "guests": "four"}}'),
    )
    show("Malformed JSON", ToolCall("call_6", "get_weather", '{"city": "Paris"'))
    show("An unknown tool", ToolCall("call_7", "get_wether", '{"city": "Paris"}'))
    show(
        "A model that tries to set an injected value",
        ToolCall("call_8", "get_weather", '{"city": "Paris", "service": "mine"}'),
    )
    show(
        "A tool that reports an error on purpose",
        ToolCall("call_9", "get_weather", '{"city": "Atlantis"}'),
    )

    async def from_async_code() -> None:
        result = await adispatch(ToolCall("call_10", "search_docs", {"query": "async"}), tools)
        print(f"\n# From async code\nstatus: {result.status}, output: {result.output}")

    asyncio.run(from_async_code())


if __name__ == "__main__":
    main()
