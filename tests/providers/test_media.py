"""A result's images, audio and resources reach each provider as its own block, read from the artifact store.

Each writer's shape is checked against that SDK's own types; what a provider has no block for,
and every block without the store or whose bytes do not match their reference, goes as the text
alone (which names the artifact). The MCP server's default dispatchers keep a session's media in
memory, so `serve-mcp` sends them too; a text resource is scrubbed of secrets like any text.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Any

import msgspec
import pydantic
import pytest
from anthropic.types import ToolResultBlockParam
from google.genai import types as genai
from mcp import Client
from mcp.types import CallToolResult
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tinytools import (
    ArtifactRef,
    AudioContent,
    Dispatcher,
    ImageContent,
    Injected,
    MemoryArtifactStore,
    ResourceContent,
    TextContent,
    ToolCall,
    ToolOutput,
    tool,
)
from tinytools.providers import anthropic, gemini, mcp, openai, openai_responses
from tinytools.providers.mcp import build_server

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00" + (
    b"data\x00\x00\x00\x00"
)
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
NOTES = "Quarterly notes: sales up."


@tool
def chart(title: str) -> ToolOutput:
    """Draw a chart."""
    return ToolOutput({"title": title}, content=f"A chart of {title}.", artifacts=[(PNG, "image/png")])


def _result() -> tuple[Any, MemoryArtifactStore]:
    store = MemoryArtifactStore()
    result = Dispatcher([chart], artifacts=store).dispatch(ToolCall("c", "chart", {"title": "sales"}))
    assert result.artifacts and result.content is not None
    picture = ImageContent(result.artifacts[0])
    return msgspec.structs.replace(result, content=[*result.content, picture]), store


def _everything() -> tuple[Any, MemoryArtifactStore]:
    """A result with text, an image, a sound, a PDF and a text file, all in one store."""
    store = MemoryArtifactStore()
    content = [
        TextContent("Here they are."),
        ImageContent(store.put(PNG, "image/png")),
        AudioContent(store.put(WAV, "audio/wav")),
        ResourceContent("file:///reports/q3.pdf", store.put(PDF, "application/pdf")),
        ResourceContent("file:///reports/notes.txt", store.put(NOTES.encode(), "text/plain")),
    ]

    @tool
    def report() -> ToolOutput:
        """Gather the report."""
        return ToolOutput(None, content=content)

    return Dispatcher([report], artifacts=store).dispatch(ToolCall("c", "report", {})), store


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_each_provider_gets_its_own_image_block() -> None:
    result, store = _result()
    data = _b64(PNG)
    (block,) = anthropic.write_results([result], artifacts=store)
    assert block["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data},
    }
    pydantic.TypeAdapter(ToolResultBlockParam).validate_python(block)
    (item,) = openai_responses.write_results([result], artifacts=store)
    assert item["output"][1] == {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}
    pydantic.TypeAdapter(FunctionCallOutput).validate_python(item)
    (part,) = gemini.write_results([result], artifacts=store)
    assert part["functionResponse"]["parts"] == [{"inlineData": {"mimeType": "image/png", "data": data}}]
    genai.Part.model_validate(part)
    (payload,) = mcp.write_results([result], artifacts=store)
    assert payload["content"][1] == {"type": "image", "data": data, "mimeType": "image/png"}
    CallToolResult.model_validate(payload)


def test_audio_and_resources_go_where_each_provider_has_a_block_for_them() -> None:
    result, store = _everything()
    assert result.status == "succeeded"
    text = result.text()
    assert "[resource file:///reports/q3.pdf (application/pdf) artifact" in text and "[audio/wav artifact" in text
    (payload,) = mcp.write_results([result], artifacts=store)
    CallToolResult.model_validate(payload)
    assert [block["type"] for block in payload["content"]] == ["text", "image", "audio", "resource", "resource"]
    assert payload["content"][2] == {"type": "audio", "data": _b64(WAV), "mimeType": "audio/wav"}
    assert payload["content"][3]["resource"] == {
        "uri": "file:///reports/q3.pdf",
        "mimeType": "application/pdf",
        "blob": _b64(PDF),
    }
    assert payload["content"][4]["resource"] == {
        "uri": "file:///reports/notes.txt",
        "mimeType": "text/plain",
        "text": NOTES,
    }
    (block,) = anthropic.write_results([result], artifacts=store)
    pydantic.TypeAdapter(ToolResultBlockParam).validate_python(block)
    assert [part["type"] for part in block["content"]] == ["text", "image", "document", "document"]  # no audio block
    assert block["content"][2]["source"] == {"type": "base64", "media_type": "application/pdf", "data": _b64(PDF)}
    assert block["content"][3]["source"] == {"type": "text", "media_type": "text/plain", "data": NOTES}
    assert block["content"][3]["title"] == "file:///reports/notes.txt"
    (item,) = openai_responses.write_results([result], artifacts=store)
    pydantic.TypeAdapter(FunctionCallOutput).validate_python(item)
    assert [part["type"] for part in item["output"]] == ["input_text", "input_image", "input_file", "input_file"]
    assert item["output"][2] == {
        "type": "input_file",
        "file_data": f"data:application/pdf;base64,{_b64(PDF)}",
        "filename": "q3.pdf",
    }
    (part,) = gemini.write_results([result], artifacts=store)
    genai.Part.model_validate(part)
    assert [inline["inlineData"]["mimeType"] for inline in part["functionResponse"]["parts"]] == [
        "image/png",
        "application/pdf",
    ]
    (chat,) = openai.write_results([result])
    assert chat["content"] == text  # Chat Completions tool messages carry the text alone


def test_without_the_store_or_with_other_bytes_the_text_goes_alone() -> None:
    result, _ = _result()
    assert isinstance(anthropic.write_results([result])[0]["content"], str)
    assert isinstance(openai_responses.write_results([result])[0]["output"], str)
    forged = MemoryArtifactStore()
    forged._data[result.artifacts[0].key] = b"not the image"  # the key the reference names, other bytes
    assert isinstance(anthropic.write_results([result], artifacts=forged)[0]["content"], str)
    assert "parts" not in gemini.write_results([result], artifacts=MemoryArtifactStore())[0]["functionResponse"]
    everything, _ = _everything()
    assert [block["type"] for block in mcp.write_results([everything])[0]["content"]] == ["text"]


def test_a_mislabelled_block_is_not_sent_as_what_it_claims() -> None:
    store = MemoryArtifactStore()
    content = [ImageContent(store.put(WAV, "audio/wav")), AudioContent(store.put(PNG, "image/png"))]

    @tool
    def odd() -> ToolOutput:
        """Label its media wrongly."""
        return ToolOutput(None, content=content)

    result = Dispatcher([odd], artifacts=store).dispatch(ToolCall("c", "odd", {}))
    assert [block["type"] for block in mcp.write_results([result], artifacts=store)[0]["content"]] == ["text"]


def test_the_mcp_servers_default_dispatchers_keep_and_send_a_sessions_media() -> None:
    kinds = {"image": (PNG, "image/png"), "audio": (WAV, "audio/wav"), "document": (PDF, "application/pdf")}

    @tool
    def show(kind: str) -> ToolOutput:
        """Show an image, a sound or a document: stored by whatever dispatcher runs the call."""
        pair = kinds[kind]
        ref = ArtifactRef.of(*pair)
        block = {"image": ImageContent(ref), "audio": AudioContent(ref)}.get(
            kind, ResourceContent("file:///a.pdf", ref)
        )
        return ToolOutput(None, content=[TextContent(f"Here is the {kind}."), block], artifacts=[pair])

    async def talk() -> list[Any]:
        async with Client(build_server([show]), mode="legacy") as client:
            return [await client.call_tool("show", {"kind": kind}) for kind in kinds]

    answers = asyncio.run(talk())
    assert [[block.type for block in answer.content] for answer in answers] == [
        ["text", "image"],
        ["text", "audio"],
        ["text", "resource"],
    ]
    assert [answer.content[1].data for answer in answers[:2]] == [_b64(PNG), _b64(WAV)]
    assert answers[2].content[1].resource.blob == _b64(PDF)


def test_the_mcp_server_sends_a_tools_image() -> None:
    @tool
    def picture(name: str) -> ToolOutput:
        """Show a picture."""
        return ToolOutput(None, content=[ImageContent(STORE.put(PNG, "image/png"))])

    STORE = MemoryArtifactStore()

    async def talk() -> Any:
        server = build_server(
            [picture], dispatcher_factory=lambda on_event: Dispatcher([picture], artifacts=STORE, on_event=on_event)
        )
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("picture", {"name": "x"})

    result = asyncio.run(talk())
    kinds = [item.type for item in result.content]
    assert "image" in kinds


def test_a_text_resource_reaches_the_model_scrubbed_of_secrets() -> None:
    store = MemoryArtifactStore()

    @tool
    def leak(*, key: Annotated[str, Injected("api_key", secret=True)]) -> ToolOutput:
        """Write a file that quotes the key."""
        ref = store.put(f"the key is {key}, keep it".encode(), "text/plain")
        return ToolOutput(None, content=[ResourceContent(f"file:///{key}.txt", ref)])

    secret = "sk-live-7f3a9c2e41d8b6"
    result = Dispatcher([leak], artifacts=store).dispatch(ToolCall("c", "leak", {}), inject={"api_key": secret})
    (payload,) = mcp.write_results([result], artifacts=store)
    (block,) = anthropic.write_results([result], artifacts=store)
    sent = msgspec.json.encode([payload, block]).decode()
    assert secret not in sent and secret[:8] not in sent
    assert payload["content"][1]["resource"]["text"].startswith("the key is ")


SECRET = "sk-live-7f3a9c2e41d8b6"
LEAKY = {
    "utf-8 text": (f"key {SECRET}".encode(), "text/plain", "resource"),
    "latin-1 text": (f"clé {SECRET}".encode("latin-1"), "text/plain; charset=latin-1", "resource"),
    "utf-16 text": (f"key {SECRET}".encode("utf-16"), "text/plain; charset=utf-16", "resource"),
    "utf-8 with a stray byte": (f"key {SECRET}".encode() + b"\xff", "text/plain", "resource"),
    "a csv called octet-stream": (f"a,b\n1,{SECRET}\n".encode(), "application/octet-stream", "resource"),
    "ndjson": (f'{{"k": "{SECRET}"}}\n'.encode(), "application/x-ndjson", "resource"),
    "an svg image": (f"<svg><text>{SECRET}</text></svg>".encode(), "image/svg+xml", "image"),
    "a png with a text chunk": (PNG + f"tEXtkey\x00{SECRET}".encode(), "image/png", "image"),
    "a wav with a comment": (WAV + f"LIST{SECRET}".encode("utf-16-be"), "audio/wav", "audio"),
    "a media type naming the key": (b"plain bytes", f"image/x-{SECRET}", "image"),
    "a resource type naming the key": (b"plain bytes", f"text/plain; note={SECRET}", "resource"),
}


def _readings(payload: Any) -> str:
    """Everything a writer's output holds, base64 fields and data URLs decoded every way they could read."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            found.append(value)
            encoded = value.rpartition("base64,")[2]
            try:
                raw = base64.b64decode(encoded, validate=True)
            except ValueError:
                return
            found.extend(
                [raw.decode("latin-1"), raw.decode("utf-16-le", "ignore"), raw[1:].decode("utf-16-le", "ignore")]
            )

    walk(payload)
    return "\n".join(found)


@pytest.mark.parametrize("entry", ["dispatch", "adispatch"])
@pytest.mark.parametrize("case", list(LEAKY))
def test_no_writer_sends_a_secret_held_in_an_artifacts_bytes(case: str, entry: str) -> None:
    data, media_type, kind = LEAKY[case]
    store = MemoryArtifactStore()

    @tool
    def leak(*, key: Annotated[str, Injected("api_key", secret=True)]) -> ToolOutput:
        """Hand back bytes that hold the key."""
        ref = store.put(data, media_type)
        block = {"image": ImageContent(ref), "audio": AudioContent(ref)}.get(kind, ResourceContent("file:///f", ref))
        return ToolOutput(None, content=[TextContent("see attached"), block])

    dispatcher, call = Dispatcher([leak], artifacts=store), ToolCall("c", "leak", {})
    if entry == "dispatch":
        result = dispatcher.dispatch(call, inject={"api_key": SECRET})
    else:
        result = asyncio.run(dispatcher.adispatch(call, inject={"api_key": SECRET}))
    assert result.status == "succeeded"
    assert SECRET[:8] not in result.text()
    for writer in (anthropic, openai_responses, gemini, mcp):
        sent = _readings(writer.write_results([result], artifacts=store))
        assert SECRET[:8] not in sent, (writer.__name__, case)
