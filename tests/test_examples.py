"""The agent-loop examples, run end to end: real SDK clients over HTTP to a local scripted model."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).parents[1] / "examples"
ANSWER = "It is 18.0 °C in Paris. In Tokyo it is 75.2 °F, and the local time there is 16:00."


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any connection that is not to 127.0.0.1, so the test cannot reach a network."""
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"the example tried to reach {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.mark.usefixtures("loopback_only")
@pytest.mark.parametrize("name", ["openai_agent_loop", "anthropic_agent_loop"])
def test_the_loop_calls_a_tool_then_two_in_parallel_then_answers(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _load(name).main() == ANSWER
    printed = capsys.readouterr().out.splitlines()
    calls = [line.strip() for line in printed if line.startswith("  ")]
    assert [call.split("(")[0] for call in calls] == ["get_weather", "get_weather", "local_time"]
    assert all("-> succeeded" in call for call in calls)
    assert printed[-1] == f"assistant: {ANSWER}"


def test_the_scripted_server_refuses_results_that_answer_no_call() -> None:
    example = _load("openai_agent_loop")
    tools = example.adapter.export_tools(example.toolbox)
    request = {
        "model": "m",
        "tools": tools,
        "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
    }
    with pytest.raises(example.ScriptError):
        example.scripted_reply(request)
