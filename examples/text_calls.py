"""Tools called through text: declare them in a prompt, read calls from a reply, answer in kind.

For models without native function calling. Each tool picks the syntax it is shown in; every
call read from the reply is a plain `ToolCall`, validated like any other when dispatched.

Run it with:  python examples/text_calls.py
"""

from __future__ import annotations

from typing import Literal

from tinytools import Toolbox, ToolFormat, dispatch, tool
from tinytools.formats import parse_calls, render_result, render_tools


@tool(format=ToolFormat.ptype(["query", "limit"]))
def search(query: str, limit: int = 3) -> list[str]:
    """Search the documentation.

    Args:
        query: What to look for.
        limit: How many results at most.
    """
    return [f"{query} — result {n}" for n in range(1, limit + 1)]


@tool(format=ToolFormat.xml())
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, object]:
    """Look up the current temperature in a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 21 if unit == "c" else 70, "unit": unit}


tools = Toolbox([search, get_weather])

# A reply as a small local model might write it: prose, a fenced call, and one broken call.
REPLY = """Let me check two things.
search("text tool calls", 2)
```xml
<get_weather>
  <city>Lyon &amp; Villeurbanne</city>
  <unit>f</unit>
</get_weather>
```
And the forecast: <get_weather><city>Paris</city>
"""


def main() -> None:
    print("=== the prompt the model sees ===")
    print(render_tools(tools))
    print("\n=== calls read from the reply, and the text that answers them ===")
    for call in parse_calls(REPLY, tools):
        result = dispatch(call, tools)
        print(f"{call.name} {call.id}: {'invalid: ' + call.invalid if call.invalid else call.arguments}")
        called = tools.get(call.name)
        print(render_result(result, called.format if called else ToolFormat.json()), end="\n\n")


if __name__ == "__main__":
    main()
