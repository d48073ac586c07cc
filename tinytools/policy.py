"""Tool safety policies as declared data: what a tool may do, and what the application allows.

Each tool declares what it may do (`ToolPolicy`); the application decides what it allows
(`PolicyMiddleware`, built from `Rule` s). Both are data here: the dispatcher enforces them
(`tinytools._run.policy_enforcement`) twice, when tools are advertised (`Dispatcher.visible_tools`) and
when a call arrives, since a model can name a tool it was never shown. A tool that needs
approval never runs without an approver: fail closed.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, Protocol

import msgspec

from tinytools._results import ToolCall, ToolResult

__all__ = [
    "Access",
    "Approval",
    "ApprovalRequest",
    "Declared",
    "PolicyMiddleware",
    "Rule",
    "Runtime",
    "SideEffect",
    "ToolPolicy",
    "Workspace",
    "deny_side_effects",
    "enforce_result_bytes",
    "require_approval",
    "require_background_safe",
    "require_classification",
    "require_sandbox",
    "strict",
]


class SideEffect(str, enum.Enum):
    """What a tool may do to the world."""

    READ_ONLY = "read_only"
    WRITES_FILES = "writes_files"
    NETWORK = "network"
    SHELL = "shell"
    INSTALLS_DEPENDENCIES = "installs_dependencies"
    DESTRUCTIVE = "destructive"
    EXTERNAL_SERVICE = "external_service"
    PAYMENT = "payment"


class Runtime(msgspec.Struct, frozen=True, omit_defaults=True):
    """How a tool should run."""

    sandbox: Literal["none", "preferred", "required"] = "none"
    """Whether it needs a sandbox."""
    max_result_bytes: int | None = None
    """Largest encoded output it may return."""
    timeout: float | None = None
    """Seconds it may run."""
    max_retries: int | None = None
    """How often it may be retried."""
    idempotent: bool | None = None
    """Whether repeating it is harmless."""


class Access(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a tool may reach."""

    workspace: Literal["none", "read", "write"] = "none"
    """Access to the application's workspace."""
    trusted_roots: tuple[str, ...] = ()
    """Paths it needs, which the workspace must trust."""
    credentials: tuple[str, ...] = ()
    """Named credentials it uses."""
    approval_required: bool = False
    """Whether each call needs an approver's yes."""
    background_safe: bool = False
    """Whether it may run with nobody watching."""


class ToolPolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a tool declares it may do; serializable, and built fluently.

    ``ToolPolicy.read_only()``, or ``ToolPolicy.classified().with_side_effects(["network"])
    .with_runtime(sandbox="required").with_access(approval_required=True)``. A tool that
    declares nothing has ``ToolPolicy()``, which is unclassified.
    """

    is_classified: bool = False
    """Whether the tool's author stated its side effects at all."""
    side_effects: frozenset[SideEffect] = frozenset()
    """The side effects it may have."""
    runtime: Runtime = Runtime()
    """How it should run."""
    access: Access = Access()
    """What it may reach."""

    @classmethod
    def classified(cls) -> ToolPolicy:
        """A classified policy with no side effects declared yet."""
        return cls(is_classified=True)

    @classmethod
    def read_only(cls) -> ToolPolicy:
        """A classified policy of a tool that only reads."""
        return cls(is_classified=True, side_effects=frozenset({SideEffect.READ_ONLY}))

    def with_side_effects(self, effects: Iterable[str | SideEffect]) -> ToolPolicy:
        """This policy, classified, with these side effects added."""
        added = frozenset(SideEffect(effect) for effect in effects)
        return msgspec.structs.replace(self, is_classified=True, side_effects=self.side_effects | added)

    def with_runtime(self, **options: Any) -> ToolPolicy:
        """This policy with runtime options changed (``sandbox``, ``max_result_bytes``, ...)."""
        return msgspec.structs.replace(self, runtime=msgspec.structs.replace(self.runtime, **options))

    def with_access(self, **options: Any) -> ToolPolicy:
        """This policy with access options changed (``workspace``, ``approval_required``, ...)."""
        options = {k: tuple(v) if k in ("trusted_roots", "credentials") else v for k, v in options.items()}
        return msgspec.structs.replace(self, access=msgspec.structs.replace(self.access, **options))


class Declared(Protocol):
    """What rules read of a tool: its name and its policy (a `Tool` is one)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def policy(self) -> ToolPolicy:
        """What it declares."""
        ...


class Workspace(msgspec.Struct, frozen=True):
    """What the application provides: is a sandbox present, which roots are trusted."""

    sandboxed: bool = False
    """Whether tools run inside a sandbox."""
    trusted_roots: tuple[str, ...] = ()
    """Path prefixes tools may be given access to."""


class Approval(msgspec.Struct, frozen=True):
    """An approver's answer: approve, deny with a reason the model sees, edit the arguments, or defer."""

    decision: Literal["approve", "deny", "edit", "defer"]
    """What was decided."""
    reason: str = ""
    """Why it was denied (shown to the model), or what a deferred decision waits for."""
    arguments: dict[str, Any] | None = None
    """Replacement arguments (validated again)."""
    ttl: float | None = None
    """For a deferred decision: seconds it may wait (by default the dispatcher's ``pending_ttl``)."""

    @classmethod
    def approve(cls) -> Approval:
        """Let the call run as it is."""
        return cls("approve")

    @classmethod
    def deny(cls, reason: str) -> Approval:
        """Refuse the call; ``reason`` reaches the model."""
        return cls("deny", reason)

    @classmethod
    def defer(cls, message: str, *, ttl: float | None = None) -> Approval:
        """Decide later (a person decides): the call ends its turn ``pending`` with kind ``approval``.

        ``message`` says what is waited for; `Dispatcher.resume` takes the answer
        (``{"approved": true}`` or ``{"approved": false, "reason": "..."}``).
        """
        return cls("defer", message, ttl=ttl)

    @classmethod
    def edit(cls, arguments: dict[str, Any]) -> Approval:
        """Run the call with these arguments instead (they are validated again)."""
        return cls("edit", arguments=dict(arguments))


class ApprovalRequest(msgspec.Struct, frozen=True):
    """What an approver sees."""

    tool: Any
    """The `Tool` to be called."""
    policy: ToolPolicy
    """Its policy."""
    arguments: dict[str, Any]
    """The validated arguments, as JSON data: before conversion (a ``date`` is still its string)."""
    call: ToolCall
    """The call itself."""
    steps: tuple[ApprovalRequest, ...] = ()
    """For a call plan (`tool` the plan tool, `arguments` the whole plan): a request for each of its
    steps that needs approval, with its tool, policy, arguments (a reference to an earlier step's
    output as written, ``{"$from": ..., "at": ...}``) and call (its id ``<plan call id>/<step id>``).
    Empty for any other call. One answer decides the whole plan."""


Approver = Callable[[ApprovalRequest], "Approval | Awaitable[Approval]"]


class Rule(msgspec.Struct, frozen=True):
    """One named check; `PolicyMiddleware` applies rules in order."""

    name: str
    """Named in denials (``error.details["rule"]``) and events."""
    check: Callable[[Declared, Workspace], str | None] | None = None
    """Static check of a tool: the reason to deny it, or None (also used for exposure)."""
    approver: Approver | None = None
    """For the approval rule: who decides."""
    timeout: float = 30.0
    """For the approval rule: seconds to wait for the approver."""
    result_check: Callable[[Declared, ToolResult], str | None] | None = None
    """Check of a result after the call: the reason to refuse it, or None."""


def require_classification() -> Rule:
    """Deny tools whose policy is unclassified."""
    return Rule("require_classification", lambda tool, _: None if policy_of(tool).is_classified else _UNCLASSIFIED)


def deny_side_effects(effects: Iterable[str | SideEffect]) -> Rule:
    """Deny tools that declare any of these side effects."""
    denied = frozenset(SideEffect(effect) for effect in effects)

    def check(tool: Declared, _: Workspace) -> str | None:
        found = sorted(effect.value for effect in policy_of(tool).side_effects & denied)
        return f"its side effects ({', '.join(found)}) are not allowed here" if found else None

    return Rule("deny_side_effects", check)


def require_sandbox() -> Rule:
    """Deny tools that need a sandbox when none is present, or roots the workspace does not trust."""

    def check(tool: Declared, workspace: Workspace) -> str | None:
        policy = policy_of(tool)
        if policy.runtime.sandbox == "required" and not workspace.sandboxed:
            return "it needs a sandbox and none is present"
        untrusted = [root for root in policy.access.trusted_roots if not _within(root, workspace.trusted_roots)]
        if untrusted:
            return f"it needs roots the workspace does not trust: {', '.join(untrusted)}"
        return None

    return Rule("require_sandbox", check)


def require_approval(approver: Approver | None, timeout: float = 30.0) -> Rule:
    """Ask ``approver`` before each call of a tool whose policy says ``approval_required``."""
    return Rule("require_approval", approver=approver, timeout=timeout)


def enforce_result_bytes() -> Rule:
    """Refuse results larger than the tool's ``max_result_bytes``."""

    def check(tool: Declared, result: ToolResult) -> str | None:
        limit = policy_of(tool).runtime.max_result_bytes
        if limit is None or result.status != "succeeded":
            return None
        size = len(msgspec.json.encode(result.output))
        return f"its result is {size} bytes; the policy allows {limit}" if size > limit else None

    return Rule("enforce_result_bytes", result_check=check)


def require_background_safe() -> Rule:
    """Deny tools not marked ``background_safe`` (for dispatchers that run unattended)."""
    return Rule(
        "require_background_safe",
        lambda tool, _: None if policy_of(tool).access.background_safe else "it is not safe to run in the background",
    )


def strict(approver: Approver | None = None) -> list[Rule]:
    """Every rule, with ``approver`` for approval-required tools (None denies them)."""
    return [
        require_classification(),
        require_sandbox(),
        require_approval(approver),
        enforce_result_bytes(),
        require_background_safe(),
    ]


_UNCLASSIFIED = "its policy is unclassified; declare one with @tool(policy=ToolPolicy...)"


def policy_of(tool: Declared) -> ToolPolicy:
    """A tool's policy (unclassified when it declared none)."""
    policy = getattr(tool, "policy", None)
    return policy if isinstance(policy, ToolPolicy) else ToolPolicy()


def _within(root: str, trusted: tuple[str, ...]) -> bool:
    import posixpath

    normal = posixpath.normpath(root)
    return any(normal == t or normal.startswith(posixpath.normpath(t).rstrip("/") + "/") for t in trusted)


class PolicyMiddleware:
    """The application's rules, given to a `Dispatcher` among its middleware.

    ``PolicyMiddleware(require_classification(), deny_side_effects({"shell"}),
    workspace=Workspace(sandboxed=True))``; ``PolicyMiddleware(*strict(approver))`` for all.
    The dispatcher does not run it in list order like other middleware: its rules apply at the
    policy stage of every call, on the final validated arguments, after every before-middleware.
    """

    def __init__(self, *rules: Rule | Iterable[Rule], workspace: Workspace | None = None):
        flat: list[Rule] = []
        for rule in rules:
            flat.extend([rule] if isinstance(rule, Rule) else rule)
        self.rules = tuple(flat)
        self.workspace = workspace or Workspace()

    @property
    def approval(self) -> Rule | None:
        """The approval rule, if any."""
        return next((rule for rule in self.rules if rule.name == "require_approval"), None)

    def denial(self, tool: Declared) -> tuple[str, str] | None:
        """The first static rule that denies ``tool``: (rule, reason), or None."""
        for rule in self.rules:
            if rule.check is not None:
                reason = rule.check(tool, self.workspace)
                if reason is not None:
                    return rule.name, reason
        approval = self.approval
        if approval is not None and approval.approver is None and policy_of(tool).access.approval_required:
            return approval.name, "it needs approval and no approver is configured"
        return None

    def result_denial(self, tool: Declared, result: ToolResult) -> tuple[str, str] | None:
        """The first result rule that refuses ``result``: (rule, reason), or None."""
        for rule in self.rules:
            if rule.result_check is not None:
                reason = rule.result_check(tool, result)
                if reason is not None:
                    return rule.name, reason
        return None
