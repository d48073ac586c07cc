"""What a model writes in a reply, in every syntax: repeated keys and lone surrogates.

A text call that repeats a key (its name, id, arguments, or a key inside the arguments, also
in JSON embedded in p-type and XML calls) is invalid, whichever occurrence would have won, and
runs nothing. A lone surrogate spoils only the call it stands in; the other calls of the reply
are read as written, and a surrogate in a call's id or name still encodes in its result.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tinytools import Dispatcher, Toolbox, ToolCall, ToolFormat, ToolResult, dispatch, tool
from tinytools.formats import parse_calls

RAN: list[str] = []
"""Names of the tools that ran (emptied by the test that reads it)."""


# --- text calls that repeat a key ----------------------------------------------------------------


@tool
def pay(amount: int = 0) -> str:
    """Pay an amount."""
    RAN.append("pay")
    return f"paid {amount}"


@tool
def refund_all() -> str:
    """Refund every order."""
    RAN.append("refund_all")
    return "refunded"


@tool
def tally(data: dict[str, int] | None = None) -> int:
    """Sum the values."""
    RAN.append("tally")
    return sum((data or {}).values())


@tool(format=ToolFormat.ptype(["data"]))
def ptally(data: dict[str, int] | None = None) -> int:
    """Sum the values (p-type syntax)."""
    RAN.append("ptally")
    return sum((data or {}).values())


@tool(format=ToolFormat.xml())
def xtally(data: dict[str, int] | None = None) -> int:
    """Sum the values (XML syntax)."""
    RAN.append("xtally")
    return sum((data or {}).values())


TEXT_TOOLS = Toolbox([pay, refund_all, tally, ptally, xtally])


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "pay", "name": "refund_all", "arguments": {}}', id="json-name"),
        pytest.param('{"id": "a", "id": "b", "name": "pay", "arguments": {}}', id="json-id"),
        pytest.param(
            '{"name": "pay", "arguments": {"amount": 1}, "arguments": {"amount": 2}}', id="json-arguments-key"
        ),
        pytest.param('{"name": "pay", "arguments": {"amount": 1, "amount": 2}}', id="json-argument"),
        pytest.param('[{"name": "pay", "arguments": {"amount": 1, "amount": 2}}]', id="json-list-of-calls"),
        pytest.param('{"name": "tally", "arguments": {"data": {"k": 1, "k": 2}}}', id="json-nested"),
        pytest.param('{"name": "pay", "arguments": "{\\"amount\\": 1, \\"amount\\": 2}"}', id="json-arguments-string"),
        pytest.param('ptally(data={"k": 1, "k": 2})', id="ptype-keyword-object"),
        pytest.param('ptally({"k": 1, "k": 2})', id="ptype-positional-object"),
        pytest.param('<xtally><data>{"k": 1, "k": 2}</data></xtally>', id="xml-embedded-json"),
    ],
)
def test_a_text_call_that_repeats_a_key_is_invalid_and_runs_nothing(text: str) -> None:
    RAN.clear()
    calls = parse_calls(f"Sure, here it is:\n{text}\nDone.", TEXT_TOOLS)
    assert len(calls) == 1, calls
    (call,) = calls
    assert call.invalid is not None, f"read as {call.name!r} with {call.arguments!r}"
    result = dispatch(call, TEXT_TOOLS)
    assert result.error is not None and result.error.code == "malformed_arguments", result
    assert RAN == []


def test_a_ptype_object_names_the_key_it_repeats_far_apart() -> None:
    pairs = ", ".join(f'"k{index}": {index}' for index in range(500))
    (call,) = parse_calls(f'ptally(data={{{pairs}, "k0": 9}})', TEXT_TOOLS)
    assert call.invalid is not None and "'k0' appears more than once" in call.invalid, call.invalid


# --- lone surrogates ---------------------------------------------------------------------------


@tool
def echo(text: str = "") -> str:
    """Echo text (JSON syntax)."""
    return text


@tool(format=ToolFormat.ptype(["text"]))
def pecho(text: str = "") -> str:
    """Echo text (p-type syntax)."""
    return text


@tool(format=ToolFormat.xml())
def xecho(text: str = "") -> str:
    """Echo text (XML syntax)."""
    return text


ECHO_TOOLS = Toolbox([echo, pecho, xecho])
GOOD_CALLS = [("echo", {"text": "one"}), ("pecho", {"text": "two"}), ("xecho", {"text": "three"})]


def _reply(bad: str) -> str:
    return (
        '{"name": "echo", "arguments": {"text": "one"}}\n' + bad + '\npecho("two")\n<xecho><text>three</text></xecho>'
    )


@pytest.mark.parametrize(
    ("bad", "name"),
    [
        pytest.param('{"name": "echo", "arguments": {"text": "a\ud800b"}}', "echo", id="json-value"),
        pytest.param('pecho("a\ud800b")', "pecho", id="ptype-value"),
        pytest.param("<xecho><text>a\ud800b</text></xecho>", "xecho", id="xml-value"),
    ],
)
def test_a_lone_surrogate_in_a_reply_spoils_only_its_own_call(bad: str, name: str) -> None:
    calls = parse_calls(_reply(bad), ECHO_TOOLS)
    assert len(calls) == 4, calls
    good = [calls[0], calls[2], calls[3]]
    assert [(c.name, c.arguments, c.invalid) for c in good] == [(n, a, None) for n, a in GOOD_CALLS]
    assert calls[1].name == name
    assert calls[1].invalid is not None, calls[1]
    result = dispatch(calls[1], ECHO_TOOLS)
    assert result.error is not None and result.error.code == "malformed_arguments"


def test_surrogates_between_and_inside_many_calls_spoil_exactly_the_calls_that_hold_them() -> None:
    pieces = []
    for index in range(60):
        held = index % 3 == 0
        text = f"a\ud800{index}" if held else f"t{index}"
        pieces.append(f'note \udfff {index}: {{"name": "echo", "arguments": {{"text": "{text}"}}}}')
    calls = parse_calls("\n".join(pieces), ECHO_TOOLS)
    assert len(calls) == 60
    assert [call.invalid is not None for call in calls] == [index % 3 == 0 for index in range(60)]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param('{"name": "ech\ud800o", "arguments": {}}', id="json-name"),
        pytest.param('{"name": "echo", "arguments": {"te\ud800xt": "x"}}', id="json-key"),
    ],
)
def test_a_lone_surrogate_elsewhere_in_a_json_call_loses_no_other_call(bad: str) -> None:
    calls = parse_calls(_reply(bad), ECHO_TOOLS)
    usable = [(c.name, c.arguments) for c in calls if c.invalid is None]
    assert usable == GOOD_CALLS, calls


def _dispatch_one(call: ToolCall, toolbox: Toolbox) -> ToolResult:
    return dispatch(call, toolbox)


def _dispatcher_batch(call: ToolCall, toolbox: Toolbox) -> ToolResult:
    first, second = Dispatcher(toolbox).dispatch_many([call, ToolCall("other", "echo", '{"text": "x"}')])
    assert second.status == "succeeded"
    return first


@pytest.mark.parametrize("run", [_dispatch_one, _dispatcher_batch], ids=["dispatch", "dispatch_many"])
@pytest.mark.parametrize("name", ["na\ud800me", "echo"], ids=["surrogate-name", "known-name"])
def test_a_lone_surrogate_in_a_call_id_or_name_still_encodes(
    run: Callable[[ToolCall, Toolbox], ToolResult], name: str
) -> None:
    result = run(ToolCall("id\ud800", name, "{}"), ECHO_TOOLS)
    assert result.call_id == "id\ud800"
    encoded = result.to_json()
    assert json.loads(encoded)["call_id"] == "id\ud800"
