"""A result's images reach each provider as its own image block, read from the artifact store.

Each writer's shape is checked against that SDK's own types; without the store, or for an image
whose bytes do not match its reference, the text alone goes (it names the artifact).
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pydantic
from anthropic.types import ToolResultBlockParam
from google.genai import types as genai
from mcp.types import CallToolResult
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tinytools import Dispatcher, MemoryArtifactStore, ToolCall, ToolOutput, tool
from tinytools._results import ImageContent
from tinytools.providers import anthropic, gemini, mcp, openai_responses

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@tool
def chart(title: str) -> ToolOutput:
    """Draw a chart."""
    return ToolOutput({"title": title}, content=f"A chart of {title}.", artifacts=[(PNG, "image/png")])


def _result() -> tuple[Any, MemoryArtifactStore]:
    store = MemoryArtifactStore()
    result = Dispatcher([chart], artifacts=store).dispatch(ToolCall("c", "chart", {"title": "sales"}))
    assert result.artifacts and result.content is not None
    picture = ImageContent(result.artifacts[0])
    import msgspec

    return msgspec.structs.replace(result, content=[*result.content, picture]), store


def test_each_provider_gets_its_own_image_block() -> None:
    result, store = _result()
    data = base64.b64encode(PNG).decode()
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


def test_without_the_store_or_with_other_bytes_the_text_goes_alone() -> None:
    result, _ = _result()
    assert isinstance(anthropic.write_results([result])[0]["content"], str)
    assert isinstance(openai_responses.write_results([result])[0]["output"], str)
    forged = MemoryArtifactStore()
    forged._data[result.artifacts[0].key] = b"not the image"  # the key the reference names, other bytes
    assert isinstance(anthropic.write_results([result], artifacts=forged)[0]["content"], str)
    assert "parts" not in gemini.write_results([result], artifacts=MemoryArtifactStore())[0]["functionResponse"]


def test_the_mcp_server_sends_a_tools_image() -> None:
    from mcp import Client

    from tinytools.providers.mcp import build_server

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
