"""The records of a call: `ToolCall` in, `ToolResult` out, and what a result holds.

A result carries the output (JSON data for the application), optional model-facing
``content`` blocks, a `StructuredError` when it did not succeed, and `ArtifactRef` s for data
kept out of line. All are msgspec Structs: cheap to build, and they encode to JSON and decode
back as they are.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from tinytools._public import publish

__all__ = [
    "ArtifactRef",
    "AudioContent",
    "Content",
    "ImageContent",
    "JsonContent",
    "Pending",
    "PendingCall",
    "PendingRequest",
    "ResourceContent",
    "Status",
    "StructuredError",
    "TextContent",
    "ToolCall",
    "ToolOutput",
    "ToolResult",
]

Status = Literal["succeeded", "failed", "outcome_unknown", "pending"]
"""The three final states of a call, and ``pending``: it ends later, through `Dispatcher.resume`."""

PendingKind = Literal["approval", "input", "external", "task"]
"""What a pending call waits for: an approver, the user, the application, or its own run."""

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class ToolCall(msgspec.Struct, frozen=True):
    """One call a model asked for.

    ``arguments`` is a JSON text (``str`` or ``bytes``, as OpenAI sends it) or an already
    decoded object (``dict``, as Anthropic and Gemini send it).
    """

    id: str
    """The provider's call id; the result carries it back."""
    name: str
    """The tool the model named."""
    arguments: Any = "{}"
    """JSON text or decoded object."""
    invalid: str | None = None
    """Why a call parsed from text cannot be used, or None for a usable call."""


class StructuredError(msgspec.Struct, frozen=True, omit_defaults=True):
    """An error the model may see: a short code and safe text only."""

    code: str
    """Machine-readable: ``unknown_tool``, ``invalid_arguments``, ``tool_error``, ..."""
    message: str
    """Text for the model, written to help it repair the call."""
    details: dict[str, Any] | None = None
    """Structured detail for the application (pointer, keyword, error id, ...)."""


class ArtifactRef(msgspec.Struct, frozen=True, omit_defaults=True):
    """A reference to bytes kept in an `ArtifactStore`, content-addressed by SHA-256."""

    key: str
    """The store's key (the hex SHA-256 of the bytes)."""
    size: int
    """Length of the bytes."""
    media_type: str
    """What the bytes are (``application/json``, ``image/png``, ...)."""
    sha256: str
    """Hex SHA-256 of the bytes, to check what ``get`` returns."""
    metadata: dict[str, Any] = {}
    """Whatever the writer attached (tool name, call id, ...)."""

    @classmethod
    def of(cls, data: bytes, media_type: str, metadata: dict[str, Any] | None = None) -> ArtifactRef:
        """The reference any store gives ``data`` (stores are content-addressed), made without one.

        For a tool with no store at hand: ``ToolOutput(content=[ImageContent(ArtifactRef.of(png,
        "image/png"))], artifacts=[(png, "image/png")])`` shows the image the dispatcher stores.
        """
        import hashlib  # loaded by the first call that makes a reference, not by `import tinytools`

        digest = hashlib.sha256(data).hexdigest()
        return cls(digest, len(data), media_type, digest, dict(metadata or {}))


class TextContent(msgspec.Struct, frozen=True, tag="text"):
    """Text for the model."""

    text: str
    """The text."""


class JsonContent(msgspec.Struct, frozen=True, tag="json"):
    """JSON data for the model."""

    data: Any
    """The JSON value."""


class ImageContent(msgspec.Struct, frozen=True, tag="image"):
    """An image shown to the model by reference, never inline."""

    artifact: ArtifactRef
    """Where the image's bytes are."""


class AudioContent(msgspec.Struct, frozen=True, tag="audio"):
    """A sound clip for the model, by reference (``audio/wav``, ``audio/mpeg``, ...)."""

    artifact: ArtifactRef
    """Where the audio's bytes are."""


class ResourceContent(msgspec.Struct, frozen=True, tag="resource"):
    """A document or file for the model, named by a URI, its bytes by reference (a PDF, a text file)."""

    uri: str
    """What the resource is called (``file:///report.pdf``, ``https://...``); its last part is its file name."""
    artifact: ArtifactRef
    """Where its bytes are; the reference's media type says what they are."""

    @property
    def textual(self) -> bool:
        """Whether its bytes are text (``text/*``, JSON or XML): read as text, and scrubbed of secrets as text."""
        kind = self.artifact.media_type.partition(";")[0].strip().lower()
        return kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))

    def text(self, data: bytes) -> str | None:
        """Its bytes ``data`` as the text a writer sends, or None when they are not UTF-8 text."""
        if not self.textual:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None


_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/yaml", "application/x-yaml"})


Content = TextContent | JsonContent | ImageContent | AudioContent | ResourceContent
"""A model-facing content block (encoded with a ``"type"`` tag).

Text and JSON are read by every provider. Images, audio and resources are kept in the
dispatcher's artifact store; the text names each one, and a provider writer given the store
sends each as that provider's own block where it has one (see Providers in the docs).
"""


class PendingRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a pending call asks for: a message, and the JSON Schema its answer must match."""

    message: str
    """For the person or program that answers (and for the model, which reads it)."""
    schema: dict[str, Any] | None = None
    """The answer's JSON Schema; None when no answer is taken (a task ends by itself)."""
    name: str | None = None
    """What the tool calls its question (``ask(..., name=...)``), for a client that tells questions
    apart by name: an MCP server sends it as the key of its input request."""


class Pending(msgspec.Struct, frozen=True):
    """Why a call ended its turn unfinished, and how to finish it."""

    handle: str
    """Opaque and signed: pass it to `Dispatcher.resume` (or ``poll``, for a task)."""
    kind: PendingKind
    """``approval``, ``input``, ``external`` or ``task``."""
    request: PendingRequest
    """The message and the expected answer's schema."""
    expires_at: float
    """When the call ends by itself if nobody answers (seconds since the epoch)."""


class PendingCall(msgspec.Struct, frozen=True):
    """A call that waits, as an inbox lists it (`Dispatcher.pending`)."""

    call_id: str
    """The call's id."""
    run_id: str
    """The run the call belongs to."""
    tool: str
    """The tool it calls."""
    arguments: Any
    """Its validated arguments as they stand (an approver's edit included), scrubbed of secrets."""
    pending: Pending
    """What it waits for (``kind``, ``request``, ``expires_at``) and the ``handle`` that resumes it."""


class ToolOutput:
    """What a tool returns to give the model a summary and the application the full data.

    ``return ToolOutput(rows, content=f"{len(rows)} rows; the first: {rows[0]}")`` puts
    ``rows`` in `ToolResult.output` and the summary in `ToolResult.content`. ``artifacts``
    are `ArtifactRef` s the tool already stored, or ``(bytes, media_type)`` pairs the
    dispatcher stores in its artifact store.
    """

    __slots__ = ("artifacts", "content", "value")

    def __init__(
        self,
        value: Any = None,
        *,
        content: str | list[Content] | None = None,
        artifacts: list[ArtifactRef | tuple[bytes, str]] | None = None,
    ):
        self.value = value
        self.content: list[Content] | None = [TextContent(content)] if isinstance(content, str) else content
        self.artifacts = list(artifacts or ())


class ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The one result every call ends in; it carries the call's id."""

    call_id: str
    """The id of the `ToolCall` this answers."""
    name: str
    """The tool's canonical name (or the requested name when no tool matched)."""
    status: Status
    """``succeeded``, ``failed``, ``outcome_unknown``, or ``pending`` (not final: see `pending`)."""
    output: Any = None
    """The tool's return value as JSON-compatible data."""
    content: list[Content] | None = None
    """Model-facing blocks; None means "the output, as JSON"."""
    error: StructuredError | None = None
    """Present exactly when the call did not succeed."""
    artifacts: list[ArtifactRef] = []
    """Data kept out of line (large outputs, files, images)."""
    pending: Pending | None = None
    """Present exactly when the status is ``pending``."""
    elapsed: int = 0
    """Nanoseconds from the start of dispatch to the result."""

    @property
    def is_error(self) -> bool:
        """True when the call failed or may have acted without telling how (not while pending)."""
        return self.status == "failed" or self.status == "outcome_unknown"

    def text(self) -> str:
        """What the model reads, as text: every writer sends this (or `structured`), nothing else.

        A call that did not succeed reads ``Error: <message>``, so it reads as a failure where a
        protocol has no flag for one; else the content's text, or the output (itself when it is a
        string, else as JSON).
        """
        if self.error is not None:
            return f"Error: {self.error.message}"
        if self.pending is not None:
            return f"Pending: {self.pending.request.message}"
        if self.content is not None:
            return "\n".join(_block_text(block) for block in self.content)
        if isinstance(self.output, str):
            return self.output
        return _encode(self.output).decode()

    def structured(self) -> Any:
        """What the model reads, as JSON, for protocols that carry a JSON value; None when there is none.

        The output, when it is what the model reads: the call succeeded and no content stands in
        its place (a summary, a stored output's note, text the boundary scrubbed). Otherwise the
        model reads `text` alone, and an application-only value never goes out. A dict or list
        comes as `text` decoded, so it is JSON data even where `output` is not quite: the tool's
        own dict may have keys JSON writes as strings (numbers, enums, UUIDs, dates).
        """
        if self.error is not None or self.content is not None or self.pending is not None:
            return None
        output = self.output
        kind = output.__class__
        return _decode(_encode(output)) if kind is dict or kind is list else output

    def validate(self) -> None:
        """Check the result is well formed: one terminal status, an error exactly when failed.

        Raises:
            ResultError: What is wrong with it.
        """
        from tinytools._errors import ResultError

        if self.status not in _STATUSES:
            raise ResultError(f"status {self.status!r} is not one of {', '.join(_STATUSES)}")
        if (self.status == "pending") != (self.pending is not None):
            raise ResultError("a pending result, and only one, carries its Pending record")
        if self.status in ("succeeded", "pending") and self.error is not None:
            raise ResultError(f"a {self.status} result carries an error")
        if self.is_error and self.error is None:
            raise ResultError(f"a {self.status} result has no error to tell the model why")
        if not self.call_id:
            raise ResultError("the result has no call id")

    def validate_within(self, max_inline_output_bytes: int) -> None:
        """Check the result, and that the text the model reads is at most that many UTF-8 bytes.

        Nothing is truncated or rewritten; a text over the budget is an error.

        Raises:
            ResultError: The result is malformed or its text is too large.
        """
        from tinytools._errors import ResultError

        self.validate()
        size = len(self.text().encode("utf-8", "surrogatepass"))
        if size > max_inline_output_bytes:
            raise ResultError(f"the model-facing text is {size} bytes; the budget is {max_inline_output_bytes}")

    def to_json(self) -> bytes:
        """Encode the whole result as JSON.

        Text that is not Unicode (a lone surrogate in a call id a provider sent) is written as a
        JSON escape, which decodes back to the same string.
        """
        try:
            return _encode(self)
        except UnicodeEncodeError:
            import json

            return json.dumps(msgspec.to_builtins(self), ensure_ascii=True, separators=(",", ":")).encode()


_STATUSES = ("succeeded", "failed", "outcome_unknown", "pending")


def _block_text(block: Content) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, JsonContent):
        return _encode(block.data).decode()
    if isinstance(block, ResourceContent):
        return f"[resource {block.uri} ({block.artifact.media_type}) artifact {block.artifact.key}]"
    return f"[{block.artifact.media_type} artifact {block.artifact.key}]"


publish(
    "tinytools",
    ToolCall,
    StructuredError,
    ArtifactRef,
    TextContent,
    JsonContent,
    ImageContent,
    AudioContent,
    ResourceContent,
    PendingRequest,
    Pending,
    PendingCall,
    ToolOutput,
    ToolResult,
)
