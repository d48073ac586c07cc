"""A complete agent loop with the real `anthropic` client, against a scripted local model.

The example starts a Messages-API HTTP server on 127.0.0.1 (an ephemeral port) that plays a
model: it calls one tool, reads the result, calls two tools in parallel, then answers from what
the tools returned. The loop in `run_agent` is the part to copy: it works unchanged against
api.anthropic.com.

Run it with:  python examples/anthropic_agent_loop.py
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import anthropic

from tinytools import Dispatcher, Toolbox, tool
from tinytools.providers import anthropic as adapter

TEMPERATURES = {"Paris": 18.0, "Tokyo": 24.0}
LOCAL_TIMES = {"Paris": "09:00", "Tokyo": "16:00"}


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Look up the current temperature in a city.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    celsius = TEMPERATURES.get(city, 20.0)
    return {
        "city": city,
        "temperature": celsius if unit == "c" else round(celsius * 9 / 5 + 32, 1),
        "unit": unit,
    }


@tool
def local_time(city: str) -> str:
    """The local time in a city, as HH:MM.

    Args:
        city: City name.
    """
    return LOCAL_TIMES.get(city, "12:00")


toolbox = Toolbox([get_weather, local_time])


def run_agent(client: anthropic.Anthropic, question: str, *, model: str = "scripted", max_turns: int = 8) -> str:
    """Ask, run the tool calls the model makes, send back the results, until it answers."""
    messages: list[Any] = [{"role": "user", "content": question}]
    tools = adapter.export_tools(toolbox)
    dispatcher = Dispatcher(toolbox)  # one per run: its budget and deadline cover this run
    for _ in range(max_turns):
        message = client.messages.create(model=model, max_tokens=1024, messages=messages, tools=tools)
        messages.append({"role": "assistant", "content": message.content})
        calls = adapter.read_calls(message)
        if not calls:
            return "".join(block.text for block in message.content if block.type == "text")
        results = dispatcher.dispatch_many(calls)  # parallel-safe calls run concurrently
        for call, result in zip(calls, results, strict=True):
            print(f"  {call.name}({call.arguments}) -> {result.status}: {result.text()}")
        messages.append({"role": "user", "content": adapter.write_results(results)})
    raise RuntimeError(f"no answer after {max_turns} turns")


# The scripted model: a Messages API server on localhost.


class ScriptError(Exception):
    """The client sent something a real server would refuse."""


def scripted_reply(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The next assistant content, from the conversation so far (the server keeps no state)."""
    names = {entry["name"] for entry in request.get("tools", []) if entry["input_schema"]["type"] == "object"}
    if names != {"get_weather", "local_time"}:
        raise ScriptError(f"expected the two tools, got {sorted(names)}")
    messages = request["messages"]
    outputs: dict[str, Any] = {}
    for previous, message in itertools.pairwise(messages):
        if previous["role"] == "assistant":
            asked = [block["id"] for block in previous["content"] if block["type"] == "tool_use"]
            results = [block for block in message["content"] if block["type"] == "tool_result"]
            if [block["tool_use_id"] for block in results] != asked:
                raise ScriptError(f"tool results do not answer the tool_use blocks {asked}")
            if any(block["is_error"] for block in results):
                raise ScriptError("a tool failed")
            outputs.update((block["tool_use_id"], _decoded(block["content"])) for block in results)
    if not outputs:
        return [_use("toolu_1", "get_weather", {"city": "Paris"})]
    if len(outputs) == 1:
        return [
            {"type": "text", "text": "Now Tokyo, both at once."},
            _use("toolu_2", "get_weather", {"city": "Tokyo", "unit": "f"}),
            _use("toolu_3", "local_time", {"city": "Tokyo"}),
        ]
    paris, tokyo, time = outputs["toolu_1"], outputs["toolu_2"], outputs["toolu_3"]
    text = (
        f"It is {paris['temperature']} °C in Paris. In Tokyo it is {tokyo['temperature']} °F, "
        f"and the local time there is {time}."
    )
    return [{"type": "text", "text": text}]


def _decoded(content: str) -> Any:
    """A tool result's content: JSON for structured output, plain text for a string."""
    try:
        return json.loads(content)
    except ValueError:
        return content


def _use(id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path != "/v1/messages":
            return self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
        try:
            content = scripted_reply(body)
        except (ScriptError, KeyError, ValueError, TypeError) as exc:
            error = {"type": "invalid_request_error", "message": str(exc)}
            return self._send(400, {"type": "error", "error": error})
        uses_tools = any(block["type"] == "tool_use" for block in content)
        message = {
            "id": "msg_local",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if uses_tools else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        self._send(200, message)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the example's output to the conversation


@contextmanager
def scripted_server() -> Iterator[str]:
    """Serve the scripted model on 127.0.0.1 (an ephemeral port); yield its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main() -> str:
    with scripted_server() as base_url:
        client = anthropic.Anthropic(base_url=base_url, api_key="not-needed-locally", max_retries=0, timeout=10)
        question = "What's the weather in Paris, and in Tokyo (in °F) with its local time?"
        print(f"user: {question}")
        answer = run_agent(client, question)
        client.close()
    print(f"assistant: {answer}")
    return answer


if __name__ == "__main__":
    main()
