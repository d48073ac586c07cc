from __future__ import annotations

import asyncio
import threading
from typing import Any

import msgspec
import pytest

from tinytools import Dispatcher, Toolbox, ToolCall, ToolDenied, ToolEvent, dispatch, tool
from tinytools.policy import (
    Approval,
    ApprovalRequest,
    PolicyMiddleware,
    SideEffect,
    ToolPolicy,
    Workspace,
    deny_side_effects,
    enforce_result_bytes,
    require_approval,
    require_background_safe,
    require_classification,
    require_sandbox,
    strict,
)

RAN: list[str] = []


@tool(policy=ToolPolicy.read_only().with_access(background_safe=True))
def read_file(path: str) -> str:
    RAN.append("read_file")
    return f"contents of {path}"


@tool(policy=ToolPolicy.classified().with_side_effects(["shell", SideEffect.DESTRUCTIVE]))
def run_shell(command: str) -> str:
    RAN.append("run_shell")
    return "done"


@tool(policy=ToolPolicy.classified().with_side_effects(["writes_files"]).with_runtime(sandbox="required"))
def write_file(path: str, text: str) -> str:
    RAN.append("write_file")
    return "written"


@tool(policy=ToolPolicy.classified().with_access(workspace="read", trusted_roots=["/srv/data"]))
def scan(root: str) -> str:
    RAN.append("scan")
    return "scanned"


@tool(policy=ToolPolicy.classified().with_side_effects(["payment"]).with_access(approval_required=True))
def pay(amount: int) -> str:
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def unclassified() -> str:
    RAN.append("unclassified")
    return "ok"


@tool(policy=ToolPolicy.read_only().with_runtime(max_result_bytes=10))
def chatty() -> str:
    return "x" * 100


TOOLS = Toolbox([read_file, run_shell, write_file, scan, pay, unclassified, chatty])


@pytest.fixture(autouse=True)
def reset() -> None:
    RAN.clear()


def run(call: ToolCall, *rules: Any, workspace: Workspace | None = None) -> tuple[Any, list[ToolEvent]]:
    events: list[ToolEvent] = []
    dispatcher = Dispatcher(TOOLS, middleware=[PolicyMiddleware(*rules, workspace=workspace)], on_event=events.append)
    return dispatcher.dispatch(call), events


def denied_by(result: Any) -> str | None:
    if result.error is None or result.error.code != "policy_denied":
        return None
    return result.error.details["rule"]


def test_policy_is_fluent_and_serializable() -> None:
    policy = (
        ToolPolicy.classified()
        .with_side_effects(["network", SideEffect.EXTERNAL_SERVICE])
        .with_runtime(sandbox="preferred", timeout=5.0, max_retries=2, idempotent=True)
        .with_access(workspace="write", trusted_roots=["/tmp"], credentials=["github"], approval_required=True)
    )
    assert policy.is_classified
    assert policy.side_effects == {SideEffect.NETWORK, SideEffect.EXTERNAL_SERVICE}
    assert policy.access.credentials == ("github",)
    assert msgspec.json.decode(msgspec.json.encode(policy), type=ToolPolicy) == policy
    assert not ToolPolicy().is_classified
    assert ToolPolicy.read_only().side_effects == {SideEffect.READ_ONLY}
    with pytest.raises(ValueError):
        ToolPolicy.classified().with_side_effects(["teleport"])


def test_toolbox_policies_snapshot() -> None:
    policies = TOOLS.policies()
    assert set(policies) == set(TOOLS.names)
    assert policies["unclassified"] == ToolPolicy()
    assert policies["pay"].access.approval_required


@pytest.mark.parametrize(
    ("rule", "denied", "allowed"),
    [
        (require_classification(), ToolCall("1", "unclassified", "{}"), ToolCall("2", "read_file", '{"path": "a"}')),
        (
            deny_side_effects({"shell"}),
            ToolCall("1", "run_shell", '{"command": "ls"}'),
            ToolCall("2", "unclassified", "{}"),
        ),
        (
            require_sandbox(),
            ToolCall("1", "write_file", '{"path": "a", "text": "b"}'),
            ToolCall("2", "read_file", '{"path": "a"}'),
        ),
        (require_sandbox(), ToolCall("1", "scan", '{"root": "/srv/data"}'), ToolCall("2", "unclassified", "{}")),
        (require_background_safe(), ToolCall("1", "unclassified", "{}"), ToolCall("2", "read_file", '{"path": "a"}')),
        (enforce_result_bytes(), ToolCall("1", "chatty", "{}"), ToolCall("2", "read_file", '{"path": "a"}')),
    ],
    ids=["classification", "side_effects", "sandbox", "trusted_roots", "background", "result_bytes"],
)
def test_each_rule_denies_and_allows(rule: Any, denied: ToolCall, allowed: ToolCall) -> None:
    result, events = run(denied, rule)
    assert denied_by(result) == rule.name
    assert result.call_id == denied.id
    assert f"({rule.name})" in result.error.message
    if rule.name != "enforce_result_bytes":
        assert RAN == []
        assert any(isinstance(e, ToolDenied) and e.rule == rule.name for e in events)
    ok, _ = run(allowed, rule)
    assert ok.status == "succeeded"


def test_workspace_descriptor_satisfies_sandbox_rule() -> None:
    workspace = Workspace(sandboxed=True, trusted_roots=("/srv",))
    assert (
        run(ToolCall("1", "write_file", '{"path": "a", "text": "b"}'), require_sandbox(), workspace=workspace)[0].output
        == "written"
    )
    assert run(ToolCall("1", "scan", '{"root": "x"}'), require_sandbox(), workspace=workspace)[0].output == "scanned"
    elsewhere = Workspace(sandboxed=True, trusted_roots=("/srv/data-other",))
    assert denied_by(run(ToolCall("1", "scan", '{"root": "x"}'), require_sandbox(), workspace=elsewhere)[0])


def test_strict_denies_unclassified_tools() -> None:
    result, _ = run(ToolCall("1", "unclassified", "{}"), *strict())
    assert denied_by(result) == "require_classification"
    assert RAN == []


def test_approval_required_never_runs_without_an_approver() -> None:
    assert denied_by(dispatch(ToolCall("1", "pay", '{"amount": 5}'), TOOLS)) == "require_approval"
    assert denied_by(Dispatcher(TOOLS).dispatch(ToolCall("1", "pay", '{"amount": 5}'))) == "require_approval"
    assert denied_by(run(ToolCall("1", "pay", '{"amount": 5}'), require_classification())[0]) == "require_approval"
    assert denied_by(run(ToolCall("1", "pay", '{"amount": 5}'), *strict())[0]) is not None
    assert RAN == []


def approver_answering(answer: Approval, seen: list[ApprovalRequest]) -> Any:
    def approver(request: ApprovalRequest) -> Approval:
        seen.append(request)
        return answer

    return approver


def test_approve_deny_and_edit() -> None:
    seen: list[ApprovalRequest] = []
    result, _ = run(
        ToolCall("1", "pay", '{"amount": 5}'), require_approval(approver_answering(Approval.approve(), seen))
    )
    assert result.output == "paid 5" and RAN == ["pay 5"]
    assert seen[0].tool is pay and seen[0].arguments == {"amount": 5} and seen[0].policy == pay.policy

    RAN.clear()
    result, events = run(
        ToolCall("2", "pay", '{"amount": 500}'),
        require_approval(approver_answering(Approval.deny("over the limit"), [])),
    )
    assert denied_by(result) == "require_approval" and "over the limit" in result.error.message
    assert RAN == [] and any(isinstance(e, ToolDenied) for e in events)

    result, _ = run(
        ToolCall("3", "pay", '{"amount": 500}'), require_approval(approver_answering(Approval.edit({"amount": 50}), []))
    )
    assert result.output == "paid 50" and RAN == ["pay 50"]

    RAN.clear()
    result, _ = run(
        ToolCall("4", "pay", '{"amount": 500}'),
        require_approval(approver_answering(Approval.edit({"amount": "fifty"}), [])),
    )
    assert result.error is not None and result.error.code == "policy_denied"  # the approver's edit, not the model's
    assert RAN == []


def test_async_approver() -> None:
    async def approver(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(0)
        return Approval.approve() if request.arguments["amount"] < 10 else Approval.deny("too much")

    assert run(ToolCall("1", "pay", '{"amount": 5}'), require_approval(approver))[0].output == "paid 5"
    assert denied_by(run(ToolCall("2", "pay", '{"amount": 50}'), require_approval(approver))[0])


def test_approver_that_raises_or_times_out_denies() -> None:
    def broken(request: ApprovalRequest) -> Approval:
        raise RuntimeError("approval service down")

    result, _ = run(ToolCall("1", "pay", '{"amount": 5}'), require_approval(broken))
    assert denied_by(result) == "require_approval" and "down" not in result.error.message

    release = threading.Event()

    def slow(request: ApprovalRequest) -> Approval:
        release.wait(5)
        return Approval.approve()

    result, _ = run(ToolCall("2", "pay", '{"amount": 5}'), require_approval(slow, timeout=0.05))
    release.set()
    assert denied_by(result) == "require_approval" and "in time" in result.error.message

    async def never(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(10)
        return Approval.approve()

    result, _ = run(ToolCall("3", "pay", '{"amount": 5}'), require_approval(never, timeout=0.05))
    assert denied_by(result) == "require_approval"
    assert RAN == []


def test_exposure_and_execution_agree() -> None:
    dispatcher = Dispatcher(
        TOOLS, middleware=[PolicyMiddleware(require_classification(), deny_side_effects({"shell"}))]
    )
    visible = {t.name for t in dispatcher.visible_tools()}
    assert visible == {"read_file", "write_file", "scan", "chatty"}  # pay needs an approver; none configured
    for name in set(TOOLS.names) - visible:
        arguments = {"unclassified": "{}", "run_shell": '{"command": "ls"}', "pay": '{"amount": 1}'}[name]
        assert denied_by(dispatcher.dispatch(ToolCall("x", name, arguments))) is not None
    assert RAN == []
    assert {t.name for t in dispatcher.visible_tools(["read_file", "run_shell"])} == {"read_file"}
