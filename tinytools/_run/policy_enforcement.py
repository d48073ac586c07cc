"""Policy enforcement: the application's rules, decided once per tool, and approvers asked per call.

`PolicyEnforcement` reads the `PolicyMiddleware` objects a dispatcher was given. Static rules depend on the
tool alone, so their decision is made once, when the tool's plan is made. An approver is asked
on every call of a tool whose policy says ``approval_required``, with the call's final, validated
arguments (after middleware, after strict mode's nulls were restored), bounded by the rule's
timeout; a sync approver waits on a pool thread, never on the event loop. A tool that needs
approval never runs without an approver's yes: with no approver configured it is denied. An
edit is read against the tool's canonical schema (`tinytools._run.edits`); one that does not fit
denies the call (`refused_edit`): the model's arguments were valid, so it is not asked to repair
them, and the problem is logged for the application.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tinytools._errors import ArgumentsError
from tinytools._run.failures import logger
from tinytools._run.jobs import CANCELLED, RAISED, RETURNED, TIMEOUT, Job, Outcome
from tinytools.policy import Approval, ApprovalRequest, PolicyMiddleware, Rule, policy_of

if TYPE_CHECKING:
    from tinytools._context import CancellationToken
    from tinytools._results import ToolCall, ToolResult
    from tinytools._run.drivers import Driver
    from tinytools._tool import Tool

__all__ = ["EDIT_REFUSED", "NO_APPROVER", "Decision", "PolicyEnforcement", "ask", "refused_edit"]

NO_APPROVER = "it needs approval and no approver is configured"
EDIT_REFUSED = "the approver's edit of the arguments does not fit the tool"


class Decision:
    """An approver's answer as the pipeline reads it.

    ``approve``, ``deny`` (with a reason the model reads), ``edit`` (new arguments, validated
    again against the canonical schema), ``defer`` (decided later: the reason says what is
    waited for, ``ttl`` for how long) or ``cancelled`` (the run was).
    """

    __slots__ = ("arguments", "kind", "reason", "ttl")

    def __init__(self, kind: str, reason: str = "", arguments: dict[str, Any] | None = None, ttl: float | None = None):
        self.kind = kind
        self.reason = reason
        self.arguments = arguments
        self.ttl = ttl


class PolicyEnforcement:
    """The rules of one dispatcher (its `PolicyMiddleware` objects, in order)."""

    def __init__(self, middleware: Iterable[Any]):
        self.middleware = [m for m in middleware if isinstance(m, PolicyMiddleware)]
        approvers = [p.approval for p in self.middleware if p.approval is not None]
        self.approval_rule: Rule | None = next((rule for rule in approvers if rule.approver is not None), None)
        """The first approval rule with an approver: who decides approval-required tools."""

    def denial(self, tool: Tool[..., Any]) -> tuple[str, str] | None:
        """The (rule, reason) that denies every call of ``tool``, or None."""
        for policy in self.middleware:
            denied = policy.denial(tool)
            if denied is not None:
                return denied
        if tool.needs_approval and self.approval_rule is None:
            return "require_approval", NO_APPROVER
        return None

    def approval(self, tool: Tool[..., Any]) -> Rule | None:
        """The rule whose approver decides each call of ``tool``, or None when it needs none.

        A plan tool's calls may need it: its plans are approved as a whole when a step needs approval.
        """
        return self.approval_rule if tool.needs_approval or "plan" in tool.wants else None

    def result_denial(self, tool: Tool[..., Any], result: ToolResult) -> tuple[str, str] | None:
        """The (rule, reason) of the first result rule that refuses ``result``, or None."""
        for policy in self.middleware:
            denied = policy.result_denial(tool, result)
            if denied is not None:
                return denied
        return None


async def ask(
    rule: Rule,
    tool: Tool[..., Any],
    call: ToolCall,
    arguments: dict[str, Any],
    driver: Driver,
    token: CancellationToken,
    steps: tuple[ApprovalRequest, ...] = (),
) -> Decision:
    """Ask the rule's approver about one call, bounded by its timeout; whatever goes wrong denies.

    ``steps``: a call plan's steps that need approval (`ApprovalRequest.steps`).
    """
    approver = rule.approver
    assert approver is not None
    request = ApprovalRequest(tool, policy_of(tool), arguments, call, steps)
    is_async = inspect.iscoroutinefunction(approver) or inspect.iscoroutinefunction(
        getattr(approver, "__call__", None)  # noqa: B004 - a callable object's own method
    )
    job = Job(approver, (request,), {}, name=tool.name, is_async=is_async, timeout=rule.timeout, token=token)
    outcome = await _outcome(driver, job)
    if outcome.kind == RETURNED:
        answer = outcome.value
        if inspect.isawaitable(answer):  # a sync callable that returned a coroutine
            job = Job(_await, (answer,), {}, name=tool.name, is_async=True, timeout=rule.timeout, token=token)
            outcome = await _outcome(driver, job)
            if outcome.kind == RETURNED:
                return read_answer(outcome.value)
        else:
            return read_answer(answer)
    if outcome.kind == CANCELLED:
        return Decision("cancelled")
    if outcome.kind == TIMEOUT:
        return Decision("deny", "the approver did not answer in time")
    if outcome.kind == RAISED:
        logger().error("approver failed for tool %r", tool.name, exc_info=outcome.value)
    return Decision("deny", "the approver failed")


def read_answer(answer: Any) -> Decision:
    """What an approver's answer means; anything but a clear yes is a no (fail closed)."""
    if answer is True:
        return Decision("approve")
    if answer is False:
        return Decision("deny", "the approver said no")
    if not isinstance(answer, Approval):
        return Decision("deny", "the approver gave no answer")
    if answer.decision == "approve":
        return Decision("approve")
    if answer.decision == "edit":
        return Decision("edit", arguments=dict(answer.arguments or {}))
    if answer.decision == "defer":
        return Decision("defer", answer.reason or "a decision about this call", ttl=answer.ttl)
    return Decision("deny", answer.reason or "the approver said no")


def refused_edit(tool: str, problem: ArgumentsError) -> Decision:
    """The denial of a call whose approver edited its arguments into ones the tool's schema refuses.

    What is wrong is logged for the application; the model reads only that the approver's edit
    did not fit (its own arguments were valid).
    """
    logger().error("the approver's edit of a call to %r does not fit its schema: %s", tool, problem)
    return Decision("deny", EDIT_REFUSED)


async def _outcome(driver: Driver, job: Job) -> Outcome:
    outcome = driver.start(job)
    return outcome if outcome.__class__ is Outcome else await outcome  # type: ignore[misc]


async def _await(value: Any) -> Any:
    return await value
