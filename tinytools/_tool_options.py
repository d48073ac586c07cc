"""`ToolOptions`: everything ``@tool`` declares beyond a function's signature, as one value checked once.

`ToolOptions.read` checks what ``@tool(...)`` (or `Tool(...)`) was given against the tool it is
for (its schema, its injected parameters, whether it is async) and raises `ToolDefinitionError`
naming the tool and the fix; ``timeout``/``idempotent``/``retries`` are folded into the tool's
`ToolPolicy`, the one source of truth for how it runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from tinytools._errors import ToolDefinitionError
from tinytools._toolformat import ToolFormat
from tinytools.policy import SideEffect, ToolPolicy

__all__ = ["NAME_PATTERN", "ToolOptions", "check_name"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every provider accepts without escaping."""


def folded_runtime(
    policy: ToolPolicy, name: str, *, timeout: float | None, idempotent: bool, retries: int
) -> ToolPolicy:
    """The policy with ``@tool``'s runtime options folded in: the policy is the one source of truth.

    Raises:
        ToolDefinitionError: ``@tool`` and the policy say different things.
    """
    runtime = policy.runtime
    merged = {}
    for option, given, declared in (
        ("timeout", timeout, runtime.timeout),
        ("idempotent", idempotent or None, runtime.idempotent),
        ("max_retries", retries or None, runtime.max_retries),
    ):
        if given is not None and declared is not None and given != declared:
            raise ToolDefinitionError(
                f"@tool sets {option}={given!r} but its policy's runtime says {declared!r}; set it in one place",
                tool=name,
            )
        merged[option] = declared if given is None else given
    seconds = merged["timeout"]
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0):
        raise ToolDefinitionError(f"timeout must be a positive number of seconds, not {seconds!r}", tool=name)
    if merged == {"timeout": runtime.timeout, "idempotent": runtime.idempotent, "max_retries": runtime.max_retries}:
        return policy
    return policy.with_runtime(**merged)


def check_name(name: object) -> None:
    """Refuse a name a provider would not take as it is."""
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise ToolDefinitionError(
            "a tool name is 1 to 64 ASCII letters, digits, '_' or '-'; pass name=...",
            tool=repr(name) if not isinstance(name, str) else name[:80],
        )


def check_exposed(types: Any, tool_name: str) -> tuple[type[BaseException], ...]:
    """The ``expose_errors=`` classes, each an exception class."""
    exposed = tuple(types)
    for kind in exposed:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise ToolDefinitionError(f"expose_errors= takes exception classes, not {kind!r}", tool=tool_name)
    return exposed


def check_executor(executor: Any, tool_name: str, is_async: bool) -> str | None:
    """The ``executor=`` name; an async tool runs on the loop, so only ``"inline"`` fits it."""
    if executor is not None and (not isinstance(executor, str) or not executor):
        raise ToolDefinitionError(f"executor= takes the name of an executor, not {executor!r}", tool=tool_name)
    if is_async and executor not in (None, "inline"):
        raise ToolDefinitionError(
            f"an async tool runs on the dispatcher's event loop; executor={executor!r} is for sync tools",
            tool=tool_name,
        )
    return executor


def check_examples(examples: Any, schema: Any, name: str) -> tuple[dict[str, Any], ...]:
    """Whole-call examples, each one the tool's schema accepts (shown to providers that take them).

    Raises:
        ToolDefinitionError: ``examples`` is not a list of argument objects, or the schema
            refuses one (the message names which, and where).
    """
    if examples is None:
        return ()
    if isinstance(examples, (str, bytes, dict)) or not hasattr(examples, "__iter__"):
        raise ToolDefinitionError("examples= takes a list of whole calls' arguments (dicts)", tool=name)
    kept = []
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            raise ToolDefinitionError(f"example {index} is not an object of arguments: {example!r:.80}", tool=name)
        problem = schema.check(example)
        if problem is not None:
            raise ToolDefinitionError(f"example {index} does not match the tool's schema: {problem}", tool=name)
        kept.append(dict(example))
    return tuple(kept)


class ToolOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What ``@tool`` declares about a tool beyond its signature (see `tinytools.tool`)."""

    policy: ToolPolicy = ToolPolicy()
    """What the tool may do and how it runs; ``timeout``, ``idempotent`` and ``retries`` folded in."""
    parallel_safe: bool | None = None
    """What ``parallel_safe=`` said: None when nothing (safe, but `Toolbox.from_object` makes methods serial)."""
    enabled: Callable[[Any], bool] | None = None
    """Says, from the application's state, whether the tool is offered this turn."""
    validate_output: bool = False
    """Whether outputs are checked against the output schema."""
    format: ToolFormat = ToolFormat.json()
    """How the tool is shown, and its calls read, when a model calls tools through text."""
    executor: str | None = None
    """Where a `Dispatcher` runs it: None (its default), ``"inline"``, ``"process"`` or a name."""
    expose_errors: tuple[type[BaseException], ...] = ()
    """Exception types (besides `ToolError`) whose message the model may read."""
    external: bool = False
    """The application runs the tool elsewhere: a call ends its turn pending, answered with the output."""
    background: bool = False
    """A call runs on after its turn ends: pending (kind ``task``) until it finishes."""
    reconcile: Callable[..., Any] | None = None
    """Asked, after a crash, whether a call that started ever happened."""
    cache_ttl: float | None = None
    """Seconds a result may be reused for the same arguments (read-only tools)."""
    idempotency_key: Callable[[dict[str, Any]], Any] | None = None
    """What "the same act" is in the tool's domain: calls of a run whose arguments give the same key are one act."""
    defer: bool = False
    """Left out of exports until a search reveals it."""
    examples: tuple[dict[str, Any], ...] = ()
    """Whole-call examples of arguments, each accepted by the schema."""

    @property
    def outlives_turn(self) -> bool:
        """Whether a call may end its turn before the tool ran (an external or background tool's)."""
        return self.external or self.background

    @classmethod
    def read(
        cls,
        name: str,
        declared: dict[str, Any],
        *,
        schema: Any,
        has_output_schema: bool,
        injected: tuple[str, ...],
        is_async: bool,
    ) -> ToolOptions:
        """The options ``@tool`` was given for the tool ``name``, checked against it.

        Raises:
            ToolDefinitionError: An option is unknown, malformed, or contradicts another or the tool.
        """
        unknown = sorted(set(declared) - _DECLARED)
        if unknown:
            raise ToolDefinitionError(f"@tool takes no option {', '.join(unknown)}", tool=name)
        policy = folded_runtime(
            declared.get("policy") or ToolPolicy(), name, timeout=declared.get("timeout"),
            idempotent=bool(declared.get("idempotent", False)), retries=declared.get("retries", 0) or 0,
        )  # fmt: skip
        validate_output = bool(declared.get("validate_output", False))
        if validate_output and not has_output_schema:
            raise ToolDefinitionError(
                "validate_output=True needs an output schema: annotate the return type", tool=name
            )
        chosen = declared.get("format")
        shown = chosen if chosen is not None else ToolFormat.json()
        shown.check(name, schema.properties)
        outliving = _outliving(policy, name, declared, injected)
        return cls(
            policy=policy, parallel_safe=declared.get("parallel_safe"), enabled=declared.get("enabled"),
            validate_output=validate_output, format=shown,
            executor=check_executor(declared.get("executor"), name, is_async),
            expose_errors=check_exposed(declared.get("expose_errors", ()), name),
            defer=bool(declared.get("defer", False)),
            examples=check_examples(declared.get("examples"), schema, name), **outliving,
        )  # fmt: skip


_DECLARED = frozenset(
    {
        "timeout", "parallel_safe", "idempotent", "retries", "enabled", "validate_output", "policy", "format",
        "executor", "expose_errors", "external", "background", "reconcile", "cache_ttl", "idempotency_key",
        "defer", "examples",
    }
)  # fmt: skip
"""Every option ``@tool`` takes."""


def _outliving(policy: ToolPolicy, name: str, declared: dict[str, Any], injected: tuple[str, ...]) -> dict[str, Any]:
    """How the tool's calls may outlive their turn: checked against each other and the policy.

    Raises:
        ToolDefinitionError: The options contradict each other or the policy.
    """
    external, background = bool(declared.get("external", False)), bool(declared.get("background", False))
    reconcile, cache_ttl = declared.get("reconcile"), declared.get("cache_ttl")
    idempotency_key = declared.get("idempotency_key")
    if external and background:
        raise ToolDefinitionError("a tool is external or runs in the background, not both", tool=name)
    for option, value in (("reconcile", reconcile), ("idempotency_key", idempotency_key)):
        if value is not None and not callable(value):
            raise ToolDefinitionError(f"{option}= takes a function, not {value!r}", tool=name)
    if cache_ttl is not None and injected:
        raise ToolDefinitionError(
            "cache_ttl= reuses a result for every caller that sends the same arguments; this tool takes "
            f"per-call values ({', '.join(injected)}) that may differ between callers (a user, a session, "
            "an Invocation), so its results cannot be shared. Drop cache_ttl=, or cache inside the tool "
            "by what the value depends on",
            tool=name,
        )
    if cache_ttl is not None:
        if isinstance(cache_ttl, bool) or not isinstance(cache_ttl, (int, float)) or cache_ttl <= 0:
            raise ToolDefinitionError(f"cache_ttl must be a positive number of seconds, not {cache_ttl!r}", tool=name)
        if not (policy.is_classified and policy.side_effects <= {SideEffect.READ_ONLY}):
            raise ToolDefinitionError(
                "cache_ttl= reuses results, which only a read-only tool may do; declare policy=ToolPolicy.read_only()",
                tool=name,
            )
    ttl = None if cache_ttl is None else float(cache_ttl)
    return {
        "external": external, "background": background, "reconcile": reconcile, "cache_ttl": ttl,
        "idempotency_key": idempotency_key,
    }  # fmt: skip
