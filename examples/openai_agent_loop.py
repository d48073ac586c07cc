"""A complete agent loop with the real `openai` client, against a scripted local model.

The example starts an OpenAI-compatible HTTP server on 127.0.0.1 (an ephemeral port) that plays
a model: it calls one tool, reads the result, calls two tools in parallel, then answers from
what the tools returned. The loop in `run_agent` is the part to copy: it works unchanged against
api.openai.com or any OpenAI-compatible server (Ollama, vLLM, llama.cpp).

Run it with:  python examples/openai_agent_loop.py
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import openai

from tinytools import Dispatcher, Toolbox, tool
from tinytools.providers import openai as adapter

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


def run_agent(client: openai.OpenAI, question: str, *, model: str = "scripted", max_turns: int = 8) -> str:
    """Ask, run the tool calls the model makes, send back the results, until it answers."""
    messages: list[Any] = [{"role": "user", "content": question}]
    tools = adapter.export_tools(toolbox)
    dispatcher = Dispatcher(toolbox)  # one per run: its budget and deadline cover this run
    for _ in range(max_turns):
        response = client.chat.completions.create(model=model, messages=messages, tools=tools)
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        calls = adapter.read_calls(response)
        if not calls:
            return message.content or ""
        results = dispatcher.dispatch_many(calls)  # parallel-safe calls run concurrently
        for call, result in zip(calls, results, strict=True):
            print(f"  {call.name}({call.arguments}) -> {result.status}: {result.text()}")
        messages += adapter.write_results(results)
    raise RuntimeError(f"no answer after {max_turns} turns")


# The scripted model: an OpenAI-compatible server on localhost.


class ScriptError(Exception):
    """The client sent something a real server would refuse."""


def scripted_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The next assistant message, from the conversation so far (the server keeps no state)."""
    names = {entry["function"]["name"] for entry in request.get("tools", []) if entry.get("type") == "function"}
    if names != {"get_weather", "local_time"}:
        raise ScriptError(f"expected the two function tools, got {sorted(names)}")
    messages = request["messages"]
    asked = [call["id"] for m in messages if m["role"] == "assistant" for call in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    if answered != asked:
        raise ScriptError(f"tool results {answered} do not answer the calls {asked}")
    outputs = {m["tool_call_id"]: _decoded(m["content"]) for m in messages if m["role"] == "tool"}
    if not asked:
        return _calls([("call_1", "get_weather", {"city": "Paris"})])
    if len(asked) == 1:
        return _calls(
            [
                ("call_2", "get_weather", {"city": "Tokyo", "unit": "f"}),
                ("call_3", "local_time", {"city": "Tokyo"}),
            ]
        )
    paris, tokyo, time = outputs["call_1"], outputs["call_2"], outputs["call_3"]
    text = (
        f"It is {paris['temperature']} °C in Paris. In Tokyo it is {tokyo['temperature']} °F, "
        f"and the local time there is {time}."
    )
    return {"role": "assistant", "content": text}


def _decoded(content: str) -> Any:
    """A tool message's content: JSON for structured output, plain text for a string."""
    try:
        return json.loads(content)
    except ValueError:
        return content


def _calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    tool_calls = [
        {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for id, name, arguments in calls
    ]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        try:
            message = scripted_reply(body)
        except (ScriptError, KeyError, ValueError) as exc:
            return self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        completion = {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        self._send(200, completion)

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
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main() -> str:
    with scripted_server() as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="not-needed-locally", max_retries=0, timeout=10)
        question = "What's the weather in Paris, and in Tokyo (in °F) with its local time?"
        print(f"user: {question}")
        answer = run_agent(client, question)
        client.close()
    print(f"assistant: {answer}")
    return answer


if __name__ == "__main__":
    main()
