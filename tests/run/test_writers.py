"""What the writers send: the model-facing content, an error marker, and a bounded output.

Each provider's ``write_results`` and each text format's ``render_result`` send a result's
content rather than the application-only output, name the artifact a moved output went to,
begin the message of every kind of failed call with ``Error`` (and set the provider's error
flag), and by default send a huge output as an ``output_too_large`` error of a few thousand
characters, not whole.
"""

import json
from typing import Any

import pytest

from tinytools import MemoryArtifactStore, ToolCall, ToolError, ToolOutput, ToolResult, tool
from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses

from .facing import DISPATCHER_ENTRY_POINTS, ENTRY_POINTS, FORMATS, WRITERS, model_facing, rendered, written
from .paths import run_call


def artifact_keys(result: ToolResult) -> list[str]:
    return [ref.key for ref in result.artifacts]


# --- tools -----------------------------------------------------------------------------------

SSN = "123-45-6789"
SUMMARY = "1 record found"


@tool
def lookup_person() -> Any:
    """Return application data with a model-facing summary."""
    return ToolOutput({"ssn": SSN}, content=SUMMARY)


@tool
def big_rows() -> dict[str, Any]:
    """Return an output larger than the inline budget."""
    return {"rows": ["row-" + "r" * 60 for _ in range(20)]}


@tool
def charge(amount: int, mode: str = "refuse") -> int:
    """Charge an amount, or fail in one of several ways."""
    if mode == "refuse":
        raise ToolError("card declined")
    if mode == "crash":
        raise RuntimeError("ledger offline")
    return amount


@tool
def huge() -> str:
    """Return a 2 MB string."""
    return "z" * 2_000_000


# --- writers send what the model should read, not the application's output -------------------


def every_writer(result: ToolResult) -> dict[str, list[str]]:
    """Each writer's model-facing strings for ``result``, by writer."""
    out = {writer.__name__.rsplit(".", 1)[-1]: written(writer, result) for writer in WRITERS}
    for format in FORMATS:
        out[f"render_result({format!r})"] = rendered(result, format)
    return out


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_writers_send_the_content_not_the_application_output(entry: str) -> None:
    result = run_call(entry, [lookup_person], ToolCall("c1", "lookup_person", {}))
    assert result.status == "succeeded" and result.text() == SUMMARY
    problems = []
    for name, texts in every_writer(result).items():
        if any(SSN in text for text in texts):
            problems.append(f"{name} sends the application-only value")
        if not any(SUMMARY in text for text in texts):
            problems.append(f"{name} does not send the content")
    assert not problems, problems


@pytest.mark.parametrize("entry", DISPATCHER_ENTRY_POINTS)
def test_writers_mention_the_artifact_of_a_moved_output(entry: str) -> None:
    store = MemoryArtifactStore()
    result = run_call(entry, [big_rows], ToolCall("c1", "big_rows", {}), max_inline_output_bytes=200, artifacts=store)
    assert result.status == "succeeded" and result.artifacts
    key = artifact_keys(result)[-1]
    assert key in result.text()
    missing = [name for name, texts in every_writer(result).items() if not any(key in text for text in texts)]
    assert not missing, f"these writers do not say where the output went: {missing}"


# --- a failed call reads as an error in every provider's message -----------------------------


def _joined_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def provider_text(writer: Any, result: ToolResult) -> str:
    """The text a provider's message carries for ``result``."""
    (item,) = writer.write_results([result])
    if writer is openai:
        return _joined_text(item["content"])
    if writer is openai_responses:
        return _joined_text(item["output"])
    if writer is anthropic:
        return _joined_text(item["content"])
    if writer is gemini:
        payload = item["functionResponse"]["response"]
        if "error" in payload:
            error = payload["error"]
            return error["message"] if isinstance(error, dict) else str(error)
        output = payload.get("output")
        return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    assert writer is mcp
    return _joined_text(item["content"])


FAILURES = {
    "invalid_arguments": ToolCall("c1", "charge", {"amount": "ten"}),
    "tool_error": ToolCall("c1", "charge", {"amount": 10, "mode": "refuse"}),
    "internal_error": ToolCall("c1", "charge", {"amount": 10, "mode": "crash"}),
    "unknown_tool": ToolCall("c1", "refund", {"amount": 10}),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("failure", list(FAILURES))
def test_every_provider_message_for_a_failed_call_begins_with_error(entry: str, failure: str) -> None:
    result = run_call(entry, [charge], FAILURES[failure])
    assert result.status == "failed" and result.error is not None
    texts = {writer.__name__: provider_text(writer, result) for writer in WRITERS}
    wrong = {name: text[:80] for name, text in texts.items() if not text.startswith("Error")}
    assert not wrong, f"these messages do not say the call failed: {wrong}"
    assert anthropic.write_results([result])[0]["is_error"] is True
    assert mcp.write_results([result])[0]["isError"] is True


# --- a huge output is not sent whole by default ----------------------------------------------

FEW_THOUSAND = 4096


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_huge_output_is_refused_by_default(entry: str) -> None:
    result = run_call(entry, [huge], ToolCall("c1", "huge", {}))
    assert len(result.text()) <= FEW_THOUSAND, f"the model would read {len(result.text())} characters"
    assert result.status == "failed" and result.error is not None
    assert result.error.code == "output_too_large"
    assert "max_inline_output_bytes" in result.error.message
    longest = max(len(text) for text in model_facing(result))
    assert longest <= FEW_THOUSAND + 1024, f"a writer sends {longest} characters"
