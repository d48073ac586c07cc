"""Admission: whether a call may start, and which tool it reaches.

In order: the run's cancellation and deadline, its call budget (each call spends one), the
argument size limit, then the lookup by name (aliases included). A name with no tool goes to the
unknown-tool policy; a `Rewrite` sends the call to its fallback, and the rewritten call is
admitted again, like any other: it spends the budget again and meets the allowlist. Last, the
per-turn allowlist. Admission reads nothing but the call's name and the size of its arguments.

An unknown name's message lists the tools the model may call this turn, and names the one it
probably meant (`tinytools._run.near_misses`): never a tool the allowlist hides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from time import perf_counter
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from tinytools._errors import ToolNotFound, shorten
from tinytools._public import publish
from tinytools._results import ToolCall, ToolResult
from tinytools._run.failures import failed, unknown_tool
from tinytools._run.limits import Limits
from tinytools._run.near_misses import closest_name
from tinytools._run.plans import Plan  # at run time: the docs read a Struct's field types
from tinytools._tool import is_search

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._tool import Tool
    from tinytools._toolbox import Toolbox

__all__ = ["Admission", "Admitted", "Rewrite", "UnknownToolPolicy", "check_unknown_policy"]


class Rewrite(msgspec.Struct, frozen=True):
    """Unknown-tool policy: send the call to ``tool`` instead (once)."""

    tool: str
    """The fallback tool's name."""


UnknownToolPolicy = Literal["return_error", "fail"] | Rewrite


class Admitted(msgspec.Struct):
    """A call that may start: its plan, the call as it reaches the tool, and the call as sent (a Struct, made in C)."""

    plan: Plan
    call: ToolCall
    """The call as the tool receives it (renamed by a `Rewrite` or an alias)."""
    sent: ToolCall
    """The call as the model sent it."""
    rewritten: bool = False
    """Whether the unknown-tool policy sent it to its fallback."""


class Revealed:
    """The deferred tools a run has revealed, in the order it revealed them; they only grow."""

    __slots__ = ("_names", "grows")

    def __init__(self, names: Iterable[str] = (), *, grows: bool = True):
        self._names: dict[str, None] = dict.fromkeys(names)
        self.grows = grows
        """False for a dispatcher that is no one run (the module-level default): nothing is kept."""

    def add(self, names: Iterable[str]) -> None:
        """Reveal these tools for the rest of the run."""
        if self.grows:
            for name in names:
                self._names.setdefault(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> tuple[str, ...]:
        """What was revealed, in order."""
        return tuple(self._names)


def not_revealed(call: ToolCall, tool: Tool[..., Any], toolbox: Toolbox, start: int) -> ToolResult:
    """The refusal of a call to a deferred tool this run never revealed (the model may repair it)."""
    searcher = next((item.name for item in toolbox if is_search(item)), None)
    how = "it was not revealed in this run" if searcher is None else f"search for it first with {searcher}"
    message = f"Tool {shorten(tool.name)!r} is not available yet: {how}."
    return failed(call, tool.name, "tool_not_allowed", message, start)


class Admission:
    """The admission stage of one dispatcher (see the module)."""

    def __init__(
        self,
        toolbox: Toolbox,
        limits: Limits,
        unknown: UnknownToolPolicy,
        token: CancellationToken,
        deadline_at: float | None,
        plan_for: Callable[[Tool[..., Any]], Plan],
        revealed: Revealed,
    ):
        self.toolbox = toolbox
        self.revealed = revealed
        self.limits = limits
        self.unknown = unknown
        self.token = token
        self.deadline_at = deadline_at
        self.plan_for = plan_for
        self.calls = 0
        """Calls admitted so far, recoveries included."""
        self.checked = True
        """Whether a call meets any check before its lookup (limits, a deadline, a cancellation)."""
        self.recheck()

    def admit(self, call: ToolCall, allowed: Iterable[str] | None, start: int) -> Admitted | ToolResult:
        """The plan and call to run, or the result that ends the call here.

        Raises:
            ToolNotFound: Only under ``unknown_tool="fail"``.
        """
        if self.checked:
            refusal = self.refusal(call, start)
            if refusal is not None:
                return refusal
        else:
            self.calls += 1
        sent, rewritten = call, False
        tool = self.toolbox.get(call.name)
        if tool is None:
            if self.unknown == "fail":
                names = self.callable_names()
                raise ToolNotFound(call.name, names, closest_name(call.name, _offered(names, allowed)))
            fallback = self.toolbox.get(self.unknown.tool) if isinstance(self.unknown, Rewrite) else None
            if fallback is None:
                return unknown_tool(call, _offered(self.callable_names(), allowed), start)
            call = ToolCall(call.id, fallback.name, call.arguments, call.invalid)
            refusal = self.refusal(call, start)  # the rewritten call is admitted like any other
            if refusal is not None:
                return refusal
            tool, rewritten = fallback, True
        elif tool.name != call.name:  # an alias: the tool, its results and events carry its own name
            call = ToolCall(call.id, tool.name, call.arguments, call.invalid)
        if allowed is not None and tool.name not in allowed:
            message = f"Tool {shorten(sent.name)!r} is not available in this turn."
            return failed(call, tool.name, "tool_not_allowed", message, start)
        if tool.defer and tool.name not in self.revealed:
            return not_revealed(call, tool, self.toolbox, start)
        return Admitted(self.plan_for(tool), call, sent, rewritten)

    def callable_names(self) -> list[str]:
        """The names a model may call in this run: a deferred tool's only once revealed."""
        return [tool.name for tool in self.toolbox if not tool.defer or tool.name in self.revealed]

    def recheck(self) -> None:
        """Note whether calls meet any check before their lookup (when the run is cancelled, they do)."""
        limits = self.limits
        self.checked = self.token.cancelled or self.deadline_at is not None or limits != Limits()

    def resolve(self, call: ToolCall) -> Tool[..., Any] | None:
        """The tool ``call`` would reach (through a `Rewrite` too), without admitting it."""
        tool = self.toolbox.get(call.name)
        if tool is None and isinstance(self.unknown, Rewrite):
            tool = self.toolbox.get(self.unknown.tool)
        return tool

    def refusal(self, call: ToolCall, start: int) -> ToolResult | None:
        """The result for a call the run's limits refuse (spending one call of the budget), or None."""
        stopped = self.stopped(call, call.name, start)
        if stopped is not None:
            return stopped
        self.calls += 1
        limit = self.limits.max_tool_calls
        if limit is not None and self.calls > limit:
            message = f"The run's budget of {limit} tool calls is spent; the call was not made."
            return failed(call, call.name, "budget_exhausted", message, start)
        size_limit = self.limits.max_argument_bytes
        if size_limit is not None and _argument_bytes(call.arguments, size_limit) > size_limit:
            message = f"The arguments are larger than {size_limit} bytes; send smaller arguments."
            return failed(call, call.name, "arguments_too_large", message, start)
        return None

    def stopped(self, call: ToolCall, name: str, start: int, *, retry: bool = False) -> ToolResult | None:
        """The result for a call (or a retry) that must not start now: the run was cancelled or its deadline passed."""
        if self.token.cancelled:
            outcome = "it was not tried again" if retry else "the call was not made"
            return failed(call, name, "cancelled", f"The run was cancelled; {outcome}.", start)
        if self.deadline_at is not None and perf_counter() > self.deadline_at:
            outcome = "it was not tried again" if retry else "the call was not made"
            return failed(call, name, "deadline_exceeded", f"The run's deadline has passed; {outcome}.", start)
        return None


def check_unknown_policy(policy: Any) -> UnknownToolPolicy:
    """``policy`` if it is an unknown-tool policy.

    Raises:
        ValueError: It is not one.
    """
    if policy in ("return_error", "fail") or isinstance(policy, Rewrite):
        return policy  # type: ignore[no-any-return]
    raise ValueError(f"unknown_tool must be 'return_error', 'fail' or Rewrite(name), not {policy!r}")


def _offered(names: list[str], allowed: Iterable[str] | None) -> list[str]:
    """The names the model may call this turn: an unknown-tool message names no other."""
    return names if allowed is None else [name for name in names if name in allowed]


def _argument_bytes(arguments: Any, limit: int) -> int:
    """The size of the arguments' JSON text, computing exactly only near the limit."""
    if isinstance(arguments, (bytes, bytearray, memoryview)):
        return len(arguments)
    if isinstance(arguments, str):
        return len(arguments) if len(arguments) * 4 <= limit else len(arguments.encode("utf-8", "surrogatepass"))
    try:
        return len(msgspec.json.encode(arguments))
    except (TypeError, ValueError, OverflowError):
        return 0  # not JSON: decoding refuses it
    except RecursionError:
        return limit + 1  # nested too deeply to measure: refused as too large


publish("tinytools", Rewrite)
