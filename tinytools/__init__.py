"""Turn plain Python functions into tools a language model can call."""

from types import ModuleType as _ModuleType

from tinytools.context import (
    Ask,
    CancellationToken,
    CancelledCall,
    IdempotencyKey,
    Invocation,
    Progress,
    RunContext,
    Stores,
)
from tinytools.errors import (
    ArgumentsError,
    InjectionError,
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
)
from tinytools.events import (
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
from tinytools.policy import ToolPolicy
from tinytools.results import (
    ArtifactRef,
    Content,
    Pending,
    PendingCall,
    PendingRequest,
    Status,
    StructuredError,
    TextContent,
    ToolCall,
    ToolOutput,
    ToolResult,
)
from tinytools.run.admission import Rewrite
from tinytools.run.artifacts import ArtifactStore, FileArtifactStore, MemoryArtifactStore
from tinytools.run.dispatch import adispatch, adispatch_many, dispatch, dispatch_many
from tinytools.run.dispatcher import Dispatcher
from tinytools.run.durable import NOT_RUN
from tinytools.run.journal import Journal, JournalError, MemoryJournal, SQLiteJournal
from tinytools.run.limits import Limits
from tinytools.schema.annotations import Param
from tinytools.schema.validation import InputSchema
from tinytools.signature import Injected
from tinytools.tool import Tool, tool
from tinytools.toolbox import Toolbox
from tinytools.toolformat import ToolFormat

Tool.runners = (dispatch, adispatch)  # Tool.invoke runs through the pipeline, which sits above Tool


def _stable() -> _ModuleType:
    """The exports' stability tools, loaded when first used (they load every adapter)."""
    from tinytools.providers import stable

    return stable


Toolbox.stable = _stable  # Toolbox.fingerprint and .diff use the adapters, which sit above Toolbox

__all__ = [
    "NOT_RUN",
    "ArgumentsError",
    "ArtifactRef",
    "ArtifactStore",
    "Ask",
    "CancellationToken",
    "CancelledCall",
    "Content",
    "Dispatcher",
    "FileArtifactStore",
    "IdempotencyKey",
    "Injected",
    "InjectionError",
    "InputSchema",
    "InvalidToolArgs",
    "Invocation",
    "Journal",
    "JournalError",
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
    "ResultError",
    "RetryableError",
    "Rewrite",
    "RunContext",
    "SQLiteJournal",
    "SchemaError",
    "Status",
    "Stores",
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
    "TransferError",
    "UnknownToolCall",
    "adispatch",
    "adispatch_many",
    "dispatch",
    "dispatch_many",
    "tool",
]
