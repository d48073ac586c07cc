"""The model-facing boundary: the last stage of every call, where what the model reads is made final.

`Boundary.seal` takes a call's result, whatever produced it (the tool, a refusal, middleware, a
failure), and makes its model-facing parts final, in this order:

1. every model-facing string (the error message, content blocks, the output and the text that
   `ToolResult.text` gives) is scrubbed of the call's secrets and passed to the application's
   redaction hook, on the whole text, before anything is cut;
2. the budget: a text longer than ``max_inline_output_bytes`` moves the output to the artifact
   store and leaves a preview cut from the scrubbed text, or fails ``output_too_large``.

Secrets are matched in every form the library itself writes them (`Secrets`). An output is
scrubbed as the JSON text the model reads, so a dict key of any type JSON writes (a number, an
enum, a UUID, a date) is scrubbed as the string it becomes, and an output whose text shows no
secret is kept as it is. A result that cannot be scrubbed is withheld (``redaction_failed``).
Writers (providers, text formats, the MCP server) read only `ToolResult.text`, `structured` and
the content, so nothing the model reads escapes this stage.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._results import (
    AudioContent,
    ImageContent,
    JsonContent,
    PendingRequest,
    ResourceContent,
    StructuredError,
    TextContent,
    ToolCall,
    ToolResult,
)
from tinytools._run.failures import failed, logger
from tinytools._run.output_checks import store_failure
from tinytools._run.secrets import REDACTED, Secrets
from tinytools._run.stream_boundary import StreamBoundary

if TYPE_CHECKING:
    from tinytools._encoding import OutputEncoder
    from tinytools._run.artifacts import ArtifactStore

__all__ = ["DEFAULT_INLINE_OUTPUT_BYTES", "MIN_INLINE_OUTPUT_BYTES", "REDACTED", "Boundary", "checked_budget"]

DEFAULT_INLINE_OUTPUT_BYTES = 100_000
"""The default budget of one result's model-facing text, in UTF-8 bytes (about 25,000 tokens)."""
MIN_INLINE_OUTPUT_BYTES = 64
"""The smallest budget: a message cut to it still fits with the words that say it was cut (51
bytes and the size's digits, "Pending: … [cut: N bytes, over the 64-byte budget]")."""
_encode = msgspec.json.encode
_decode = msgspec.json.decode


def checked_budget(limit: Any) -> int | None:
    """``limit`` if it is a budget a result's text can keep (None, or at least `MIN_INLINE_OUTPUT_BYTES`).

    Raises:
        ValueError: A number below the smallest budget, or not a whole number.
    """
    if limit is None:
        return None
    if not isinstance(limit, bool):
        try:
            whole = operator.index(limit)  # an int, or a number type that is one (numpy's)
        except TypeError:
            pass
        else:
            if whole >= MIN_INLINE_OUTPUT_BYTES:
                return whole
    raise ValueError(
        f"max_inline_output_bytes must be None or a whole number of at least {MIN_INLINE_OUTPUT_BYTES} "
        f"(a cut message must still fit, saying it was cut), not {limit!r}"
    )


class Boundary:
    """One dispatcher's boundary: its redaction hook, its output budget and its artifact store."""

    def __init__(
        self,
        *,
        hook: Callable[[str], str] | None,
        limit: int | None,
        store: ArtifactStore | None,
    ):
        self.hook = hook
        """The application's redaction, applied to every model-facing string after the secrets."""
        self.limit = limit
        """Largest model-facing text kept inline, in UTF-8 bytes (None: no limit)."""
        self.store = store
        """Where an output over the limit goes."""

    def scrubber(self, secrets: Secrets | None) -> Callable[[str], str] | None:
        """The function applied to each model-facing string of a call, or None when there is none."""
        hook = self.hook
        if secrets is None or not secrets:
            return hook
        if hook is None:
            return secrets.scrub
        return lambda text: hook(secrets.scrub(text))

    def seal(self, result: ToolResult, secrets: Secrets | None, start: int, note: str | None = None) -> ToolResult:
        """Make a result's model-facing parts final: scrubbed, then within the budget.

        ``note`` is what the result must also say (a stream cut at the budget), after the rest: a
        failure's message says it within the budget; a success says it after its output.
        """
        scrub = self.hook if secrets is None else self.scrubber(secrets)
        if scrub is not None:
            try:
                media = _Media(self.store, secrets.scrub if secrets else None)
                result = _scrubbed(result, scrub, media)
            except Exception as exc:  # a hook that raised, or nesting too deep to walk: show nothing
                result = _withheld(result, exc)
        limit = self.limit
        if note is not None and result.status != "succeeded":  # a failure says it in its message, within the budget
            if limit is not None and (room := limit - _bytes(note) - 1) >= MIN_INLINE_OUTPUT_BYTES:
                result = _message_within(result, room, limit)  # cut to leave the note room
            result, note = _noted(result, note), None
        if limit is not None:
            if result.status == "succeeded":
                result = self._within_budget(result, scrub, start)
            elif (error := result.error) is None or (
                len(error.message) + 7
            ) * 4 > limit:  # "Error: " + message, bounded
                result = _message_within(result, limit)
        return result if note is None else _noted(result, note)

    def error(self, error: StructuredError, secrets: Secrets | None) -> StructuredError:
        """An error as the model would read it (for events that carry one)."""
        scrub = self.scrubber(secrets)
        if scrub is None:
            return error
        try:
            return StructuredError(scrub(error.code), scrub(error.message), _walk(error.details, scrub))
        except Exception:
            return StructuredError("tool_error", "[withheld: the message could not be checked for secrets]")

    def too_large(self, call: ToolCall, name: str, size: int, start: int) -> ToolResult:
        """The ``output_too_large`` failure of an output of ``size`` bytes, with nowhere to put it."""
        message = (
            f"Tool {name!r} returned {size} bytes, more than the {self.limit} bytes allowed inline, and "
            "no artifact store is configured; ask for less (a narrower query, a page), or have the "
            "application raise max_inline_output_bytes or give the dispatcher an artifact store."
        )
        return failed(call, name, "output_too_large", message, start)

    def stream(self, secrets: Secrets | None, encoder: OutputEncoder, call: tuple[str, str, int]) -> StreamBoundary:
        """The boundary of what one call sends while it runs (`tinytools._run.stream_boundary`).

        ``call`` is its id, its tool's name and when it started.
        """
        return StreamBoundary(secrets, self.hook, self.limit, encoder, call)

    def shown(self, data: Any, secrets: Secrets | None) -> Any:
        """JSON data as a person may be shown it (a call's arguments in an inbox): every string scrubbed.

        None when it cannot be checked for secrets.
        """
        scrub = self.scrubber(secrets)
        if scrub is None:
            return data
        try:
            return _walk(_decode(_encode(data)), scrub)  # as JSON: a tuple an application built included
        except Exception:
            return None

    def _within_budget(self, result: ToolResult, scrub: Callable[[str], str] | None, start: int) -> ToolResult:
        limit = self.limit
        assert limit is not None
        output = result.output
        if result.content is None and output.__class__ is not str:
            try:
                if len(_encode(output)) <= limit:  # the text is this JSON: no need to make it
                    return result
            except (TypeError, ValueError, OverflowError, RecursionError):
                pass
        elif result.content is None and len(output) * 4 <= limit:
            return result
        text = result.text()
        size = len(text.encode("utf-8", "surrogatepass"))
        if size <= limit:
            return result
        call = ToolCall(result.call_id, result.name)
        if self.store is None:  # the failure that says so is held to the budget too
            return _message_within(self.too_large(call, result.name, size, start), limit)
        original = result.output if result.content is None else text
        try:
            data = _encode(original) if result.content is None else text.encode("utf-8", "surrogatepass")
            media_type = "application/json" if result.content is None else "text/plain"
            ref = self.store.put(data, media_type, {"tool": result.name, "call_id": result.call_id})
        except Exception as exc:
            return _message_within(store_failure(call, result.name, exc, start), limit)
        preview = text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
        note = (
            f"The output ({ref.size} bytes) was stored as artifact {ref.key} ({ref.media_type}); it begins: {preview}"
        )
        if scrub is not None:
            note = scrub(note)
        return ToolResult(
            call_id=result.call_id,
            name=result.name,
            status="succeeded",
            content=[TextContent(note)],
            artifacts=[*result.artifacts, ref],
            elapsed=perf_counter_ns() - start,
        )


def _scrubbed(result: ToolResult, scrub: Callable[[str], str], media: _Media) -> ToolResult:
    """The result with every model-facing string scrubbed, the text it gives included.

    An output read as JSON (no error, no content) is scrubbed as the text the model reads; only
    when that text held a secret is the output itself walked, for `ToolResult.structured` and
    the application. So an output that encodes and shows no secret is sealed as it is, whatever
    its keys or its depth.
    """
    error = result.error
    if error is not None:
        error = StructuredError(scrub(error.code), scrub(error.message), _walk(error.details, scrub))
    content = result.content
    if content is not None:
        content = [_block(block, scrub, media) for block in content]
    pending = result.pending
    if pending is not None:  # what it waits for is read by the model too
        named = pending.request.name
        request = PendingRequest(
            scrub(pending.request.message),
            _walk(pending.request.schema, scrub),
            None if named is None else scrub(named),
        )
        pending = msgspec.structs.replace(pending, request=request)
    sealed = ToolResult(
        call_id=result.call_id,
        name=result.name,
        status=result.status,
        output=result.output,
        content=content,
        error=error,
        artifacts=result.artifacts,
        pending=pending,
        elapsed=result.elapsed,
    )
    if error is not None or content is not None or pending is not None:  # the output is the application's alone
        sealed.output = _walk(result.output, scrub)
        return sealed
    text = sealed.text()
    final = scrub(text)
    if final == text:  # no form of a secret in the JSON, so none in the output it encodes
        return sealed
    sealed.output = _walk(result.output, scrub)  # too deep to walk: withheld, as it holds a secret
    walked = sealed.text()
    if scrub(walked) != walked:  # a secret across what the walk saw apart
        sealed.content = [TextContent(final)]
    return sealed


def _block(block: Any, scrub: Callable[[str], str], media: _Media) -> Any:
    if isinstance(block, TextContent):
        return TextContent(scrub(block.text))
    if isinstance(block, JsonContent):
        return JsonContent(_walk(block.data, scrub))
    if isinstance(block, (ImageContent, AudioContent, ResourceContent)):
        return media.sealed(block, scrub)
    return block


class _Media:
    """What a call's images, sounds and resources may show the model: their bytes are read back and checked.

    A writer sends a block's bytes (as text for a text resource, else base64), so a text resource
    is sent as a scrubbed copy when its text held a secret, and any other block whose bytes hold a
    secret (as bytes, or as UTF-16 text at either alignment) is withheld: a note takes its place.
    Bytes the store cannot give back are sent by no writer.
    """

    __slots__ = ("secrets", "store")

    def __init__(self, store: ArtifactStore | None, secrets: Callable[[str], str] | None):
        self.store = store
        self.secrets = secrets
        """The call's secrets' scrubber alone (no hook): what binary bytes are searched with."""

    def sealed(self, block: Any, scrub: Callable[[str], str]) -> Any:
        ref = block.artifact
        if scrub(ref.media_type) != ref.media_type:  # the text names it, and writers send it as a MIME type
            return TextContent(f"[withheld: the artifact {ref.key} held a secret]")
        if isinstance(block, ResourceContent):
            block = ResourceContent(scrub(block.uri), ref)
        try:
            data = self.store.get(ref.key) if self.store is not None else None
        except KeyError:
            data = None
        if data is None:
            return block
        text = block.text(data) if isinstance(block, ResourceContent) else None
        if text is not None:
            clean = scrub(text)
            if clean == text:
                return block
            assert self.store is not None
            copy = self.store.put(clean.encode("utf-8", "surrogatepass"), ref.media_type, ref.metadata)
            return ResourceContent(block.uri, copy)
        if self.secrets is not None and _holds_secret(data, self.secrets):
            return TextContent(f"[withheld: the {ref.media_type} artifact {ref.key} held a secret]")
        return block


def _holds_secret(data: bytes, scrub: Callable[[str], str]) -> bool:
    """Whether some reading of ``data`` shows a secret: its bytes one to a character, UTF-8, or UTF-16."""
    readings = (
        data.decode("latin-1"),
        data.decode("utf-8", "ignore"),
        data.decode("utf-16-le", "ignore"),
        data[1:].decode("utf-16-le", "ignore"),
    )
    return any(scrub(reading) != reading for reading in readings)


def _walk(value: Any, scrub: Callable[[str], str]) -> Any:
    """A JSON value with every string (keys included) and every number scrubbed."""
    kind = value.__class__
    if kind is str:
        return scrub(value)
    if kind is list:
        return [_walk(item, scrub) for item in value]
    if kind is dict:
        return {_key(key, scrub): _walk(item, scrub) for key, item in value.items()}
    if kind is int or kind is float:
        text = repr(value)
        return value if scrub(text) == text else REDACTED
    return value


def _key(key: Any, scrub: Callable[[str], str]) -> Any:
    """A dict key scrubbed as JSON writes it; a key of another type stays itself unless it shows a secret."""
    if key.__class__ is str:
        return scrub(key)
    try:
        (text,) = _decode(_encode({key: None}))  # the string msgspec writes for a number, enum, UUID, date
    except (TypeError, ValueError):
        text = str(key)
    final = scrub(text)
    return key if final == text else final


def _message_within(result: ToolResult, limit: int, budget: int | None = None) -> ToolResult:
    """A failure's or a pending call's text held to ``limit`` bytes: its message cut, saying so.

    The cut names ``budget``, the run's, when less than it is left (room kept for a note).

    `Boundary.seal` asks only for a result whose text may be over the budget. A pending call whose
    requested schema alone is over the budget fails instead: its request cannot be shown whole, and
    a cut schema is no schema.
    """
    pending = result.pending
    if pending is not None and pending.request.schema is not None and len(_encode(pending.request.schema)) > limit:
        message = (
            f"Tool {result.name!r} asked for an answer whose schema is larger than the {limit}-byte budget; "
            "it must ask with a smaller schema."
        )
        refused = failed(ToolCall(result.call_id, result.name), result.name, "tool_error", message, perf_counter_ns())
        return _message_within(refused, limit)  # held to the budget like the request it replaces
    text = result.text()
    if len(text) * 4 <= limit:
        return result
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return result
    tail = f"… [cut: {size} bytes, over the {budget or limit}-byte budget]"  # the run's budget, if less is left
    room = max(0, limit - (size - _bytes(_message(result))) - _bytes(tail))
    cut = _message(result).encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore") + tail
    if result.error is not None:
        return msgspec.structs.replace(result, error=msgspec.structs.replace(result.error, message=cut))
    assert result.pending is not None
    request = msgspec.structs.replace(result.pending.request, message=cut)
    return msgspec.structs.replace(result, pending=msgspec.structs.replace(result.pending, request=request))


def _message(result: ToolResult) -> str:
    if result.error is not None:
        return result.error.message
    return result.pending.request.message if result.pending is not None else ""


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _noted(result: ToolResult, note: str) -> ToolResult:
    """The result saying ``note`` after what it says already."""
    if result.error is not None:
        error = msgspec.structs.replace(result.error, message=f"{result.error.message} {note}")
        return msgspec.structs.replace(result, error=error)
    if result.status != "succeeded":
        return result
    content = result.content if result.content is not None else [TextContent(result.text())]
    return msgspec.structs.replace(result, content=[*content, TextContent(note)])


def _withheld(result: ToolResult, exc: Exception) -> ToolResult:
    """The result in place of one that could not be scrubbed: it says nothing the tool said."""
    error_id = os.urandom(6).hex()
    logger().error("redacting the result of tool %r failed (error id %s)", result.name, error_id, exc_info=exc)
    message = f"The result of {result.name!r} could not be checked for secrets and is withheld (error id {error_id})."
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        status="outcome_unknown" if result.status == "succeeded" else result.status,  # it may have acted
        error=StructuredError("redaction_failed", message, {"error_id": error_id}),
        elapsed=result.elapsed,
    )
