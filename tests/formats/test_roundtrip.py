"""Round trips in every syntax: what `render_call` writes, `parse_calls` reads back exactly.

For any arguments valid under a tool's schema, rendering a call and parsing the text gives the
same arguments (same types too), alone, inside prose, and next to another call; and the
parsed call passes the tool's validator when it is dispatched.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.formats.support import FORMATS, PIECES, same, tools_and_arguments
from tests.strategies import build_tool, signatures
from tinytools import Tool, Toolbox, ToolCall, dispatch
from tinytools.formats import ToolFormat, parse_calls, render_call

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def round_trip(tool: Tool[..., Any], toolbox: Toolbox, arguments: dict[str, Any], format: ToolFormat) -> None:
    text = render_call(ToolCall("c1", tool.name, arguments), tool, format=format)
    calls = parse_calls(text, toolbox, format=format)
    assert [(call.name, call.invalid) for call in calls] == [(tool.name, None)], text
    assert same(calls[0].arguments, arguments), (text, calls[0].arguments)


@pytest.mark.parametrize("format", FORMATS, ids=repr)
@SETTINGS
@given(case=tools_and_arguments())
def test_generated_schemas_round_trip(format: ToolFormat, case: Any) -> None:
    tool, toolbox, arguments = case
    round_trip(tool, toolbox, arguments, format)


@pytest.mark.parametrize("format", FORMATS, ids=repr)
@SETTINGS
@given(case=tools_and_arguments(), prose=st.sampled_from(["", "Sure.\n", "Let me check (see docs) ", "```\n"]))
def test_parsed_calls_validate_and_keep_their_order_in_prose(format: ToolFormat, case: Any, prose: str) -> None:
    tool, toolbox, arguments = case
    first = render_call(ToolCall("a", tool.name, arguments), tool, format=format)
    second = render_call(ToolCall("b", tool.name, {}), tool, format=format)
    calls = parse_calls(f"{prose}{first}\nthen, after some thought:\n{second}\n```", toolbox, format=format)
    assert [call.invalid for call in calls] == [None, None]
    assert same(calls[0].arguments, arguments) and calls[1].arguments == {}
    result = dispatch(calls[0], toolbox)
    assert result.status == "succeeded", result.error
    assert same(result.output, arguments)
    assert result.call_id == calls[0].id != calls[1].id


@pytest.mark.parametrize("format", FORMATS, ids=repr)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decorated_tools_round_trip(format: ToolFormat, data: st.DataObject) -> None:
    signature = data.draw(signatures())
    defaults: dict[str, Any] = {}
    for parameter in signature.parameters:
        if parameter.has_default:
            defaults[parameter.name] = data.draw(parameter.case.valid)
    made, _ = build_tool(signature, defaults)
    arguments = {
        parameter.name: msgspec.json.decode(msgspec.json.encode(data.draw(parameter.case.valid)))
        for parameter in signature.parameters
        if not parameter.has_default or data.draw(st.booleans())
    }
    round_trip(made, Toolbox([made]), arguments, format)
    call = parse_calls(render_call(ToolCall("c", made.name, arguments), made, format=format), [made], format=format)
    assert dispatch(call[0], [made], inject=dict.fromkeys(signature.injected)).status == "succeeded"


def test_ids_are_deterministic_within_a_turn_and_distinct_across_turns() -> None:
    tool = Tool.from_schema("t", "", {"type": "object", "additionalProperties": False}, lambda: None)
    text = '{"name": "t", "arguments": {}} {"name": "t", "arguments": {}}'
    first, second = parse_calls(text, [tool], turn="7")
    assert first.id != second.id
    assert [call.id for call in parse_calls(text, [tool], turn="7")] == [first.id, second.id]
    assert first.id == "call_" + __import__("hashlib").sha256(b'7:0:0:["t",{}]').hexdigest()[:16]
    assert not {first.id, second.id} & {call.id for call in parse_calls(text, [tool], turn="8")}
    assert not {first.id, second.id} & {call.id for call in parse_calls(text, [tool])}


GARBAGE = ['{"name": "search", "arguments": ', "<search>", "<query>", "</search>", "search(", '"', "'", "]]>"]


@settings(max_examples=150, deadline=None)
@given(
    case=tools_and_arguments(),
    text=st.lists(st.sampled_from(PIECES + GARBAGE) | st.text(max_size=4), max_size=12).map("".join),
    format=st.sampled_from([None, *FORMATS]),
)
def test_any_text_parses_without_raising_into_dispatchable_calls(case: Any, text: str, format: Any) -> None:
    _, toolbox, _ = case
    for call in parse_calls(text, toolbox, format=format):
        assert isinstance(call.arguments, dict) if call.invalid is None else isinstance(call.arguments, str)
        result = dispatch(call, toolbox)
        assert result.call_id == call.id
        if call.invalid is not None:
            assert result.error is not None and result.error.code in ("malformed_arguments", "unknown_tool")
