"""A secret is scrubbed wherever the library puts it: error codes, base64 at any offset, early results.

The boundary scrubs every model-facing string of a result, so a secret cannot ride in a
`ToolError`'s code (which the Gemini writer and the JSON and p-type formats show), in base64
that starts 0, 1 or 2 bytes into a longer ``bytes`` output (the model can decode it), or in a
result made before the tool's arguments were bound (an approver's denial, a before-middleware's
answer): the call's secrets are known from its injected values and defaults alone.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any

import pytest

from tinytools import Dispatcher, Injected, ToolCall, ToolError, ToolEvent, ToolFailed, ToolPolicy, ToolResult, tool
from tinytools._results import StructuredError
from tinytools.policy import Approval, PolicyMiddleware, require_approval

from .facing import DISPATCHER_ENTRY_POINTS, ENTRY_POINTS, assert_no_leak, leaks, model_facing
from .paths import run_call

KEY = "sk-LIVE-abcdef1234567890"
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}")


def base64_readings(texts: list[str]) -> list[str]:
    """What the model could decode from every base64-looking run in ``texts``, from each offset."""
    found = []
    for text in texts:
        for run in _BASE64_RUN.findall(text):
            for start in range(4):
                chunk = run[start:]
                chunk = chunk[: len(chunk) - len(chunk) % 4]
                for alphabet in (b"+/", b"-_"):
                    try:
                        data = base64.b64decode(chunk, altchars=alphabet, validate=True)
                    except (binascii.Error, ValueError):
                        continue
                    found.append(data.decode("latin-1"))
    return found


@tool
def coded(*, key: Annotated[str, Injected("api_key", secret=True)]) -> None:
    """Fail with the key in the error's code."""
    raise ToolError("upstream refused", code=f"auth_failed:{key}")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_secret_in_a_tool_errors_code_does_not_leak(entry: str) -> None:
    result = run_call(entry, [coded], ToolCall("c1", "coded", {}), inject={"api_key": KEY})
    assert result.error is not None and result.error.code.startswith("auth_failed:")
    assert_no_leak(result, KEY)
    assert not leaks(KEY, result.error.code)


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
def test_the_tool_failed_event_carries_the_scrubbed_code(entry: str) -> None:
    events: list[ToolEvent] = []
    run_call(entry, [coded], ToolCall("c1", "coded", {}), inject={"api_key": KEY}, on_event=events.append)
    (failed,) = [event for event in events if isinstance(event, ToolFailed)]
    assert failed.error is not None and not leaks(KEY, failed.error.code)


@tool
def blob(offset: int, as_text: bool, *, key: Annotated[Any, Injected("api_key", secret=True)]) -> bytes:
    """Return the key's bytes after ``offset`` bytes of something else, and some after it."""
    data = key.encode() if as_text else bytes(key)
    return bytes(range(1, offset + 1)) + data + b"\x00tail"


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("as_text", [False, True], ids=["bytes-secret", "str-secret-returned-as-bytes"])
def test_base64_of_a_secret_at_any_offset_cannot_be_decoded(entry: str, offset: int, as_text: bool) -> None:
    secret: Any = KEY if as_text else KEY.encode()
    call = ToolCall("c1", "blob", {"offset": offset, "as_text": as_text})
    result = run_call(entry, [blob], call, inject={"api_key": secret})
    assert result.status == "succeeded"
    readings = base64_readings(model_facing(result))
    assert readings, "the output should be base64 text"
    assert not [reading for reading in readings if leaks(KEY, reading)]


@tool(policy=ToolPolicy.classified().with_side_effects(["payment"]).with_access(approval_required=True))
def guarded(amount: int, *, key: Annotated[str, Injected("api_key", secret=True)]) -> str:
    """Spend an amount (needs the approver's yes)."""
    return "spent"


def _deny_quoting(request: Any) -> Approval:
    return Approval.deny(f"key {KEY} lacks the payment scope")


class _Answers:
    """A before-middleware that answers the call itself, quoting the secret."""

    def before_tool(self, call: ToolCall, tool: Any) -> ToolResult:
        return ToolResult(
            call_id=call.id,
            name=call.name,
            status="failed",
            error=StructuredError("tool_error", f"token {KEY} expired"),
        )


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
@pytest.mark.parametrize("source", ["approver", "before-middleware"])
def test_a_result_made_before_binding_is_scrubbed_too(entry: str, source: str) -> None:
    middleware: list[Any] = (
        [PolicyMiddleware(require_approval(_deny_quoting))] if source == "approver" else [_Answers()]
    )
    dispatcher = Dispatcher([guarded], middleware=middleware)
    result = run_call(
        entry, [guarded], ToolCall("c1", "guarded", {"amount": 5}), inject={"api_key": KEY}, dispatcher=dispatcher
    )
    assert result.status == "failed"
    assert_no_leak(result, KEY)
