from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    ArtifactRef,
    Dispatcher,
    Injected,
    MemoryArtifactStore,
    ResultError,
    StructuredError,
    TextContent,
    ToolCall,
    ToolError,
    ToolOutput,
    ToolResult,
    dispatch,
    tool,
)
from tinytools._results import ImageContent, JsonContent

REF = ArtifactRef("ab" * 32, 3, "image/png", "ab" * 32, {"tool": "t"})

SHAPES = [
    ToolResult(call_id="1", name="t", status="succeeded", output={"a": [1, 2.5, None, "x"]}),
    ToolResult(call_id="2", name="t", status="succeeded", output="text", elapsed=12),
    ToolResult(
        call_id="3",
        name="t",
        status="succeeded",
        output=[1],
        content=[TextContent("summary"), JsonContent({"k": 1}), ImageContent(REF)],
        artifacts=[REF],
    ),
    ToolResult(call_id="4", name="t", status="failed", error=StructuredError("tool_error", "no", {"error_id": "x"})),
    ToolResult(call_id="5", name="t", status="outcome_unknown", error=StructuredError("timeout", "may have acted")),
]


@pytest.mark.parametrize("result", SHAPES, ids=lambda r: r.call_id)
def test_every_shape_round_trips_through_json(result: ToolResult) -> None:
    result.validate()
    assert msgspec.json.decode(result.to_json(), type=ToolResult) == result
    assert msgspec.json.decode(result.to_json())["status"] == result.status


@pytest.mark.parametrize(
    ("result", "needle"),
    [
        (ToolResult(call_id="1", name="t", status="failed"), "no error"),
        (ToolResult(call_id="1", name="t", status="outcome_unknown"), "no error"),
        (
            ToolResult(call_id="1", name="t", status="succeeded", error=StructuredError("x", "y")),
            "carries an error",
        ),
        (ToolResult(call_id="1", name="t", status="done"), "not one of"),  # type: ignore[arg-type]
        (ToolResult(call_id="", name="t", status="succeeded"), "no call id"),
    ],
)
def test_validate_refuses_malformed_results(result: ToolResult, needle: str) -> None:
    with pytest.raises(ResultError, match=needle):
        result.validate()


def test_validate_within_counts_the_exact_bytes_the_model_reads() -> None:
    result = ToolResult(call_id="1", name="t", status="succeeded", output="é" * 10)  # the text: 20 bytes
    result.validate_within(20)
    with pytest.raises(ResultError, match="20 bytes"):
        result.validate_within(19)
    assert result.output == "é" * 10  # never rewritten
    listed = ToolResult(call_id="1", name="t", status="succeeded", output=["é"])  # the text: its JSON, 6 bytes
    listed.validate_within(6)
    with pytest.raises(ResultError, match="6 bytes"):
        listed.validate_within(5)


def test_text_prefers_error_then_content_then_output() -> None:
    assert SHAPES[2].text() == 'summary\n{"k":1}\n' + f"[image/png artifact {'ab' * 32}]"
    assert SHAPES[3].text() == "Error: no"  # a failure reads as one, for protocols with no flag for it
    assert SHAPES[0].text() == '{"a":[1,2.5,null,"x"]}'
    assert SHAPES[0].is_error is False and SHAPES[4].is_error is True


def test_tool_output_gives_content_and_artifacts() -> None:
    store = MemoryArtifactStore()

    @tool
    def report() -> Any:
        rows = [{"n": n} for n in range(50)]
        return ToolOutput(rows, content="50 rows", artifacts=[(b"raw,csv\n", "text/csv"), REF])

    result = Dispatcher([report], artifacts=store).dispatch(ToolCall("c", "report", "{}"))
    assert result.status == "succeeded"
    assert result.output == [{"n": n} for n in range(50)]
    assert result.text() == "50 rows"
    stored, given_ref = result.artifacts
    assert store.get(stored.key) == b"raw,csv\n"
    assert (stored.media_type, stored.metadata) == ("text/csv", {"tool": "report", "call_id": "c"})
    assert given_ref == REF
    without_store = dispatch(ToolCall("c", "report", "{}"), [report])
    assert without_store.error is not None and without_store.error.code == "invalid_output"


@dataclasses.dataclass
class Point:
    x: int


def test_validate_output() -> None:
    @tool(validate_output=True)
    def good() -> Point:
        return Point(1)

    @tool(validate_output=True)
    def bad() -> list[int]:
        return ["not", "ints"]  # type: ignore[list-item]

    assert dispatch(ToolCall("c", "good", "{}"), [good]).output == {"x": 1}
    result = dispatch(ToolCall("c", "bad", "{}"), [bad])
    assert result.error is not None and result.error.code == "invalid_output"
    assert "/0" in result.error.message


def test_validate_output_needs_a_return_annotation() -> None:
    from tinytools import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="output schema"):

        @tool(validate_output=True)
        def f():  # type: ignore[no-untyped-def]
            return 1


SECRET = "sk-live-0123456789"


@tool
def leaky_tool(mode: str, *, api_key: Annotated[str, Injected("api_key", secret=True)]) -> Any:
    if mode == "echo":
        return {"used": api_key, "nested": [f"key={api_key}"]}
    if mode == "content":
        return ToolOutput(None, content=f"called with {api_key}")
    if mode == "tool_error":
        raise ToolError(f"bad key {api_key}")
    raise RuntimeError(api_key)


@pytest.mark.parametrize("mode", ["echo", "content", "tool_error", "crash"])
@pytest.mark.parametrize("runner", ["dispatch", "dispatcher", "dispatcher_with_events"])
def test_secrets_never_reach_the_model(mode: str, runner: str) -> None:
    call = ToolCall("c", "leaky_tool", {"mode": mode})
    inject = {"api_key": SECRET}
    if runner == "dispatch":
        result = dispatch(call, [leaky_tool], inject=inject)
    else:
        sink = [].append if runner == "dispatcher_with_events" else None
        result = Dispatcher([leaky_tool], on_event=sink).dispatch(call, inject=inject)
    assert SECRET not in result.to_json().decode()
    assert SECRET not in result.text()
    if mode in ("echo", "content", "tool_error"):
        assert "[redacted]" in result.to_json().decode()


def test_redaction_hook_scrubs_more() -> None:
    @tool
    def whoami() -> str:
        return "user alice@example.com"

    hook = lambda text: text.replace("alice@example.com", "<email>")  # noqa: E731
    dispatcher = Dispatcher([whoami], redact=hook)
    assert dispatcher.dispatch(ToolCall("c", "whoami", "{}")).output == "user <email>"
    unknown = dispatcher.dispatch(ToolCall("c", "alice@example.com", "{}"))
    assert "alice" not in unknown.text()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(min_value=64, max_value=400), st.booleans())
def test_any_budget_is_exact_inline_or_a_faithful_artifact(value: Any, budget: int, with_store: bool) -> None:
    @tool
    def produce() -> Any:
        return value

    store = MemoryArtifactStore() if with_store else None
    result = Dispatcher([produce], max_inline_output_bytes=budget, artifacts=store).dispatch(
        ToolCall("c", "produce", "{}")
    )
    encoded = msgspec.json.encode(value)
    text = value if isinstance(value, str) else encoded.decode()  # what the model reads of the output
    if len(text.encode()) <= budget:
        assert result.status == "succeeded" and result.output == value and not result.artifacts
        result.validate_within(budget)
    elif store is None:
        assert result.error is not None and result.error.code == "output_too_large"
        assert len(result.text().encode()) <= budget  # its long message is cut to the budget
    else:
        assert result.status == "succeeded" and result.output is None
        (ref,) = result.artifacts
        assert store.get(ref.key) == encoded and ref.size == len(encoded)
        note = result.text()
        assert ref.key in note
        preview = note.split("it begins: ", 1)[1]
        assert len(preview.encode()) <= budget
        assert text.startswith(preview)
