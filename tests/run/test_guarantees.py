"""The Guarantees page's promises, each on every entry point under every option that changes a call's path.

One matrix: an entry point (module `dispatch` and `adispatch`, the four `Dispatcher` entry points,
and a text-format loop: a reply parsed by `parse_calls`, then dispatched as a batch) times an
option (none, strict mode, a `Rewrite`, an allowlist, approval, an executor, a timeout, retries,
middleware, an event sink). Module entry points take no dispatcher options, so they meet only the
options a tool declares itself.
"""

from __future__ import annotations

import asyncio
import collections
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import msgspec
import pytest

from tinytools import (
    Dispatcher,
    Injected,
    Rewrite,
    Toolbox,
    ToolCall,
    ToolPolicy,
    ToolResult,
    adispatch,
    dispatch,
    tool,
)
from tinytools.formats import parse_calls, render_call
from tinytools.policy import PolicyMiddleware, require_approval

from .paths import PassThrough

SECRET = "sk-live-7Q2b9XkL4mZ8"
ENTRIES = [
    "dispatch",
    "adispatch",
    "Dispatcher.dispatch",
    "Dispatcher.adispatch",
    "dispatch_many",
    "adispatch_many",
    "text",
]
MODULE = {"dispatch", "adispatch"}
OPTIONS = ["plain", "strict", "rewrite", "allowed", "approval", "executor", "timeout", "retries", "middleware", "sink"]
TOOL_OPTIONS = {
    "timeout": {"timeout": 5.0},
    "retries": {"idempotent": True, "retries": 2},
    "approval": {"policy": ToolPolicy.classified().with_access(approval_required=True)},
}
MATRIX = [
    (entry, option)
    for entry in ENTRIES
    for option in OPTIONS
    if entry not in MODULE or option in ("plain", "timeout", "retries")
]


class Zoo:
    """The tools of one cell of the matrix, built with the option's tool settings, counting their runs."""

    def __init__(self, option: str):
        self.option = option
        self.runs: collections.Counter[str] = collections.Counter()
        extra = TOOL_OPTIONS.get(option, {})
        runs = self.runs

        @tool(**extra)
        def echo(text: str, times: int = 1, *, key: Annotated[str, Injected("key", secret=True)] = "") -> str:
            """Echo the text, and the key."""
            runs["echo"] += 1
            return f"{text * times} with {key}"

        @tool(**extra)
        def explode(text: str) -> str:
            """Fail with an internal detail."""
            runs["explode"] += 1
            raise ValueError(f"internal detail {text}")

        @tool(**extra)
        def grab(items: list[str]) -> int:
            """Change the list it was given."""
            runs["grab"] += 1
            items.append("mine")
            return len(items)

        @tool(**extra)
        def fallback() -> str:
            """Where unknown names go under a Rewrite."""
            runs["fallback"] += 1
            return "fell back"

        self.tools = [echo, explode, grab, fallback]

    def dispatcher(self) -> Dispatcher:
        option = self.option
        options: dict[str, Any] = {}
        if option == "strict":
            options["strict"] = True
        elif option == "rewrite":
            options["unknown_tool"] = Rewrite("fallback")
        elif option == "approval":
            options["middleware"] = [PolicyMiddleware(require_approval(lambda request: True))]
        elif option == "executor":
            options["executor"] = ThreadPoolExecutor(2)
        elif option == "middleware":
            options["middleware"] = [PassThrough()]
        elif option == "sink":
            options["on_event"] = lambda event: None
        return Dispatcher(Toolbox(self.tools), **options)


def run(entry: str, option: str, zoo: Zoo, calls: list[ToolCall]) -> list[ToolResult]:
    """The calls through one entry point, under one option, with the secret injected."""
    inject = {"key": SECRET}
    allowed = [t.name for t in zoo.tools] if option == "allowed" else None
    box = Toolbox(zoo.tools)
    if entry == "dispatch":
        return [dispatch(call, box, inject=inject) for call in calls]
    if entry == "adispatch":
        return [asyncio.run(adispatch(call, box, inject=inject)) for call in calls]
    dispatcher = zoo.dispatcher()
    if entry == "Dispatcher.dispatch":
        return [dispatcher.dispatch(call, inject=inject, allowed=allowed) for call in calls]
    if entry == "Dispatcher.adispatch":
        return [asyncio.run(dispatcher.adispatch(call, inject=inject, allowed=allowed)) for call in calls]
    if entry == "dispatch_many":
        return dispatcher.dispatch_many(calls, inject=inject, allowed=allowed)
    if entry == "adispatch_many":
        return asyncio.run(dispatcher.adispatch_many(calls, inject=inject, allowed=allowed))
    reply = "\n".join(_as_text(call, box) for call in calls)
    parsed = parse_calls(reply, box)
    assert len(parsed) == len(calls), reply
    results = dispatcher.dispatch_many(parsed, inject=inject, allowed=allowed)
    return [msgspec.structs.replace(result, call_id=call.id) for result, call in zip(results, calls, strict=True)]


def _as_text(call: ToolCall, box: Toolbox) -> str:
    """A call as a model writes it in text; what cannot be written as a call is written as it is."""
    if isinstance(call.arguments, dict) and call.name in box:
        return render_call(ToolCall(call.id, call.name, call.arguments), box[call.name])
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return f'{{"name": {json.dumps(call.name)}, "arguments": {arguments}}}'


def full(text: str, times: int = 1) -> dict[str, Any]:
    """Arguments for `echo` with every property sent, as strict mode asks."""
    return {"text": text, "times": times}


BAD_CALLS = [
    ToolCall("wrong-type", "echo", {"text": 3, "times": 1}),
    ToolCall("extra-key", "echo", {**full("a"), "extra": 1}),
    ToolCall("smuggled", "echo", {**full("a"), "key": "from the model"}),
    ToolCall("malformed", "echo", '{"text": "a", "times": 1'),
    ToolCall("repeated", "echo", '{"text": "a", "times": 1, "text": "b"}'),
    ToolCall("not-an-object", "echo", "[1, 2]"),
]


def _refused(result: ToolResult) -> bool:
    return (
        result.status == "failed"
        and result.error is not None
        and result.error.code
        in (
            "invalid_arguments",
            "malformed_arguments",
        )
    )


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_exactly_one_result_per_call_carrying_its_id(entry: str, option: str) -> None:
    zoo = Zoo(option)
    calls = [
        ToolCall("ok", "echo", full("a")),
        *BAD_CALLS,
        ToolCall("unknown", "nope", {}),
        ToolCall("raises", "explode", {"text": "x"}),
    ]
    if entry == "text":  # text that is not a call at all is not a call; the rest must each be answered
        calls = [call for call in calls if call.id not in ("not-an-object", "malformed")]
    results = run(entry, option, zoo, calls)
    assert [result.call_id for result in results] == [call.id for call in calls]
    for result in results:
        result.validate()
        assert json.loads(result.to_json())["call_id"] == result.call_id
    assert results[0].status == "succeeded"


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_what_the_schema_refuses_never_runs(entry: str, option: str) -> None:
    zoo = Zoo(option)
    calls = BAD_CALLS if entry != "text" else [c for c in BAD_CALLS if c.id not in ("malformed", "not-an-object")]
    results = run(entry, option, zoo, calls)
    assert all(_refused(result) for result in results), [(r.call_id, r.error) for r in results]
    assert zoo.runs["echo"] == 0


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_faults_stay_in_their_call_and_leak_nothing(entry: str, option: str) -> None:
    zoo = Zoo(option)
    results = run(
        entry, option, zoo, [ToolCall("raises", "explode", {"text": "ZX81"}), ToolCall("ok", "echo", full("b"))]
    )
    failed, ok = results
    assert failed.status == "failed" and failed.error is not None and failed.error.code == "tool_error"
    assert "ZX81" not in failed.text() and "internal detail" not in failed.text()
    assert ok.status == "succeeded" and ok.output.startswith("b with")
    assert zoo.runs["explode"] == 1  # a ValueError is not a reason to try again, idempotent or not


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_secrets_never_reach_the_text_the_model_reads(entry: str, option: str) -> None:
    zoo = Zoo(option)
    (result,) = run(entry, option, zoo, [ToolCall("ok", "echo", full("a", 2))])
    assert result.status == "succeeded"
    text = result.text()
    assert not any(SECRET[i : i + 8] in text for i in range(len(SECRET) - 7)), text
    assert text.startswith("aa with")


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_names_are_matched_exactly(entry: str, option: str) -> None:
    zoo = Zoo(option)
    calls = [ToolCall("case", "Echo", full("a")), ToolCall("invisible", "echo\u200b", full("a"))]
    if entry == "text":
        calls = calls[:1]
    results = run(entry, option, zoo, calls)
    if option == "rewrite":  # the policy sends unknown names to the fallback, which refuses their arguments
        assert all(
            r.name == "fallback" and r.error is not None and r.error.code == "invalid_arguments" for r in results
        )
    else:
        assert all(r.error is not None and r.error.code == "unknown_tool" for r in results)
    assert zoo.runs["echo"] == 0


@pytest.mark.parametrize(("entry", "option"), MATRIX)
def test_arguments_belong_to_one_call(entry: str, option: str) -> None:
    zoo = Zoo(option)
    shared = {"items": ["a", "b"]}
    results = run(entry, option, zoo, [ToolCall("one", "grab", shared), ToolCall("two", "grab", shared)])
    assert [r.output for r in results] == [3, 3]
    assert shared == {"items": ["a", "b"]}


@pytest.mark.parametrize(("entry", "option"), [(e, o) for e, o in MATRIX if e not in MODULE and e != "text"])
def test_a_tool_not_offered_this_turn_never_runs(entry: str, option: str) -> None:
    zoo = Zoo(option)
    dispatcher = zoo.dispatcher()
    calls = [ToolCall("not-offered", "echo", full("a")), ToolCall("unknown", "nope", {})]
    runs_of = {
        "Dispatcher.dispatch": lambda: [
            dispatcher.dispatch(c, inject={"key": SECRET}, allowed=["grab"]) for c in calls
        ],
        "Dispatcher.adispatch": lambda: [
            asyncio.run(dispatcher.adispatch(c, inject={"key": SECRET}, allowed=["grab"])) for c in calls
        ],
        "dispatch_many": lambda: dispatcher.dispatch_many(calls, inject={"key": SECRET}, allowed=["grab"]),
        "adispatch_many": lambda: asyncio.run(
            dispatcher.adispatch_many(calls, inject={"key": SECRET}, allowed=["grab"])
        ),
    }
    offered, unknown = runs_of[entry]()
    assert offered.error is not None and offered.error.code == "tool_not_allowed"
    expected = "tool_not_allowed" if option == "rewrite" else "unknown_tool"  # the fallback is not offered either
    assert unknown.error is not None and unknown.error.code == expected
    assert zoo.runs["echo"] == zoo.runs["fallback"] == 0
