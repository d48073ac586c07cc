"""Nothing secret crosses the model boundary: a secret injected into a tool never reaches the model.

Every check goes through ``model_facing(result)`` (see `facing`): the result's text, its error
message, the text of each content block, what each provider's ``write_results`` writes for it
and what each text format's ``render_result`` renders for it. ``leaks(secret, text)`` is True
when any eight consecutive characters of the secret appear in the text, so a secret that is
cut, escaped or only partly replaced still counts as leaked. The secret is redacted wherever it
goes: a preview cut inside it, JSON or repr escaping, a schema mismatch's echo, a secret inside
another, secrets that are not plain strings, secret defaults, events, progress sent over MCP,
and the message of an exception the tool's options expose; random secrets echoed several ways
never reach any writer.
"""

import base64
import json
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import Field, SecretStr

from tinytools import (
    Dispatcher,
    Injected,
    MemoryArtifactStore,
    Progress,
    Toolbox,
    ToolCall,
    ToolCompleted,
    ToolError,
    ToolEvent,
    ToolFailed,
    ToolOutputChunk,
    ToolProgress,
    ToolResult,
    tool,
)
from tinytools.providers import mcp

from .facing import (
    DISPATCHER_ENTRY_POINTS,
    ENTRY_POINTS,
    REDACTED,
    assert_no_leak,
    leaked,
    model_facing,
    strings_in,
)
from .paths import ENTRIES, run_call

# --- tools -----------------------------------------------------------------------------------

SECRET = "sk-ABCDEFGHIJKLMNOPQRSTUV"  # 25 characters
assert len(SECRET) == 25


@tool
def echo_padded(pad: int, *, key: Annotated[str, Injected("api_key", secret=True)]) -> str:
    """Echo the key between padding (long enough to leave the inline budget)."""
    return "x" * pad + key + "y" * 300


@tool
def refuse_repr(*, key: Annotated[str, Injected("api_key", secret=True)]) -> None:
    """Refuse the key, quoting it with repr."""
    raise ToolError(f"bad key {key!r}")


@tool(validate_output=True)
def wrong_type(pad: int, *, key: Annotated[str, Injected("api_key", secret=True)]) -> int:
    """Declare an int, return a string that carries the key."""
    return "a" * pad + key  # type: ignore[return-value]


INNER = "token-ABCDEFGH"
OUTER = "outer-secret-xx-token-ABCDEFGH-yy-outer-secret"
assert INNER in OUTER


@tool
def nested_secrets(
    shape: str,
    *,
    inner: Annotated[str, Injected("inner", secret=True)],
    outer: Annotated[str, Injected("outer", secret=True)],
) -> Any:
    """Return the longer of two secrets, one inside the other (the shorter is declared first)."""
    if shape == "raw":
        return outer
    if shape == "dict":
        return {"token": outer, "all": [outer]}
    raise ToolError(f"token {outer} refused")


PYDANTIC_SECRET = "pydantic-secret-7f3a91c2"


@tool
def uses_secretstr(shape: str, *, key: Annotated[SecretStr, Injected("api_key", secret=True)]) -> Any:
    """Echo the value of a pydantic SecretStr."""
    value = key.get_secret_value()
    if shape == "raw":
        return value
    if shape == "dict":
        return {"used": value}
    raise ToolError(f"bad key {value}")


BYTES_SECRET = b"bytes-secret-5d2e8b77"


@tool
def uses_bytes(shape: str, *, key: Annotated[bytes, Injected("api_key", secret=True)]) -> Any:
    """Echo a bytes secret: as bytes (encoded as base64) or decoded."""
    if shape == "bytes":
        return key
    if shape == "decoded":
        return key.decode()
    raise ToolError(f"bad key {key.decode()}")


PIN = 48213975


@tool
def uses_pin(shape: str, *, pin: Annotated[int, Injected("pin", secret=True)]) -> Any:
    """Echo a numeric secret as a number."""
    if shape == "number":
        return pin
    return {"pin": pin, "pins": [pin]}


DEFAULT_SECRET = "default-secret-value-123"


@tool
def uses_default(shape: str, *, key: Annotated[str, Injected("key", secret=True)] = DEFAULT_SECRET) -> Any:
    """Echo a secret that fell back to its default."""
    if shape == "raw":
        return key
    if shape == "dict":
        return {"key": key}
    raise ToolError(f"bad key {key}")


PROGRESS_SECRET = "progress-secret-4c9e1a"


@tool
def reports(progress: Progress, *, key: Annotated[str, Injected("api_key", secret=True)]) -> None:
    """Report progress and partial output that carry the key, then fail quoting it."""
    progress.progress(1, total=2, message=f"authenticating with {key}")
    progress.emit("log", {"line": f"key={key}", key: [key]})
    progress.emit("raw", key)
    raise ToolError(f"the service refused key {key}")


# --- the preview of a moved output can cut a secret ------------------------------------------

BUDGET = 100


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
@pytest.mark.parametrize("visible", [8, 12, 17, 24])
def test_preview_cut_inside_a_secret_does_not_leak_it(entry: str, visible: int) -> None:
    # the preview is the first BUDGET bytes of '"' + "x" * pad + SECRET + ...:
    # exactly `visible` characters of the secret fall before the cut
    pad = BUDGET - 1 - visible
    store = MemoryArtifactStore()
    call = ToolCall("c1", "echo_padded", {"pad": pad})
    result = run_call(
        entry, [echo_padded], call, inject={"api_key": SECRET}, max_inline_output_bytes=BUDGET, artifacts=store
    )
    assert result.status == "succeeded" and result.artifacts, "the output should have moved to the store"
    assert_no_leak(result, SECRET)


# --- escaped secrets: JSON escaping in the preview, repr escaping in a ToolError -------------

ESCAPED_SECRETS = [
    'ab"cd\\ef"gh-12345',  # a double quote and a backslash
    'it\'s "the" key-0987654',  # a single quote (with a double quote, so repr escapes it)
    "tab\there-and\\back-246810",  # a control character and a backslash
]


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
@pytest.mark.parametrize("secret", ESCAPED_SECRETS)
def test_json_escaped_secret_in_a_preview_does_not_leak(entry: str, secret: str) -> None:
    store = MemoryArtifactStore()
    call = ToolCall("c1", "echo_padded", {"pad": 10})
    result = run_call(
        entry, [echo_padded], call, inject={"api_key": secret}, max_inline_output_bytes=BUDGET, artifacts=store
    )
    assert result.status == "succeeded" and result.artifacts, "the output should have moved to the store"
    assert_no_leak(result, secret)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("secret", ESCAPED_SECRETS)
def test_repr_escaped_secret_in_a_tool_error_does_not_leak(entry: str, secret: str) -> None:
    result = run_call(entry, [refuse_repr], ToolCall("c1", "refuse_repr", {}), inject={"api_key": secret})
    assert result.status == "failed" and result.error is not None
    assert_no_leak(result, secret)


# --- validate_output echoes the bad value cut at 200 characters ------------------------------


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("visible", [8, 15, 22])
def test_output_schema_mismatch_does_not_echo_a_cut_secret(entry: str, visible: int) -> None:
    # the echoed value is '"' + "a" * pad + SECRET..., cut to 199 characters and an ellipsis
    pad = 198 - visible
    result = run_call(entry, [wrong_type], ToolCall("c1", "wrong_type", {"pad": pad}), inject={"api_key": SECRET})
    assert result.status == "failed" and result.error is not None and result.error.code == "invalid_output"
    assert_no_leak(result, SECRET)


# --- one secret inside another ---------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("shape", ["raw", "dict", "tool_error"])
def test_a_secret_containing_another_secret_does_not_leak(entry: str, shape: str) -> None:
    inject = {"inner": INNER, "outer": OUTER}
    result = run_call(entry, [nested_secrets], ToolCall("c1", "nested_secrets", {"shape": shape}), inject=inject)
    assert_no_leak(result, INNER, OUTER)


# --- secrets that are not plain str: SecretStr, bytes, int -----------------------------------


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("shape", ["raw", "dict", "tool_error"])
def test_a_pydantic_secretstr_value_does_not_leak(entry: str, shape: str) -> None:
    inject = {"api_key": SecretStr(PYDANTIC_SECRET)}
    result = run_call(entry, [uses_secretstr], ToolCall("c1", "uses_secretstr", {"shape": shape}), inject=inject)
    assert_no_leak(result, PYDANTIC_SECRET)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("shape", ["bytes", "decoded", "tool_error"])
def test_a_bytes_secret_does_not_leak_raw_or_as_base64(entry: str, shape: str) -> None:
    inject = {"api_key": BYTES_SECRET}
    result = run_call(entry, [uses_bytes], ToolCall("c1", "uses_bytes", {"shape": shape}), inject=inject)
    as_base64 = base64.b64encode(BYTES_SECRET).decode()
    assert_no_leak(result, BYTES_SECRET.decode(), as_base64)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("shape", ["number", "dict"])
def test_a_numeric_secret_returned_as_a_number_does_not_leak(entry: str, shape: str) -> None:
    result = run_call(entry, [uses_pin], ToolCall("c1", "uses_pin", {"shape": shape}), inject={"pin": PIN})
    assert_no_leak(result, str(PIN))


# --- a secret that fell back to its default, and calls made with inject=None -----------------


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("inject", [None, {}, {"unrelated": "value"}], ids=["inject=None", "inject={}", "other-keys"])
@pytest.mark.parametrize("shape", ["raw", "dict", "tool_error"])
def test_a_secret_default_is_redacted(entry: str, inject: dict[str, Any] | None, shape: str) -> None:
    result = run_call(entry, [uses_default], ToolCall("c1", "uses_default", {"shape": shape}), inject=inject)
    assert_no_leak(result, DEFAULT_SECRET)


# --- events: ToolFailed, ToolProgress, ToolOutputChunk, ToolCompleted ------------------------


def run_with_events(entry: str) -> tuple[ToolResult, list[ToolEvent]]:
    events: list[ToolEvent] = []
    result = run_call(
        entry, [reports], ToolCall("c1", "reports", {}), inject={"api_key": PROGRESS_SECRET}, on_event=events.append
    )
    assert result.status == "failed"
    return result, events


def of_type(events: list[ToolEvent], kind: type) -> list[Any]:
    found = [event for event in events if isinstance(event, kind)]
    assert found, f"no {kind.__name__} event was delivered"
    return found


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
def test_tool_failed_event_error_is_redacted(entry: str) -> None:
    result, events = run_with_events(entry)
    for event in of_type(events, ToolFailed):
        texts = [event.error.message, *strings_in(msgspec.to_builtins(event.error))]
        found = leaked([PROGRESS_SECRET], texts)
        assert not found, f"ToolFailed.error (what the model sees) carries the secret: {found}"
    for event in of_type(events, ToolCompleted):
        assert_no_leak(event.result, PROGRESS_SECRET)
    assert_no_leak(result, PROGRESS_SECRET)


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
def test_progress_events_are_redacted(entry: str) -> None:
    _, events = run_with_events(entry)
    texts: list[str] = []
    for event in of_type(events, ToolProgress):
        texts.append(event.message or "")
    for event in of_type(events, ToolOutputChunk):
        texts.append(json.dumps(event.data, ensure_ascii=False))
        texts.extend(strings_in(event.data))
    found = leaked([PROGRESS_SECRET], texts)
    assert not found, f"progress events carry the secret: {found}"


@tool
def mcp_reports(
    steps: int, progress: Progress, *, key: Annotated[str, Injected("key", secret=True)] = DEFAULT_SECRET
) -> str:
    """Report progress that carries a defaulted secret, over MCP."""
    for step in range(1, steps + 1):
        progress.progress(step, total=steps, message=f"step {step} with {key}")
    return f"done with {key}"


def test_mcp_server_forwards_no_secret_in_progress_or_result() -> None:
    import anyio
    from mcp import Client

    server = mcp.build_server([mcp_reports])
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async def session() -> Any:
        # the handshake-era protocol: in process, only it delivers progress today
        async with Client(server, mode="legacy", read_timeout_seconds=20) as client:
            return await client.call_tool("mcp_reports", {"steps": 2}, progress_callback=on_progress)

    answer = anyio.run(session)
    texts = [message or "" for message in seen]
    texts += [getattr(block, "text", "") for block in answer.content]
    texts.append(json.dumps(getattr(answer, "structured_content", None), ensure_ascii=False))
    assert seen, "the client received no progress notification"
    found = leaked([DEFAULT_SECRET], texts)
    assert not found, f"the MCP client received the secret: {found}"


# --- expose_errors: exception types whose message the model may read -------------------------

EXPOSED_SECRET = "exposed-secret-5b7c3d"


def make_pay(**options: Any) -> Any:
    @tool(name="pay", **options)
    def pay(amount: int, *, key: Annotated[str, Injected("api_key", secret=True)]) -> int:
        """Pay an amount."""
        if amount <= 0:
            raise ValueError(f"amount must be positive (key {key})")
        raise KeyError(f"ledger-internal-{key}")

    return pay


def pay_result(entry: str, amount: int, *, on_tool: bool) -> ToolResult:
    pay = make_pay(expose_errors=(ValueError,)) if on_tool else make_pay()
    options: dict[str, Any] = {} if on_tool else {"expose_errors": (ValueError,)}
    call = ToolCall("c1", "pay", {"amount": amount})
    return run_call(entry, [pay], call, inject={"api_key": EXPOSED_SECRET}, **options)


EXPOSE_CASES = [("Dispatcher(expose_errors=)", entry) for entry in DISPATCHER_ENTRY_POINTS] + [
    ("@tool(expose_errors=)", entry) for entry in ENTRY_POINTS
]


@pytest.mark.parametrize(("where", "entry"), EXPOSE_CASES)
def test_an_exposed_exception_message_reaches_the_model_redacted(where: str, entry: str) -> None:
    result = pay_result(entry, -5, on_tool=where.startswith("@tool"))
    assert result.status == "failed" and result.error is not None
    assert "amount must be positive" in result.text()
    assert_no_leak(result, EXPOSED_SECRET)


@pytest.mark.parametrize(("where", "entry"), EXPOSE_CASES)
def test_an_exception_not_exposed_stays_generic(where: str, entry: str) -> None:
    result = pay_result(entry, 5, on_tool=where.startswith("@tool"))
    assert result.status == "failed" and result.error is not None
    assert "internal error" in result.text()
    assert result.error.details is not None and result.error.details.get("error_id")
    assert "ledger-internal" not in " ".join(model_facing(result))
    assert_no_leak(result, EXPOSED_SECRET)


# --- property: random secrets, echoed several ways, never reach any writer -------------------

ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\"'\\-_/:=+<>&{}[]éüßñ€日本語🔑\u00a0\t\n"
PAD = "~"  # not in ALPHABET: padding never forms part of a secret
assert PAD not in ALPHABET
PROPERTY_BUDGET = 120


@st.composite
def secret_pairs(draw: st.DrawFn) -> tuple[str, str, str]:
    """(first, second, echoed): ``second`` contains or overlaps ``first``; ``echoed`` joins them."""
    first = draw(st.text(alphabet=ALPHABET, min_size=8, max_size=40))
    piece = st.text(alphabet=ALPHABET, min_size=1, max_size=12)
    if draw(st.booleans()):  # the second contains the first
        second = draw(piece) + first + draw(piece)
        return first, second, second
    shared = draw(st.integers(1, len(first) - 1))  # the second begins with the first's tail
    tail = draw(st.text(alphabet=ALPHABET, min_size=8, max_size=20))
    return first, first[-shared:] + tail, first + tail


@tool
def property_echo(
    mode: str,
    pad: int,
    control: bool,
    *,
    a: Annotated[str, Injected("a", secret=True)],
    b: Annotated[str, Injected("b", secret=True)],
    echoed: Annotated[str, Injected("echoed")],
) -> Any:
    """Echo a text made of the secrets in one of several ways (or the same shape without them)."""
    text = PAD * len(echoed) if control else f"{echoed} | {a} | {b}"
    if mode == "raw":
        return text
    if mode == "dict":
        return {"value": text, "nested": [text, {"again": text}]}
    if mode == "tool_error":
        raise ToolError(f"bad key {text!r}")
    assert mode == "artifact"
    return PAD * pad + text + PAD * 400


PROPERTY_MODES = ("raw", "dict", "tool_error", "artifact")


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(pair=secret_pairs(), swap=st.booleans(), pad=st.integers(0, PROPERTY_BUDGET + 20))
def test_property_random_secrets_never_reach_any_writer(pair: tuple[str, str, str], swap: bool, pad: int) -> None:
    first, second, echoed = pair
    assume(first != second)
    a, b = (second, first) if swap else (first, second)
    inject = {"a": a, "b": b, "echoed": echoed}
    secrets = [first, second]
    plain = Dispatcher([property_echo])
    budgeted = Dispatcher([property_echo], max_inline_output_bytes=PROPERTY_BUDGET, artifacts=MemoryArtifactStore())
    for mode in PROPERTY_MODES:
        dispatcher = budgeted if mode == "artifact" else plain

        def result_of(control: bool, mode: str = mode, dispatcher: Dispatcher = dispatcher) -> ToolResult:
            call = ToolCall("c1", "property_echo", {"mode": mode, "pad": pad, "control": control})
            return dispatcher.dispatch(call, inject=inject)

        # the same call with the secrets replaced by padding: a secret that happens to match
        # fixed text (tool name, messages, the placeholder) cannot be told from a leak
        control_texts = [*model_facing(result_of(True)), REDACTED]
        assume(not leaked(secrets, control_texts))
        result = result_of(False)
        if mode == "artifact":
            assert result.artifacts, "the output should have moved to the store"
        found = leaked(secrets, model_facing(result))
        assert not found, f"mode {mode!r}: secret leaked: {found[:2]}"


# Failure and pending texts are held to the budget, like outputs


@tool
def shouts(size: int) -> str:
    """Fail with a long message."""
    raise ToolError("x" * size)


@tool
def asks_at_length(size: int) -> str:
    """Ask the user a long question."""
    from tinytools import NeedsInput

    raise NeedsInput("y" * size)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name", ["shouts", "asks_at_length"])
def test_failure_and_pending_texts_are_held_to_the_budget(entry: str, name: str) -> None:
    result = run_call(entry, [shouts, asks_at_length], ToolCall("c", name, {"size": 300_000}))
    text = result.text()
    assert result.status == ("failed" if name == "shouts" else "pending")
    assert len(text.encode()) <= 100_000 and text.endswith("over the 100000-byte budget]")
    assert f"[cut: {len(text.split(':')[0]) + 2 + 300_000} bytes" in text  # says how long it was
    (written,) = mcp.write_results([result])
    assert all(len(text.encode()) <= 100_000 for text in strings_in(written))
    small = run_call(entry, [shouts, asks_at_length], ToolCall("d", name, {"size": 10}))
    assert "budget" not in small.text()


def _fails_long() -> str:
    raise ValueError("z" * 300_000)


@tool(expose_errors=[ValueError])
def defaults_badly(note: Annotated[str, Field(default_factory=_fails_long)]) -> str:
    """Take a note whose default cannot be made."""
    return note


@pytest.mark.parametrize("entry", ["dispatch", "adispatch", "Dispatcher.dispatch", "Dispatcher.adispatch"])
def test_a_failure_text_is_held_to_the_budget_on_every_call_not_only_the_first(entry: str) -> None:
    # the first call of a plain tool plans it; later ones take the express path, which seals its failures too
    box = Toolbox([shouts, defaults_badly])
    dispatcher = Dispatcher(box) if entry.startswith("Dispatcher") else None
    for n in range(3):
        for call in (ToolCall(f"s{n}", "shouts", {"size": 300_000}), ToolCall(f"d{n}", "defaults_badly", {})):
            result = run_call(entry, box, call, dispatcher=dispatcher)
            text = result.text()
            assert result.status == "failed", (n, call.name, result)
            assert len(text.encode()) <= 100_000 and text.endswith("over the 100000-byte budget]"), (n, call.name)


@tool
def asks_with_a_huge_schema() -> str:
    """Ask with a schema larger than any budget."""
    from tinytools import NeedsInput

    raise NeedsInput("Which one?", {"enum": [f"option {n}" for n in range(20_000)]})


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_pending_request_whose_schema_is_over_the_budget_fails(entry: str) -> None:
    result = run_call(entry, [asks_with_a_huge_schema], ToolCall("c", "asks_with_a_huge_schema", {}))
    assert result.status == "failed" and result.error is not None and "larger than the" in result.error.message
    (written,) = mcp.write_results([result])
    assert len(json.dumps(written)) < 1_000


@pytest.mark.parametrize("budget", [63, 0, -1, True, 100.0, "100"])
def test_a_budget_too_small_to_hold_a_cut_message_is_refused(budget: Any) -> None:
    with pytest.raises(ValueError, match="max_inline_output_bytes must be None or a whole number of at least 64"):
        Dispatcher([shouts], max_inline_output_bytes=budget)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(64, 400),
    size=st.integers(0, 2_000),
    name=st.sampled_from(["shouts", "asks_at_length"]),
    entry=st.sampled_from(["Dispatcher.dispatch", "Dispatcher.adispatch", "Dispatcher.adispatch_many"]),
    planned=st.booleans(),
)
def test_a_failure_or_pending_text_fits_any_budget_the_dispatcher_takes(
    budget: int, size: int, name: str, entry: str, planned: bool
) -> None:
    # the smallest budget still holds the words that say a message was cut, whatever its length,
    # on a first call (the pipeline) and a later one (the express path)
    dispatcher = Dispatcher([shouts, asks_at_length], max_inline_output_bytes=budget)
    if planned:
        for each in dispatcher.toolbox:
            dispatcher.plan(each)
    result = run_call(entry, [], ToolCall("c", name, {"size": size}), dispatcher=dispatcher)
    assert result.status in ("failed", "pending")
    assert len(result.text().encode()) <= budget


_LONG_NAME = "t" * 64


def _asks_with_a_mid_size_schema(x: int) -> int:
    from tinytools import NeedsInput

    raise NeedsInput("Which?", {"type": "object", "description": "d" * 1_500})


def _answers(x: int) -> int:
    return x


def _streams_then_fails(x: int) -> Any:
    for n in range(200):
        yield f"piece {n} " * 3
    raise ToolError("y" * 5_000)


def _broken_redaction(text: str) -> str:
    raise RuntimeError("the redaction service is down")


@pytest.mark.parametrize("budget", [64, 128, 1_000])
@pytest.mark.parametrize("case", ["schema-refused", "redaction-failed", "stream-then-failure"])
def test_failures_made_at_the_boundary_are_held_to_the_budget_too(case: str, budget: int) -> None:
    # failures the boundary itself writes (a pending request whose schema is over the budget, a
    # redaction hook that raised, a streamed call's note after its failure), on first and later calls
    if case == "schema-refused":
        made, options = tool(_asks_with_a_mid_size_schema, name=_LONG_NAME, description="Ask."), {}
    elif case == "redaction-failed":
        made, options = tool(_answers, name=_LONG_NAME, description="Answer."), {"redact": _broken_redaction}
    else:
        made, options = tool(_streams_then_fails, name="streams", description="Stream."), {"on_event": [].append}
    dispatcher = Dispatcher([made], max_inline_output_bytes=budget, **options)
    for n in range(2):
        result = dispatcher.dispatch(ToolCall(f"c{n}", made.name, '{"x": 1}'))
        assert result.status in ("failed", "outcome_unknown"), result
        assert len(result.text().encode()) <= budget, (n, result.text())
        if case == "stream-then-failure" and budget == 1_000:  # room enough: the note is kept whole
            assert result.text().endswith("were not forwarded.]")
