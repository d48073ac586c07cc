"""Turn plain Python functions into tools a language model can call."""

import typing as _typing
from typing import Any as _Any

from tinytools._context import (
    Ask,
    CancellationToken,
    CancelledCall,
    IdempotencyKey,
    Invocation,
    Progress,
    RunContext,
    Stores,
)
from tinytools._errors import (
    ArgumentsError,
    InjectionError,
    JournalError,
    NeedsInput,
    PendingError,
    ResultError,
    RetryableError,
    SchemaError,
    TinyToolsError,
    ToolDefinitionError,
    ToolDefinitionWarning,
    ToolError,
    ToolNotFound,
    TransferError,
    WaitsElsewhere,
)
from tinytools._events import (
    InvalidToolArgs,
    ToolCompleted,
    ToolDenied,
    ToolEvent,
    ToolFailed,
    ToolOutputChunk,
    ToolPending,
    ToolProgress,
    ToolStarted,
    UnknownToolCall,
)
from tinytools._results import (
    ArtifactRef,
    AudioContent,
    Content,
    ImageContent,
    JsonContent,
    Pending,
    PendingCall,
    PendingRequest,
    ResourceContent,
    Status,
    StructuredError,
    TextContent,
    ToolCall,
    ToolOutput,
    ToolResult,
)
from tinytools._run.admission import Rewrite
from tinytools._run.dispatcher import Dispatcher
from tinytools._run.limits import Limits
from tinytools._run.shortcuts import adispatch, adispatch_many, dispatch, dispatch_many
from tinytools._run.threads import Strays, strays
from tinytools._run.tracing import Tracing
from tinytools._schema.annotations import Param
from tinytools._schema.input_schema import InputSchema
from tinytools._schema.signatures import Injected
from tinytools._tool import Tool, tool
from tinytools._toolbox import Toolbox
from tinytools._toolformat import ToolFormat
from tinytools.policy import ToolPolicy

if _typing.TYPE_CHECKING:  # what type checkers and the API reference read; at run time, `__getattr__` below
    from tinytools._run.artifacts import ArtifactStore, FileArtifactStore, MemoryArtifactStore
    from tinytools._run.call_plans import plan_steps
    from tinytools._run.journal_stage import NOT_RUN
    from tinytools._run.journals import AsyncJournal, Journal, JournalEntry, MemoryJournal
    from tinytools._run.sqlite_journal import SQLiteJournal

__all__ = [
    "NOT_RUN",
    "ArgumentsError",
    "ArtifactRef",
    "ArtifactStore",
    "Ask",
    "AsyncJournal",
    "AudioContent",
    "CancellationToken",
    "CancelledCall",
    "Content",
    "Dispatcher",
    "FileArtifactStore",
    "IdempotencyKey",
    "ImageContent",
    "Injected",
    "InjectionError",
    "InputSchema",
    "InvalidToolArgs",
    "Invocation",
    "Journal",
    "JournalEntry",
    "JournalError",
    "JsonContent",
    "Limits",
    "MemoryArtifactStore",
    "MemoryJournal",
    "NeedsInput",
    "Param",
    "Pending",
    "PendingCall",
    "PendingError",
    "PendingRequest",
    "Progress",
    "ResourceContent",
    "ResultError",
    "RetryableError",
    "Rewrite",
    "RunContext",
    "SQLiteJournal",
    "SchemaError",
    "Status",
    "Stores",
    "Strays",
    "StructuredError",
    "TextContent",
    "TinyToolsError",
    "Tool",
    "ToolCall",
    "ToolCompleted",
    "ToolDefinitionError",
    "ToolDefinitionWarning",
    "ToolDenied",
    "ToolError",
    "ToolEvent",
    "ToolFailed",
    "ToolFormat",
    "ToolNotFound",
    "ToolOutput",
    "ToolOutputChunk",
    "ToolPending",
    "ToolPolicy",
    "ToolProgress",
    "ToolResult",
    "ToolStarted",
    "Toolbox",
    "Tracing",
    "TransferError",
    "UnknownToolCall",
    "WaitsElsewhere",
    "adispatch",
    "adispatch_many",
    "dispatch",
    "dispatch_many",
    "plan_steps",
    "strays",
    "tool",
]

_LATER = {
    "NOT_RUN": "tinytools._run.journal_stage",
    "ArtifactStore": "tinytools._run.artifacts",
    "FileArtifactStore": "tinytools._run.artifacts",
    "MemoryArtifactStore": "tinytools._run.artifacts",
    "AsyncJournal": "tinytools._run.journals",
    "Journal": "tinytools._run.journals",
    "JournalEntry": "tinytools._run.journals",
    "MemoryJournal": "tinytools._run.journals",
    "SQLiteJournal": "tinytools._run.sqlite_journal",
    "plan_steps": "tinytools._run.call_plans",
}
"""Names whose module loads when a program first asks for them: ``import tinytools`` stays lean."""


if not _typing.TYPE_CHECKING:  # type checkers see the real names above, and a misspelt one stays an error

    def __getattr__(name: str) -> _Any:
        """A name of `_LATER`, imported from its module when first asked for."""
        module = _LATER.get(name)
        if module is None:
            raise AttributeError(f"module 'tinytools' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # asked once: later lookups find it here
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LATER})
