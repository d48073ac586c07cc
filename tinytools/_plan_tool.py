"""The plan tool: the model sends many tool calls as one plan, checked whole before its first step runs.

A plan is the arguments of one call of the plan tool::

    {"steps": [{"id": "find", "tool": "search_flights", "arguments": {"to": "OSL"}},
               {"id": "book", "tool": "book_flight",
                "arguments": {"flight_id": {"$from": "find", "at": "/offers/0/id"}}}],
     "return": ["book"]}

An argument written ``{"$from": <step id>, "at": <JSON pointer>}`` stands for (part of) an earlier
step's output (``at`` left out: all of it). The plan tool's input schema says all of this: ``steps``
is an array of one ``anyOf`` branch per tool a plan may call (its name a ``const``, its arguments that
tool's own properties, each of which may instead be a reference), so a strict provider can only
write well-formed plans, and the dispatcher enforces exactly what the model saw. Each tool's
``$defs`` are carried under the tool's name.

What the schema cannot say is checked by the run layer before any step runs
(`tinytools._run.call_plans`): step ids, references (backwards only, into an output schema that
fits the parameter), what this turn may call, policy, approval and budget.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from tinytools._context import PlanRun
from tinytools._errors import ArgumentsError, ToolDefinitionError, schema_failure
from tinytools._schema.fragments import def_name
from tinytools._schema.input_schema import InputSchema
from tinytools._schema.signatures import EMPTY, Injection, Slot
from tinytools._schema.validation_failures import escape
from tinytools._tool import Tool
from tinytools.policy import ToolPolicy

__all__ = ["PLANS", "PLAN_TOOL", "STEP_ID", "explained", "is_plan", "is_reference", "plan_tool"]

PLAN_TOOL = "run_plan"
"""The plan tool's default name."""
PLANS = "_tinytools_plans"
"""The mark a plan tool's function carries, whatever the tool is renamed to: its step tools by name."""
STEP_ID = "^[A-Za-z0-9_-]{1,64}$"
"""What a step id may be: it becomes part of the step's call id."""

_ROOT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "$defs", "title", "description"})
"""What a tool's input schema may say at its root for its arguments to be a plan step's (others it could not keep)."""
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are data: a ``$ref`` inside them is not a reference."""

REFERENCE = {
    "type": "object",
    "description": "(Part of) the output of an earlier step of this plan, in place of a value.",
    "properties": {
        "$from": {"type": "string", "description": "The id of an earlier step."},
        "at": {
            "type": "string",
            "description": "A JSON pointer into that step's output, such as /offers/0/id; left out: all of it.",
        },
    },
    "required": ["$from"],
    "additionalProperties": False,
}
"""An argument's value taken from an earlier step's output."""

DESCRIPTION = """\
Run several tool calls as one plan. Every step is checked before the first one runs: if any \
step is wrong, nothing runs and you are told which step and where. Each step is {"id", "tool", \
"arguments"}; in place of any argument's value you may write {"$from": "<id of an earlier step>", \
"at": "<JSON pointer into its output>"} (leave "at" out for the whole output). Steps that do not \
depend on each other may run at the same time. There are no loops or conditions: when what comes \
next depends on what a step returns, return that step and send another plan. You read each \
step's status, and the outputs of the steps listed in "return" only. Example (the tool names are \
illustrative): {"steps": [{"id": "find", "tool": "search_flights", "arguments": {"to": "OSL"}}, \
{"id": "book", "tool": "book_flight", "arguments": {"flight_id": {"$from": "find", "at": \
"/offers/0/id"}}}], "return": ["book"]}"""


def is_plan(tool: Tool[..., Any]) -> bool:
    """Whether ``tool`` is a plan tool made by `plan_tool` (under any name)."""
    return getattr(tool.fn, PLANS, None) is not None


def plan_tool(tools: Iterable[Tool[..., Any]], *, name: str = PLAN_TOOL, max_steps: int = 20) -> Tool[..., Any]:
    """A plan tool whose steps may call ``tools`` (see `Toolbox.plan_tool`).

    Raises:
        ValueError: ``max_steps`` is below 1, or there is no tool to plan with.
        ToolDefinitionError: A tool's arguments cannot be a step's (a schema that says more at its
            root than its properties, or a reference outside its ``$defs``).
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps is how many steps a plan may have, at least 1, not {max_steps!r}")
    branches = []
    definitions: dict[str, Any] = {"reference": REFERENCE}
    tools = list(tools)
    for each in tools:
        branch, carried = _step_schema(each)
        branches.append(branch)
        definitions.update(carried)
    if not branches:
        raise ValueError("a plan tool needs at least one tool its steps may call")
    schema = {
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "description": "The calls to make, in order; a step may use the outputs of the steps before it.",
                "items": {"anyOf": branches},
                "minItems": 1,
                "maxItems": max_steps,
            },
            "return": {
                "type": "array",
                "description": "The ids of the steps whose outputs you need to read.",
                "items": {"type": "string"},
            },
        },
        "required": ["steps", "return"],
        "additionalProperties": False,
        "$defs": definitions,
    }
    keyword = inspect.Parameter.KEYWORD_ONLY
    slots = (
        Slot("steps", kind=keyword, default=EMPTY),
        Slot("return", kind=keyword, default=EMPTY, parameter="returns"),
        Slot("plan", kind=keyword, default=EMPTY, injection=Injection("plan", "plan")),
    )
    chosen: dict[str, Tool[..., Any]] = {}
    made = Tool(
        _plan_function(chosen), name=name, description=DESCRIPTION, input_schema=InputSchema.parse(schema, copy=False),
        slots=slots, policy=ToolPolicy.classified(),
    )  # fmt: skip
    chosen.update((each.name, each) for each in tools)
    return made


def _plan_function(tools: dict[str, Tool[..., Any]]) -> Any:
    """A function of its own for each plan tool: it carries the plan tool's mark, its step tools."""

    async def run_plan(*, steps: Any = None, returns: Any = None, plan: PlanRun) -> Any:
        return await plan.run(steps, returns)

    run_plan.__dict__[PLANS] = tools
    return run_plan


def explained(plan: Tool[..., Any], problem: ArgumentsError, arguments: Any) -> ArgumentsError:
    """A plan its schema refused, explained by the step's own tool where the plan's schema says only ``anyOf``.

    An argument of a step may be a value or a reference, so its schema is an ``anyOf`` of the two,
    and a wrong value fails them both. The step's literal arguments, checked by its own tool's
    schema, say what is wrong with the value (its type, its bound, its pattern).
    """
    pointer = problem.pointer
    if problem.keyword != "anyOf" or not pointer.startswith("/steps/"):
        return problem
    index, _, rest = pointer[len("/steps/") :].partition("/")
    steps = arguments.get("steps") if isinstance(arguments, dict) else None
    if not (rest.startswith("arguments/") and index.isdigit() and isinstance(steps, list) and int(index) < len(steps)):
        return problem
    step = steps[int(index)]
    tool = getattr(plan.fn, PLANS, {}).get(step.get("tool")) if isinstance(step, dict) else None
    given = step.get("arguments") if tool is not None else None
    if not isinstance(given, dict):
        return problem
    literal = {key: value for key, value in given.items() if not is_reference(value)}
    found = tool.schema.check(literal)  # type: ignore[union-attr]
    for error in found.errors if found is not None else ():
        if error.keyword != "required":  # a reference stands for a required value left out here
            at = f"/steps/{index}/arguments{error.pointer}"
            return schema_failure(error.reason, at, error.keyword, problem.parameter, error.schema)
    return problem


def is_reference(value: Any) -> bool:
    """Whether an argument's value stands for an earlier step's output: an object of ``$from`` and ``at`` only."""
    return value.__class__ is dict and "$from" in value and value.keys() <= _REFERENCE_KEYS


_REFERENCE_KEYS = frozenset({"$from", "at"})


def _step_schema(tool: Tool[..., Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``anyOf`` branch of one tool's steps, and the definitions it carries (renamed under the tool's name)."""
    schema = tool.input_schema
    extra = set(schema) - _ROOT_KEYWORDS
    if extra:
        raise ToolDefinitionError(
            f"tool {tool.name!r} cannot be a plan step: its schema says {', '.join(sorted(extra))} of its "
            "arguments as a whole, which a step's arguments could not keep; leave it out of the plan tool (tools=)"
        )
    prefix = f"{tool.name}."
    carried = {prefix + key: _renamed(value, prefix) for key, value in schema.get("$defs", {}).items()}
    properties = {
        key: {"anyOf": [_renamed(value, prefix), {"$ref": "#/$defs/reference"}]}
        for key, value in schema.get("properties", {}).items()
    }
    arguments: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        arguments["required"] = list(schema["required"])
    arguments["additionalProperties"] = False
    branch = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": STEP_ID},
            "tool": {"const": tool.name},
            "arguments": arguments,
        },
        "required": ["id", "tool", "arguments"],
        "additionalProperties": False,
    }
    return branch, carried


def _renamed(node: Any, prefix: str) -> Any:
    """A subschema with its references into ``$defs`` renamed under ``prefix`` (any other reference refused)."""
    if isinstance(node, list):
        return [_renamed(item, prefix) for item in node]
    if not isinstance(node, dict):
        return node
    renamed: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            name = def_name(value)
            if name is None:
                raise ToolDefinitionError(
                    f"a plan step cannot carry the reference {value!r}: only references into $defs are carried"
                )
            renamed[key] = "#/$defs/" + escape(prefix + name)
        elif key == "$anchor":  # references to it are pointers already; two tools may name one anchor alike
            continue
        elif key in _DATA_KEYWORDS:
            renamed[key] = value
        elif key == "properties" and isinstance(value, dict):
            renamed[key] = {name: _renamed(schema, prefix) for name, schema in value.items()}
        else:
            renamed[key] = _renamed(value, prefix)
    return renamed
