"""The execution stage: what a tool raises, timeouts and retries, and the runtime its policy declares."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator

import pytest

from tinytools import (
    CancellationToken,
    Dispatcher,
    Invocation,
    Limits,
    RetryableError,
    ToolCall,
    adispatch_many,
    dispatch_many,
    tool,
)
from tinytools.policy import ToolPolicy

from .paths import (
    DISPATCHER_ENTRIES,
    ENTRIES,
    PATHS,
    RELEASE,
    options,
    run_batch,
    run_call,
    run_in_thread,
    steady,
    summary,
)

# Concurrent.futures.CancelledError from a tool is that tool's failure


@tool
def raises_cancelled() -> str:
    """Raises concurrent.futures.CancelledError, an ordinary exception to this tool."""
    raise concurrent.futures.CancelledError("the upstream request was cancelled")


@tool(timeout=5)
def raises_cancelled_bounded() -> str:
    """The same, under a timeout (so it runs in a thread even alone)."""
    raise concurrent.futures.CancelledError("the upstream request was cancelled")


@pytest.mark.parametrize(
    "entry", ["dispatch_many", "adispatch_many", "Dispatcher.dispatch_many", "Dispatcher.adispatch_many"]
)
def test_a_tool_raising_futures_cancelled_error_fails_alone_in_a_batch(entry: str) -> None:
    tools = [steady, raises_cancelled]
    calls = [
        ToolCall("a", "steady", {"n": 1}),
        ToolCall("bad", "raises_cancelled", {}),
        ToolCall("b", "steady", {"n": 2}),
    ]
    if entry == "dispatch_many":
        results = dispatch_many(calls, tools)
    elif entry == "adispatch_many":
        results = asyncio.run(adispatch_many(calls, tools))
    else:
        results = run_batch(entry, Dispatcher(tools), calls)
    assert summary(results) == [("a", "succeeded", None), ("bad", "failed", "tool_error"), ("b", "succeeded", None)]
    assert [results[0].output, results[2].output] == [1, 2]


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_a_tool_raising_futures_cancelled_error_fails_alone_in_a_single_call(entry: str, variant: str) -> None:
    result = run_call(
        entry, [raises_cancelled_bounded], ToolCall("c1", "raises_cancelled_bounded", {}), **options(variant)
    )
    assert summary([result]) == [("c1", "failed", "tool_error")]


# No retry after cancel() or past the deadline


@pytest.mark.parametrize("variant", ["plain", "on_event"])
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_no_retry_starts_after_the_run_is_cancelled(entry: str, variant: str) -> None:
    attempts: list[int] = []
    run: dict[str, Dispatcher] = {}

    @tool(idempotent=True, retries=3)
    def flaky() -> str:
        """Cancels the run on its first attempt, then asks to be retried."""
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            run["dispatcher"].cancel()
        raise RetryableError("try again")

    run["dispatcher"] = Dispatcher([flaky], **options(variant))
    result = run_call(entry, [flaky], ToolCall("c1", "flaky", {}), dispatcher=run["dispatcher"])
    assert (len(attempts), result.error and result.error.code) == (1, "cancelled")


@pytest.mark.parametrize("variant", ["plain", "on_event"])
@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_no_retry_starts_after_the_run_deadline(entry: str, variant: str) -> None:
    attempts: list[int] = []

    @tool(idempotent=True, retries=3)
    def slow_flaky(invocation: Invocation) -> str:
        """Runs past the run's deadline, then asks to be retried."""
        attempts.append(len(attempts) + 1)
        time.sleep((invocation.time_left or 0.0) + 0.05)
        raise RetryableError("try again")

    dispatcher = Dispatcher([slow_flaky], limits=Limits(deadline=0.5), **options(variant))
    result = run_call(entry, [slow_flaky], ToolCall("c1", "slow_flaky", {}), dispatcher=dispatcher)
    assert (len(attempts), result.error and result.error.code) == (1, "deadline_exceeded")


# A tool's own TimeoutError is the tool's failure, not the dispatcher's timeout


_ATTEMPTS_9: dict[str, int] = {}


@tool(idempotent=True, retries=2)
def socket_read() -> str:
    """Raises the TimeoutError a socket read raises."""
    _ATTEMPTS_9["socket_read"] = _ATTEMPTS_9.get("socket_read", 0) + 1
    raise TimeoutError("read timed out")


@tool(idempotent=True, retries=2)
async def async_socket_read() -> str:
    """The same, async."""
    _ATTEMPTS_9["async_socket_read"] = _ATTEMPTS_9.get("async_socket_read", 0) + 1
    raise TimeoutError("read timed out")


@tool(idempotent=True, retries=2, timeout=5)
def bounded_socket_read() -> str:
    """The same, with a dispatcher timeout it never comes near."""
    _ATTEMPTS_9["bounded_socket_read"] = _ATTEMPTS_9.get("bounded_socket_read", 0) + 1
    raise TimeoutError("read timed out")


@tool
def once_socket_read() -> str:
    """The same, not idempotent."""
    _ATTEMPTS_9["once_socket_read"] = _ATTEMPTS_9.get("once_socket_read", 0) + 1
    raise TimeoutError("read timed out")


@pytest.mark.parametrize(("entry", "variant"), PATHS)
def test_a_tools_own_timeout_error_is_a_tool_error_and_not_retried(entry: str, variant: str) -> None:
    tools = [socket_read, async_socket_read, bounded_socket_read, once_socket_read]
    seen = {}
    for read in tools:
        _ATTEMPTS_9.clear()
        result = run_call(entry, tools, ToolCall(f"c-{read.name}", read.name, {}), **options(variant))
        message = result.error.message if result.error else ""
        seen[read.name] = (
            result.status,
            result.error and result.error.code,
            _ATTEMPTS_9.get(read.name, 0),
            "did not finish within" in message,
        )
    assert seen == dict.fromkeys((read.name for read in tools), ("failed", "tool_error", 1, False))


# ToolPolicy.with_runtime(timeout, idempotent, max_retries) is enforced


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_policy_runtime_timeout_is_enforced(entry: str) -> None:
    release = threading.Event()

    @tool(policy=ToolPolicy.classified().with_runtime(timeout=0.2))
    def hangs() -> str:
        """Blocks until the test ends."""
        release.wait(RELEASE)
        return "late"

    watched = run_in_thread(lambda: run_call(entry, [hangs], ToolCall("c1", "hangs", {})))
    try:
        assert watched.finished, "the policy's timeout was not enforced: the call is still waiting for the tool"
        assert summary([watched.value()]) == [("c1", "outcome_unknown", "timeout")]
    finally:
        release.set()
        watched.join()


@pytest.mark.parametrize("entry", DISPATCHER_ENTRIES)
def test_policy_runtime_idempotent_and_max_retries_are_enforced(entry: str) -> None:
    attempts: list[int] = []

    @tool(policy=ToolPolicy.classified().with_runtime(idempotent=True, max_retries=2))
    def flaky() -> str:
        """Always asks to be tried again."""
        attempts.append(len(attempts) + 1)
        raise RetryableError("try again")

    result = run_call(entry, [flaky], ToolCall("c1", "flaky", {}))
    assert (attempts, result.error and result.error.code) == ([1, 2, 3], "tool_error")


# A retry after a timeout gets a fresh cancellation token

TRIES: list[bool] = []


@tool(timeout=0.2, idempotent=True, retries=1)
def patient(token: CancellationToken) -> str:
    """The first attempt outlasts its timeout; each attempt notes whether it began already cancelled."""
    TRIES.append(token.cancelled)
    if len(TRIES) == 1:
        token.wait(RELEASE)  # told by its timeout
        return "too late"
    return "second try"


@tool(timeout=0.2, idempotent=True, retries=1)
def patient_stream(token: CancellationToken) -> Iterator[str]:
    """A stream whose first attempt outlasts its timeout."""
    TRIES.append(token.cancelled)
    if len(TRIES) == 1:
        token.wait(RELEASE)
    yield "piece"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name", ["patient", "patient_stream"])
def test_a_retry_after_a_timeout_starts_with_a_fresh_token(entry: str, name: str) -> None:
    TRIES.clear()
    result = run_call(entry, [patient, patient_stream], ToolCall("c1", name, {}))
    assert (result.status, result.output) == ("succeeded", "second try" if name == "patient" else "piece")
    assert TRIES == [False, False]
