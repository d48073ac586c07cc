"""Call plans: many calls in one, every step checked before the first runs, then each a call of its own.

A plan tool (`Toolbox.plan_tool`) takes ``{"steps": [...], "return": [...]}``; a step's argument
may be ``{"$from": <earlier step>, "at": <pointer>}``. These tests run plans on every entry point,
with random plans (each valid one runs exactly its steps in an order that respects every
reference; each with one fault runs nothing and names the faulty step), approval of the whole plan
(asked once; a deferred plan resumed by another process), concurrency and order, and bad input.
Nothing measures time: overlap is shown with barriers.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from tinytools import (
    Dispatcher,
    Injected,
    Limits,
    RunContext,
    SQLiteJournal,
    Tool,
    Toolbox,
    ToolCall,
    ToolError,
    ToolEvent,
    plan_steps,
    tool,
)
from tinytools.policy import (
    Approval,
    ApprovalRequest,
    PolicyMiddleware,
    ToolPolicy,
    deny_side_effects,
    require_approval,
)
from tinytools.providers import mcp

from .paths import DISPATCHER_ENTRIES, GENEROUS, PATHS, VARIANTS, options, run_call

HERE = Path(__file__).parent


# --- a toolbox of typed tools, and a log of what ran -----------------------------------------


class Pair(TypedDict):
    number: int
    word: str


class Log:
    """What the tools ran: each call's id and arguments, in the order they started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def add(self, call: ToolCall, **arguments: Any) -> None:
        with self.lock:
            self.calls.append((call.id, arguments))


def typed_tools(log: Log) -> list[Any]:
    """Tools of several input and output types, each logging its call."""

    @tool
    def number(n: int, call: ToolCall) -> int:
        """Give back a number."""
        log.add(call, n=n)
        return n

    @tool
    def add(a: int, b: int, call: ToolCall) -> int:
        """Add two numbers."""
        log.add(call, a=a, b=b)
        return a + b

    @tool
    def spell(n: int, call: ToolCall) -> str:
        """A number as a word."""
        log.add(call, n=n)
        return f"n{n}"

    @tool
    def pair(n: int, word: str, call: ToolCall) -> Pair:
        """A number and a word together."""
        log.add(call, n=n, word=word)
        return {"number": n, "word": word}

    @tool
    def half(x: float, call: ToolCall) -> float:
        """Half of a number."""
        log.add(call, x=x)
        return x / 2

    @tool
    def length(word: str, call: ToolCall) -> int:
        """How long a word is."""
        log.add(call, word=word)
        return len(word)

    return [number, add, spell, pair, half, length]


def expected(tool_name: str, arguments: dict[str, Any]) -> Any:
    """What each typed tool returns, for the oracle."""
    if tool_name == "number":
        return arguments["n"]
    if tool_name == "add":
        return arguments["a"] + arguments["b"]
    if tool_name == "spell":
        return f"n{arguments['n']}"
    if tool_name == "pair":
        return {"number": arguments["n"], "word": arguments["word"]}
    if tool_name == "half":
        return arguments["x"] / 2
    return len(arguments["word"])


PARAMETERS = {
    "number": {"n": "integer"},
    "add": {"a": "integer", "b": "integer"},
    "spell": {"n": "integer"},
    "pair": {"n": "integer", "word": "string"},
    "half": {"x": "number"},
    "length": {"word": "string"},
}
OUTPUTS = {  # tool -> (pointer, JSON type) of what a later step may refer to
    "number": [("", "integer")],
    "add": [("", "integer")],
    "spell": [("", "string")],
    "pair": [("/number", "integer"), ("/word", "string")],
    "half": [("", "number")],
    "length": [("", "integer")],
}


def fits(source: str, wanted: str) -> bool:
    return source == wanted or (source == "integer" and wanted == "number")


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    """A valid plan over the typed tools: literals of the right type, references into fitting outputs."""
    count = draw(st.integers(1, 8))
    steps: list[dict[str, Any]] = []
    for index in range(count):
        name = draw(st.sampled_from(sorted(PARAMETERS)))
        arguments: dict[str, Any] = {}
        for parameter, wanted in PARAMETERS[name].items():
            sources = [
                (earlier["id"], pointer)
                for earlier in steps
                for pointer, kind in OUTPUTS[earlier["tool"]]
                if fits(kind, wanted)
            ]
            if sources and draw(st.booleans()):
                source, pointer = draw(st.sampled_from(sources))
                arguments[parameter] = {"$from": source, "at": pointer} if pointer else {"$from": source}
            elif wanted == "string":
                arguments[parameter] = draw(st.text("abc", max_size=4))
            else:
                arguments[parameter] = draw(st.integers(-50, 50))
        steps.append({"id": f"s{index}", "tool": name, "arguments": arguments})
    returned = draw(st.lists(st.sampled_from([step["id"] for step in steps]), max_size=3, unique=True))
    return {"steps": steps, "return": returned}


def evaluate(plan: dict[str, Any]) -> dict[str, tuple[dict[str, Any], Any]]:
    """Each step's bound arguments and output, computed without tinytools."""
    done: dict[str, tuple[dict[str, Any], Any]] = {}
    for step in plan["steps"]:
        bound = {}
        for parameter, value in step["arguments"].items():
            if isinstance(value, dict):
                output = done[value["$from"]][1]
                pointer = value.get("at", "")
                bound[parameter] = output[pointer[1:]] if pointer else output
            else:
                bound[parameter] = value
        done[step["id"]] = (bound, expected(step["tool"], bound))
    return done


def plan_box(log: Log, *extra: Any, **plan_options: Any) -> Toolbox:
    """The typed tools, the ``extra`` ones, and a plan tool over them all."""
    box = Toolbox([*typed_tools(log), *extra])
    box.plan_tool(**plan_options)
    return box


# --- every entry point ------------------------------------------------------------------------


FLIGHT_PLAN = {
    "steps": [
        {"id": "n", "tool": "number", "arguments": {"n": 7}},
        {"id": "p", "tool": "pair", "arguments": {"n": {"$from": "n"}, "word": "seven"}},
        {"id": "len", "tool": "length", "arguments": {"word": {"$from": "p", "at": "/word"}}},
        {"id": "sum", "tool": "add", "arguments": {"a": {"$from": "p", "at": "/number"}, "b": {"$from": "len"}}},
    ],
    "return": ["sum"],
}


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_a_plan_runs_its_steps_on_every_path(entry: str, variant: str) -> None:
    log = Log()
    box = plan_box(log)
    arguments: Any = FLIGHT_PLAN if variant != "strict" else _strict_form(FLIGHT_PLAN)
    result = run_call(entry, box, ToolCall("p1", "run_plan", json.dumps(arguments)), **options(variant))
    assert result.status == "succeeded", result.error
    assert json.loads(result.text()) == {
        "steps": [{"id": step, "status": "succeeded"} for step in ("n", "p", "len", "sum")],
        "return": {"sum": 12},
    }
    steps = plan_steps(result)
    assert list(steps) == ["n", "p", "len", "sum"]
    assert {key: (value.call_id, value.output) for key, value in steps.items()} == {
        "n": ("p1/n", 7),
        "p": ("p1/p", {"number": 7, "word": "seven"}),
        "len": ("p1/len", 5),
        "sum": ("p1/sum", 12),
    }
    assert [call_id for call_id, _ in log.calls] == ["p1/n", "p1/p", "p1/len", "p1/sum"]


def _strict_form(plan: dict[str, Any]) -> dict[str, Any]:
    """A plan as a strict provider writes it: every property present (a reference's ``at`` null when left out)."""
    steps = []
    for step in plan["steps"]:
        arguments = {
            key: ({"$from": value["$from"], "at": value.get("at")} if isinstance(value, dict) else value)
            for key, value in step["arguments"].items()
        }
        steps.append({**step, "arguments": arguments})
    return {"steps": steps, "return": plan["return"]}


def test_each_step_is_a_call_of_its_own_with_its_events() -> None:
    log = Log()
    events: list[ToolEvent] = []
    result = Dispatcher(plan_box(log), on_event=events.append).dispatch(ToolCall("p1", "run_plan", FLIGHT_PLAN))
    assert result.status == "succeeded"
    seen = [(type(event).__name__, event.call_id) for event in events]
    assert seen[0] == ("ToolStarted", "p1") and seen[-1] == ("ToolCompleted", "p1")
    for step in ("n", "p", "len", "sum"):
        assert seen.index(("ToolStarted", f"p1/{step}")) < seen.index(("ToolCompleted", f"p1/{step}"))


def test_the_model_reads_only_the_returned_outputs_and_the_application_reads_every_step() -> None:
    log = Log()
    plan = {**FLIGHT_PLAN, "return": ["p"]}
    result = Dispatcher(plan_box(log)).dispatch(ToolCall("p1", "run_plan", plan))
    read = json.loads(result.text())
    assert read["return"] == {"p": {"number": 7, "word": "seven"}}
    assert result.structured() is None, "the steps' full results are the application's, not the model's"
    assert plan_steps(result)["sum"].output == 12


def test_the_plan_tool_is_served_over_mcp_like_any_tool() -> None:
    log = Log()

    async def session() -> Any:
        async with Client(mcp.build_server(plan_box(log)), mode="legacy") as client:
            listed = {item.name: item for item in (await client.list_tools()).tools}
            assert "run_plan" in listed and "anyOf" in json.dumps(listed["run_plan"].input_schema)
            return await client.call_tool("run_plan", FLIGHT_PLAN)

    answer = anyio.run(session)
    assert not answer.is_error
    assert json.loads(answer.content[0].text)["return"] == {"sum": 12}
    assert len(log.calls) == 4


def test_the_plan_schema_names_each_tool_and_its_strict_rendering_is_enforced() -> None:
    box = plan_box(Log(), max_steps=3)
    schema = box["run_plan"].input_schema
    branches = schema["properties"]["steps"]["items"]["anyOf"]
    assert [branch["properties"]["tool"]["const"] for branch in branches] == sorted(
        PARAMETERS, key=list(PARAMETERS).index
    )
    assert schema["properties"]["steps"]["maxItems"] == 3
    refused = Dispatcher(box, strict=True).dispatch(ToolCall("p1", "run_plan", FLIGHT_PLAN))  # "at" left out
    assert refused.error is not None and refused.error.code == "invalid_arguments"


def test_tools_that_name_an_anchor_alike_are_planned_together() -> None:
    def made(name: str) -> Tool[..., Any]:
        node = {"$anchor": "node", "type": "object", "properties": {"label": {"type": "string"}}}
        node |= {"required": ["label"], "additionalProperties": False}
        schema = {"type": "object", "properties": {"root": {"$ref": "#node"}}, "required": ["root"]}
        schema |= {"additionalProperties": False, "$defs": {"A Node": node}}  # its pointer is %-encoded
        return Tool.from_schema(name, "Label a node.", schema, lambda root: root["label"])

    box = Toolbox([made("first"), made("second")])
    box.plan_tool()
    steps = [{"id": "a", "tool": "first", "arguments": {"root": {"label": "x"}}}]
    steps.append({"id": "b", "tool": "second", "arguments": {"root": {"label": 2}}})
    refused = Dispatcher(box).dispatch(ToolCall("p1", "run_plan", {"steps": steps, "return": ["a"]}))
    assert refused.error is not None and refused.error.details["pointer"].endswith("/root/label")
    steps[1]["arguments"] = {"root": {"label": "y"}}
    ran = Dispatcher(box).dispatch(ToolCall("p2", "run_plan", {"steps": steps, "return": ["a", "b"]}))
    assert ran.status == "succeeded", ran.text()


# --- random plans, and the same plans with one fault -------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans())
def test_a_valid_plan_runs_exactly_its_steps_respecting_every_reference(plan: dict[str, Any]) -> None:
    log = Log()
    result = Dispatcher(plan_box(log)).dispatch(ToolCall("p", "run_plan", plan))
    assert result.status == "succeeded", result.error
    oracle = evaluate(plan)
    started = [call_id for call_id, _ in log.calls]
    assert sorted(started) == sorted(f"p/{step['id']}" for step in plan["steps"]), "each step runs exactly once"
    for step in plan["steps"]:
        for value in step["arguments"].values():
            if isinstance(value, dict):
                assert started.index(f"p/{value['$from']}") < started.index(f"p/{step['id']}")
    ran = dict(log.calls)
    steps = plan_steps(result)
    for step in plan["steps"]:
        bound, output = oracle[step["id"]]
        assert ran[f"p/{step['id']}"] == bound
        assert steps[step["id"]].output == output
    assert json.loads(result.text())["return"] == {key: oracle[key][1] for key in plan["return"]}


FAULTS = ["unknown_tool", "bad_literal", "forward", "dangling", "mismatch", "denied", "unrevealed", "budget"]


@settings(max_examples=160, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans(), fault=st.sampled_from(FAULTS), data=st.data())
def test_a_plan_with_one_fault_runs_nothing_and_names_the_faulty_step(
    plan: dict[str, Any], fault: str, data: st.DataObject
) -> None:
    log = Log()
    box = Toolbox(typed_tools(log))

    @tool(defer=True)
    def hidden(n: int) -> int:
        """Not revealed yet."""
        log.calls.append(("hidden", {"n": n}))
        return n

    @tool(policy=ToolPolicy.classified().with_side_effects(["payment"]))
    def forbidden(n: int) -> int:
        """Denied by a rule."""
        log.calls.append(("forbidden", {"n": n}))
        return n

    box.add(hidden)
    box.add(forbidden)
    box.plan_tool(tools=[*PARAMETERS, "hidden", "forbidden"])
    steps = plan["steps"]
    index = data.draw(st.integers(0, len(steps) - 1))
    step = steps[index]
    limits = None
    if fault == "unknown_tool":
        step["tool"] = "no_such_tool"
    elif fault == "bad_literal":
        step["arguments"][next(iter(step["arguments"]))] = [1, 2]  # no parameter takes an array
    elif fault in ("forward", "dangling"):
        target = f"s{len(steps) + 3}" if fault == "dangling" or index == len(steps) - 1 else steps[index + 1]["id"]
        step["arguments"][next(iter(step["arguments"]))] = {"$from": target}
    elif fault == "mismatch":  # a word where a number is wanted, or a number where a word is
        step.update(tool="length", arguments={"word": {"$from": "w"}})
        steps.insert(index, {"id": "w", "tool": "number", "arguments": {"n": 3}})
        index += 1
    elif fault in ("denied", "unrevealed"):
        step.update(tool="forbidden" if fault == "denied" else "hidden", arguments={"n": 1})
    else:
        limits = Limits(max_tool_calls=len(steps))  # the plan's own call takes one
    middleware = [PolicyMiddleware(deny_side_effects(["payment"]))]
    result = Dispatcher(box, limits=limits, middleware=middleware).dispatch(ToolCall("p", "run_plan", plan))
    assert log.calls == [], "a refused plan runs no step"
    assert result.status == "failed" and result.error is not None
    details = result.error.details or {}
    if fault == "budget":
        assert (result.error.code, details["pointer"]) == ("invalid_arguments", "/steps")
        return
    assert details["pointer"].startswith(f"/steps/{index}/"), (fault, details, result.error.message)
    assert result.error.code == ("policy_denied" if fault == "denied" else "invalid_arguments")
    assert f"/steps/{index}" in result.error.message


# --- approval of the whole plan ----------------------------------------------------------------


def approval_box(log: Log) -> Toolbox:
    box = Toolbox(typed_tools(log))

    @tool(policy=ToolPolicy.classified().with_access(approval_required=True))
    def refund(amount: int, call: ToolCall) -> str:
        """Refund an amount."""
        log.add(call, amount=amount)
        return f"refunded {amount}"

    box.add(refund)
    box.plan_tool()
    return box


REFUND_PLAN = {
    "steps": [
        {"id": "a", "tool": "number", "arguments": {"n": 5}},
        {"id": "r", "tool": "refund", "arguments": {"amount": {"$from": "a"}}},
        {"id": "b", "tool": "spell", "arguments": {"n": 1}},
    ],
    "return": ["r"],
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_step_that_needs_approval_asks_once_about_the_whole_plan_before_any_step(
    decision: str, entry: str, variant: str
) -> None:
    log = Log()
    asked: list[tuple[str, dict[str, Any], int]] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append((request.tool.name, request.arguments, len(log.calls)))
        return Approval.approve() if decision == "approve" else Approval.deny("not today")

    path = options(variant)
    middleware = [*path.pop("middleware", []), PolicyMiddleware(require_approval(approver))]
    plan = REFUND_PLAN if variant != "strict" else _strict_form(REFUND_PLAN)
    result = run_call(entry, approval_box(log), ToolCall("p", "run_plan", plan), middleware=middleware, **path)
    assert asked == [("run_plan", REFUND_PLAN, 0)], "asked once, with the whole plan, before any step ran"
    if decision == "approve":
        assert result.status == "succeeded" and json.loads(result.text())["return"] == {"r": "refunded 5"}
        ran = [call_id for call_id, _ in log.calls]  # "b" depends on nothing: it may run at any time
        assert sorted(ran) == ["p/a", "p/b", "p/r"] and ran.index("p/a") < ran.index("p/r")
    else:
        assert (result.status, result.error and result.error.code, log.calls) == ("failed", "policy_denied", [])


def test_a_plan_without_such_a_step_is_not_put_to_the_approver() -> None:
    log = Log()
    asked: list[Any] = []
    middleware = [PolicyMiddleware(require_approval(lambda request: asked.append(request) or True))]
    plan = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": 1}}], "return": ["a"]}
    result = Dispatcher(approval_box(log), middleware=middleware).dispatch(ToolCall("p", "run_plan", plan))
    assert (result.status, asked) == ("succeeded", [])


def test_with_no_approver_a_step_that_needs_one_refuses_the_plan() -> None:
    log = Log()
    result = Dispatcher(approval_box(log)).dispatch(ToolCall("p", "run_plan", REFUND_PLAN))
    assert (result.status, result.error and result.error.code, log.calls) == ("failed", "policy_denied", [])
    assert (result.error.details or {}).get("rule") == "require_approval" and "'r'" in result.error.message


def test_an_approvers_edit_of_the_plan_is_checked_again() -> None:
    log = Log()
    forward = {"steps": [{"id": "r", "tool": "refund", "arguments": {"amount": {"$from": "later"}}}], "return": []}
    middleware = [PolicyMiddleware(require_approval(lambda request: Approval.edit(forward)))]
    result = Dispatcher(approval_box(log), middleware=middleware).dispatch(ToolCall("p", "run_plan", REFUND_PLAN))
    assert (result.status, log.calls) == ("failed", [])


def test_a_deferred_plan_is_resumed_whole_by_another_process_through_the_journal(tmp_path: Path) -> None:
    log = Log()
    journal_path = tmp_path / "journal.db"
    middleware = [PolicyMiddleware(require_approval(lambda request: Approval.defer("a manager decides")))]
    dispatcher = Dispatcher(
        approval_box(log), middleware=middleware, journal=SQLiteJournal(journal_path), signing_key="k",
        context=RunContext(run_id="run-1"),
    )  # fmt: skip
    parked = dispatcher.dispatch(ToolCall("p", "run_plan", REFUND_PLAN))
    assert parked.status == "pending" and parked.pending is not None and log.calls == []
    assert [item.tool for item in dispatcher.pending()] == ["run_plan"]
    worker = subprocess.run(
        [sys.executable, str(HERE / "plan_worker.py"), str(journal_path), parked.pending.handle],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    answer = json.loads(worker.stdout)
    assert answer["status"] == "succeeded" and answer["return"] == {"r": "refunded 5"}
    ran = answer["ran"]
    assert sorted(ran) == ["p/a", "p/b", "p/r"], "the resumed plan runs each step once, in its own process"
    assert ran.index("p/a") < ran.index("p/r")
    again = dispatcher.poll(parked.pending.handle)  # this process reads the plan's end from the journal
    assert again.status == "succeeded" and list(plan_steps(again)) == ["a", "r", "b"]
    assert log.calls == []


# --- concurrency and order -----------------------------------------------------------------------


def test_independent_steps_overlap_and_serial_steps_run_alone_in_plan_order() -> None:
    barrier = threading.Barrier(2, timeout=GENEROUS)
    running: list[int] = [0]
    most: list[int] = [0]
    order: list[str] = []
    lock = threading.Lock()

    @tool
    def meet(label: str) -> str:
        """Wait for the other parallel step (it only comes if both run at once)."""
        barrier.wait()
        return label

    @tool(parallel_safe=False)
    def alone(label: str) -> str:
        """A serial step."""
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            order.append(label)
        with lock:
            running[0] -= 1
        return label

    box = Toolbox([meet, alone])
    box.plan_tool()
    plan = {
        "steps": [
            {"id": "m1", "tool": "meet", "arguments": {"label": "m1"}},
            {"id": "m2", "tool": "meet", "arguments": {"label": "m2"}},
            {"id": "s1", "tool": "alone", "arguments": {"label": "s1"}},
            {"id": "s2", "tool": "alone", "arguments": {"label": "s2"}},
            {"id": "m3", "tool": "meet", "arguments": {"label": {"$from": "s2"}}},
            {"id": "m4", "tool": "meet", "arguments": {"label": "m4"}},
        ],
        "return": [],
    }
    result = Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan))
    steps = plan_steps(result)
    assert list(steps) == ["m1", "m2", "s1", "s2", "m3", "m4"], "results come back in plan order"
    assert all(item.status == "succeeded" for item in steps.values()), {k: v.error for k, v in steps.items()}
    assert (order, most[0]) == (["s1", "s2"], 1)


def test_a_failed_step_ends_its_dependents_as_not_run_and_the_others_finish() -> None:
    @tool
    def fail(n: int) -> int:
        """Always fails."""
        raise ToolError("no luck")

    log = Log()
    box = plan_box(log, fail)
    plan = {
        "steps": [
            {"id": "f", "tool": "fail", "arguments": {"n": 1}},
            {"id": "d", "tool": "spell", "arguments": {"n": {"$from": "f"}}},
            {"id": "dd", "tool": "length", "arguments": {"word": {"$from": "d"}}},
            {"id": "free", "tool": "number", "arguments": {"n": 2}},
        ],
        "return": ["d", "free"],
    }
    result = Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan))
    steps = plan_steps(result)
    assert {key: (value.status, value.error and value.error.code) for key, value in steps.items()} == {
        "f": ("failed", "tool_error"),
        "d": ("failed", "not_run"),
        "dd": ("failed", "not_run"),
        "free": ("succeeded", None),
    }
    assert steps["dd"].call_id == "p/dd" and "'d'" in (steps["dd"].error.message if steps["dd"].error else "")
    read = json.loads(result.text())
    assert read["return"] == {"free": 2} and read["steps"][1]["error"].startswith("Step 'd' did not run")
    assert [call_id for call_id, _ in log.calls] == ["p/free"]


def liar_box(log: Log) -> Toolbox:
    """The typed tools, a plan tool, and ``liar``, whose output schema says int where it returns text."""

    @tool
    def liar() -> int:
        """Says int, returns text."""
        return "seven"  # type: ignore[return-value]

    box = plan_box(log, liar)
    return box


def test_a_value_an_output_schema_lied_about_is_refused_when_bound() -> None:
    log = Log()
    box = liar_box(log)
    plan = {
        "steps": [
            {"id": "l", "tool": "liar", "arguments": {}},
            {"id": "s", "tool": "spell", "arguments": {"n": {"$from": "l"}}},
        ],
        "return": ["s"],
    }
    steps = plan_steps(Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan)))
    assert (steps["s"].status, steps["s"].error and steps["s"].error.code) == ("failed", "invalid_arguments")
    assert log.calls == []


# --- bad input -----------------------------------------------------------------------------------


def refusal(box: Toolbox, plan: Any, **dispatcher_options: Any) -> tuple[str, dict[str, Any], str]:
    result = Dispatcher(box, **dispatcher_options).dispatch(ToolCall("p", "run_plan", plan))
    assert result.status == "failed" and result.error is not None
    return result.error.code, result.error.details or {}, result.error.message


def test_duplicate_ids_a_cycle_and_unknown_returns_are_refused_where_they_are() -> None:
    log = Log()
    box = plan_box(log)
    twice = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": 1}}] * 2, "return": []}
    assert refusal(box, twice)[1]["pointer"] == "/steps/1/id"
    cycle = {
        "steps": [
            {"id": "a", "tool": "number", "arguments": {"n": {"$from": "b"}}},
            {"id": "b", "tool": "number", "arguments": {"n": {"$from": "a"}}},
        ],
        "return": [],
    }
    assert refusal(box, cycle)[1]["pointer"] == "/steps/0/arguments/n/$from"
    itself = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": {"$from": "a"}}}], "return": []}
    assert refusal(box, itself)[1]["pointer"] == "/steps/0/arguments/n/$from"
    unknown = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": 1}}], "return": ["a", "zz"]}
    assert refusal(box, unknown)[1]["pointer"] == "/return/1"
    assert log.calls == []


def test_a_plan_past_max_steps_is_refused_by_the_schema_and_a_long_one_is_checked_whole() -> None:
    log = Log()
    long_plan = {
        "steps": [{"id": f"s{i}", "tool": "number", "arguments": {"n": i}} for i in range(10_000)],
        "return": [],
    }
    code, details, _ = refusal(plan_box(log), long_plan)
    assert (code, details["keyword"]) == ("invalid_arguments", "maxItems")
    long_plan["steps"][-1]["arguments"]["n"] = {"$from": "s10000"}  # the very last step is wrong
    code, details, _ = refusal(plan_box(log, max_steps=10_000), long_plan)
    assert (code, details["pointer"]) == ("invalid_arguments", "/steps/9999/arguments/n/$from")
    assert log.calls == []


def test_pointers_are_checked_against_the_output_schema_however_deep() -> None:
    log = Log()
    box = plan_box(log)
    deep = "/" + "/".join(["x"] * 2_000)
    for pointer in (deep, "/number/0", "/nothing", "number"):
        plan = {
            "steps": [
                {"id": "p", "tool": "pair", "arguments": {"n": 1, "word": "w"}},
                {"id": "s", "tool": "spell", "arguments": {"n": {"$from": "p", "at": pointer}}},
            ],
            "return": [],
        }
        code, details, message = refusal(box, plan)
        assert code == "invalid_arguments" and details["step"] == "s", (pointer, message)
        assert len(message) < 1_000
    assert log.calls == []


def test_a_secret_in_a_steps_output_reaches_neither_the_model_nor_the_next_step() -> None:
    secret = "sk-live-0123456789abcdef"
    received: list[str] = []

    @tool
    def token(key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Return the key (a careless tool)."""
        return key

    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        received.append(text)
        return text

    box = Toolbox([token, echo])
    box.plan_tool()
    plan = {
        "steps": [
            {"id": "t", "tool": "token", "arguments": {}},
            {"id": "e", "tool": "echo", "arguments": {"text": {"$from": "t"}}},
        ],
        "return": ["t", "e"],
    }
    result = Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan), inject={"api_key": secret})
    assert result.status == "succeeded"
    assert secret[:8] not in msgspec.json.encode(result).decode()
    assert all(secret[:8] not in text for text in received)


def test_a_plan_cannot_call_the_plan_tool_or_a_search_tool() -> None:
    log = Log()
    box = Toolbox(typed_tools(log))
    box.search_tool()
    box.plan_tool()
    names = [
        b["properties"]["tool"]["const"] for b in box["run_plan"].input_schema["properties"]["steps"]["items"]["anyOf"]
    ]
    assert "run_plan" not in names and "search_tools" not in names
    with pytest.raises(ValueError, match="search or plan tool"):
        box.plan_tool(name="again", tools=["run_plan"])


def test_a_wrong_literal_is_explained_by_its_tools_own_schema() -> None:
    log = Log()
    box = plan_box(log)
    plan = {
        "steps": [
            {"id": "a", "tool": "number", "arguments": {"n": 1}},
            {"id": "b", "tool": "pair", "arguments": {"n": {"$from": "a"}, "word": 5}},
        ],
        "return": [],
    }
    code, details, message = refusal(box, plan)
    assert (code, details["pointer"], details["keyword"]) == ("invalid_arguments", "/steps/1/arguments/word", "type")
    assert "expected string" in message and "anyOf" not in message
    unknown = {"steps": [{"id": "a", "tool": "numbr", "arguments": {"n": 1}}], "return": []}
    code, details, message = refusal(box, unknown)
    assert (details["pointer"], details["keyword"]) == ("/steps/0/tool", "enum") and '"number"' in message
    assert log.calls == []


# --- what an adversary tried ------------------------------------------------------------------


class SendsTo:
    """A before-middleware that moves every call of one tool to another tool."""

    def __init__(self, source: str, target: str, arguments: dict[str, Any]):
        self.source, self.target, self.arguments = source, target, arguments

    def before_tool(self, call: ToolCall, tool: Any) -> ToolCall | None:
        return ToolCall(call.id, self.target, self.arguments) if call.name == self.source else None


def test_a_step_a_middleware_moves_to_a_tool_that_needs_approval_is_put_to_the_approver() -> None:
    log = Log()
    asked: list[str] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request.tool.name)
        return Approval.deny("no")

    middleware = [SendsTo("number", "refund", {"amount": 999}), PolicyMiddleware(require_approval(approver))]
    plan = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": 1}}], "return": ["a"]}
    result = Dispatcher(approval_box(log), middleware=middleware).dispatch(ToolCall("p", "run_plan", plan))
    assert (asked, log.calls) == (["refund"], [])
    assert plan_steps(result)["a"].error is not None and plan_steps(result)["a"].error.code == "policy_denied"


def test_a_step_a_middleware_moves_to_the_plan_tool_is_refused() -> None:
    log = Log()
    inner = {"steps": [{"id": "r", "tool": "refund", "arguments": {"amount": 77}}], "return": []}
    middleware = [SendsTo("spell", "run_plan", inner), PolicyMiddleware(require_approval(lambda request: True))]
    plan = {"steps": [{"id": "a", "tool": "spell", "arguments": {"n": 1}}], "return": []}
    result = Dispatcher(approval_box(log), middleware=middleware).dispatch(ToolCall("p", "run_plan", plan))
    assert (
        log.calls == []
        and "cannot be a step of another plan" in (plan_steps(result)["a"].error or ToolError("")).message
    )  # type: ignore[union-attr]


def test_the_approver_of_a_plan_is_told_each_step_that_needs_approval() -> None:
    log = Log()
    seen: list[ApprovalRequest] = []
    middleware = [PolicyMiddleware(require_approval(lambda request: seen.append(request) or True))]
    Dispatcher(approval_box(log), middleware=middleware).dispatch(ToolCall("p", "run_plan", REFUND_PLAN))
    (request,) = seen
    assert [(step.tool.name, step.arguments, step.call.id) for step in request.steps] == [
        ("refund", {"amount": {"$from": "a"}}, "p/r")
    ]
    assert all(step.policy.access.approval_required for step in request.steps)


class Tree(TypedDict):
    value: int
    left: Tree | None
    right: Tree | None


def test_a_recursive_output_schema_is_compared_in_linear_time() -> None:
    @tool
    def grow(depth: int) -> Tree:
        """A tree."""
        return {"value": depth, "left": None, "right": None}

    @tool
    def take(tree: Tree) -> int:
        """Read a tree."""
        return tree["value"]

    @tool
    def take_number(n: int) -> int:
        """Read a number."""
        return n

    box = Toolbox([grow, take, take_number])
    box.plan_tool()
    plan = {
        "steps": [
            {"id": "g", "tool": "grow", "arguments": {"depth": 3}},
            {"id": "t", "tool": "take", "arguments": {"tree": {"$from": "g"}}},
            {"id": "v", "tool": "take_number", "arguments": {"n": {"$from": "g", "at": "/left/left/value"}}},
        ],
        "return": ["t"],
    }
    result = Dispatcher(box).dispatch(ToolCall("p", "run_plan", plan))
    assert json.loads(result.text())["return"] == {"t": 3}
    missing = plan_steps(result)["v"]  # the schema allows the path; this tree has no left branch
    assert missing.error is not None and missing.error.code == "not_run" and "/left/left/value" in missing.error.message
    plan["steps"][1]["arguments"] = {"tree": {"$from": "g", "at": "/value"}}
    code, details, _ = refusal(box, plan)
    assert (code, details["step"]) == ("invalid_arguments", "t")


def test_returned_outputs_past_the_budget_give_way_to_a_note_and_every_step_is_kept() -> None:
    @tool
    def big(n: int) -> str:
        """A long text."""
        return "x" * 900

    box = Toolbox([big])
    box.plan_tool()
    plan = {"steps": [{"id": f"b{i}", "tool": "big", "arguments": {"n": i}} for i in range(5)], "return": ["b0", "b4"]}
    result = Dispatcher(box, max_inline_output_bytes=1000).dispatch(ToolCall("p", "run_plan", plan))
    assert result.status == "succeeded" and len(result.text().encode()) <= 1000
    assert "the application has it" in json.loads(result.text())["return"]["b0"]
    assert [item.output for item in plan_steps(result).values()] == ["x" * 900] * 5


def test_an_output_moved_to_the_artifact_store_is_read_back_for_the_next_step() -> None:
    from tinytools import MemoryArtifactStore

    @tool
    def big(n: int) -> Pair:
        """A large pair."""
        return {"number": n, "word": "w" * 5000}

    log = Log()
    box = plan_box(log, big)
    plan = {
        "steps": [
            {"id": "b", "tool": "big", "arguments": {"n": 4}},
            {"id": "l", "tool": "length", "arguments": {"word": {"$from": "b", "at": "/word"}}},
        ],
        "return": ["l"],
    }
    dispatcher = Dispatcher(box, max_inline_output_bytes=1000, artifacts=MemoryArtifactStore())
    assert json.loads(dispatcher.dispatch(ToolCall("p", "run_plan", plan)).text())["return"] == {"l": 5000}


def test_a_cancelled_run_ends_every_step_of_its_plan_with_a_result() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def hold(n: int) -> int:
        """Wait until released."""
        started.set()
        release.wait(GENEROUS)
        return n

    log = Log()
    box = plan_box(log, hold)
    plan = {
        "steps": [
            {"id": "h", "tool": "hold", "arguments": {"n": 1}},
            {"id": "after", "tool": "number", "arguments": {"n": {"$from": "h"}}},
        ],
        "return": [],
    }
    dispatcher = Dispatcher(box)

    def cancel_when_started() -> None:
        started.wait(GENEROUS)
        dispatcher.cancel()
        release.set()

    threading.Thread(target=cancel_when_started).start()
    result = dispatcher.dispatch(ToolCall("p", "run_plan", plan))
    steps = plan_steps(result)
    assert result.status == "succeeded" and list(steps) == ["h", "after"]
    assert steps["after"].status == "failed" and log.calls == []
    assert steps["h"].call_id == "p/h" and steps["after"].call_id == "p/after"


def test_under_invalid_args_fail_a_step_fed_a_wrong_value_fails_alone() -> None:
    box = liar_box(Log())
    plan = {
        "steps": [
            {"id": "l", "tool": "liar", "arguments": {}},
            {"id": "s", "tool": "spell", "arguments": {"n": {"$from": "l"}}},
            {"id": "x", "tool": "number", "arguments": {"n": 2}},
        ],
        "return": [],
    }
    result = Dispatcher(box, invalid_args="fail").dispatch(ToolCall("p", "run_plan", plan))
    steps = plan_steps(result)
    assert steps["s"].error is not None and steps["s"].error.code == "invalid_arguments"
    assert steps["x"].status == "succeeded"


def test_plans_in_one_batch_reserve_their_budget_and_share_the_serial_gate() -> None:
    log = Log()
    box = plan_box(log)
    two = {
        "steps": [
            {"id": "a", "tool": "number", "arguments": {"n": 1}},
            {"id": "b", "tool": "spell", "arguments": {"n": {"$from": "a"}}},
        ],
        "return": [],
    }
    first, second = Dispatcher(box, limits=Limits(max_tool_calls=5)).dispatch_many(
        [ToolCall("p1", "run_plan", two), ToolCall("p2", "run_plan", two)]
    )
    assert first.status == "succeeded" and all(item.status == "succeeded" for item in plan_steps(first).values())
    assert second.error is not None and (second.error.details or {})["pointer"] == "/steps"
    assert sorted(call_id for call_id, _ in log.calls) == ["p1/a", "p1/b"], "the refused plan ran nothing"

    running: list[int] = [0]
    most: list[int] = [0]
    lock = threading.Lock()

    @tool(parallel_safe=False)
    def alone(n: int) -> int:
        """A serial tool."""
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.05)
        with lock:
            running[0] -= 1
        return n

    serial_box = Toolbox([alone])
    serial_box.plan_tool()
    one = {"steps": [{"id": "s", "tool": "alone", "arguments": {"n": 1}}], "return": []}
    calls = [ToolCall("p1", "run_plan", one), ToolCall("p2", "run_plan", one), ToolCall("c", "alone", {"n": 3})]
    assert all(item.status == "succeeded" for item in Dispatcher(serial_box).dispatch_many(calls))
    assert most[0] == 1


def test_the_plan_tool_is_classified_so_a_classification_rule_lets_it_through() -> None:
    from tinytools.policy import require_classification

    log = Log()
    box = Toolbox([tool(policy=ToolPolicy.classified())(typed_tools(log)[0].fn)])
    box.plan_tool()
    plan = {"steps": [{"id": "a", "tool": "number", "arguments": {"n": 1}}], "return": ["a"]}
    result = Dispatcher(box, middleware=[PolicyMiddleware(require_classification())]).dispatch(
        ToolCall("p", "run_plan", plan)
    )
    assert result.status == "succeeded" and json.loads(result.text())["return"] == {"a": 1}


def test_a_chain_of_sync_steps_runs_on_the_callers_thread_from_sync_code_and_never_on_the_loop() -> None:
    threads: list[int] = []

    @tool
    def where(label: str) -> str:
        """Note the thread."""
        threads.append(threading.get_ident())
        return label

    box = Toolbox([where])
    box.plan_tool()
    chain = {
        "steps": [
            {"id": "a", "tool": "where", "arguments": {"label": "a"}},
            {"id": "b", "tool": "where", "arguments": {"label": {"$from": "a"}}},
        ],
        "return": [],
    }
    Dispatcher(box).dispatch(ToolCall("p", "run_plan", chain))
    assert threads == [threading.get_ident()] * 2
    threads.clear()

    async def from_a_loop() -> int:
        await Dispatcher(box).adispatch(ToolCall("p", "run_plan", chain))
        return threading.get_ident()

    loop_thread = asyncio.run(from_a_loop())
    assert len(threads) == 2 and loop_thread not in threads


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_step_runs_alone_exactly_when_every_other_step_comes_before_or_after_it(data: st.DataObject) -> None:
    from tinytools._run.call_plans import Step, _alone

    count = data.draw(st.integers(1, 9))
    steps = []
    for index in range(count):
        step = Step(index, f"s{index}", typed_tools(Log())[0], {}, False)
        step.depends = (
            data.draw(st.lists(st.sampled_from([f"s{i}" for i in range(index)]), unique=True)) if index else []
        )
        steps.append(step)

    def reach(start: str, edges: dict[str, list[str]]) -> set[str]:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            item = stack.pop()
            if item not in seen:
                seen.add(item)
                stack += edges[item]
        return seen

    up = {step.id: step.depends for step in steps}
    down: dict[str, list[str]] = {step.id: [] for step in steps}
    for step in steps:
        for source in step.depends:
            down[source].append(step.id)
    expected = {
        step.id for step in steps if reach(step.id, up) | reach(step.id, down) | {step.id} == {s.id for s in steps}
    }
    assert _alone(steps) == expected


# --- everywhere a tool goes ---------------------------------------------------------------------


def test_the_plan_tool_is_exported_to_every_provider_and_round_trips_every_text_format() -> None:
    from tinytools import ToolFormat
    from tinytools.formats import parse_calls, render_call, render_tools
    from tinytools.providers import anthropic, gemini, openai, openai_responses

    box = plan_box(Log())
    for module in (openai, openai_responses, anthropic, gemini):
        assert "run_plan" in json.dumps(module.export_tools(box)), module.__name__
    strict = openai.export_tools(box, strict=True)
    assert "run_plan" in json.dumps(strict)
    for syntax in ("json", "xml", "ptype"):
        form = ToolFormat(syntax)
        assert "run_plan" in render_tools(box, form)
        text = render_call(ToolCall("c", "run_plan", FLIGHT_PLAN), box["run_plan"], format=form)
        (parsed,) = parse_calls(text, box, format=form)
        assert parsed.arguments == FLIGHT_PLAN, syntax


def test_each_step_is_traced_as_a_child_of_the_plans_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tinytools import Tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dispatcher = Dispatcher(plan_box(Log()), tracing=Tracing(tracer_provider=provider))
    assert dispatcher.dispatch(ToolCall("p", "run_plan", FLIGHT_PLAN)).status == "succeeded"
    spans = {str((span.attributes or {})["gen_ai.tool.call.id"]): span for span in exporter.get_finished_spans()}
    plan_span = spans.pop("p")
    assert sorted(spans) == ["p/len", "p/n", "p/p", "p/sum"]
    assert all(span.parent is not None and span.parent.span_id == plan_span.context.span_id for span in spans.values())
    provider.shutdown()


def test_each_step_is_journaled_as_a_call_of_its_own(tmp_path: Path) -> None:
    log = Log()
    box = plan_box(log)
    journal = tmp_path / "journal.db"
    first = Dispatcher(box, journal=SQLiteJournal(journal), context=RunContext(run_id="r"))
    assert first.dispatch(ToolCall("p", "run_plan", FLIGHT_PLAN)).status == "succeeded"
    ran = len(log.calls)
    again = Dispatcher(box, journal=SQLiteJournal(journal), context=RunContext(run_id="r"))
    answered = again.dispatch(ToolCall("p/len", "length", {"word": "seven"}))  # the step's call: answered
    assert (answered.output, len(log.calls)) == (5, ran)
    other = again.dispatch(ToolCall("p/len", "length", {"word": "eight"}))  # its id, other arguments: refused
    assert (other.error and other.error.code, len(log.calls)) == ("duplicate_call_id", ran)


def test_the_argument_size_limit_covers_the_whole_plan() -> None:
    log = Log()
    result = Dispatcher(plan_box(log), limits=Limits(max_argument_bytes=200)).dispatch(
        ToolCall("p", "run_plan", json.dumps(FLIGHT_PLAN))
    )
    assert (result.error and result.error.code, log.calls) == ("arguments_too_large", [])


def test_async_hooks_and_sinks_of_a_plans_steps_run_on_the_callers_thread() -> None:
    seen: list[int] = []

    class Watching:
        async def before_tool(self, call: ToolCall, tool: Any) -> None:
            seen.append(threading.get_ident())

    async def sink(event: ToolEvent) -> None:
        seen.append(threading.get_ident())

    dispatcher = Dispatcher(plan_box(Log()), middleware=[Watching()], on_event=sink)
    assert dispatcher.dispatch(ToolCall("p", "run_plan", FLIGHT_PLAN)).status == "succeeded"
    assert len(seen) > 8 and set(seen) == {threading.get_ident()}


def test_a_step_missing_an_injected_value_raises_before_any_step_runs() -> None:
    from tinytools import InjectionError

    log = Log()

    @tool
    def who(n: int, user: Annotated[str, Injected("user")]) -> str:
        """Greet."""
        return f"{user}{n}"

    box = plan_box(log, who)
    plan = {
        "steps": [
            {"id": "a", "tool": "number", "arguments": {"n": 1}},
            {"id": "b", "tool": "who", "arguments": {"n": {"$from": "a"}}},
        ],
        "return": [],
    }
    dispatcher = Dispatcher(box, limits=Limits(max_tool_calls=3))
    with pytest.raises(InjectionError):
        dispatcher.dispatch(ToolCall("p", "run_plan", plan))
    assert log.calls == [] and dispatcher.calls == 1, "nothing ran, and no call of the budget was reserved"
