"""Turn plain Python functions into tools a language model can call."""

from tinytools.artifacts import ArtifactStore, FileArtifactStore, MemoryArtifactStore
from tinytools.context import Invocation, Progress, RunContext, Stores
from tinytools.dispatch import adispatch, dispatch
from tinytools.dispatcher import Dispatcher, Rewrite, adispatch_many, dispatch_many
from tinytools.errors import (
    ArgumentsError,
    InjectionError,
    ResultError,
    RetryableError,
    SchemaError,
    TinyToolsError,
    ToolDefinitionError,
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
    ToolProgress,
    ToolStarted,
    UnknownToolCall,
)
from tinytools.limits import CancellationToken, CancelledCall, Limits
from tinytools.policy import ToolPolicy
from tinytools.results import (
    ArtifactRef,
    Content,
    Status,
    StructuredError,
    TextContent,
    ToolCall,
    ToolOutput,
    ToolResult,
)
from tinytools.schema import Param
from tinytools.tool import Injected, Tool, tool
from tinytools.toolbox import Toolbox
from tinytools.toolformat import ToolFormat
from tinytools.validation import InputSchema

__all__ = [
    "ArgumentsError",
    "ArtifactRef",
    "ArtifactStore",
    "CancellationToken",
    "CancelledCall",
    "Content",
    "Dispatcher",
    "FileArtifactStore",
    "Injected",
    "InjectionError",
    "InputSchema",
    "InvalidToolArgs",
    "Invocation",
    "Limits",
    "MemoryArtifactStore",
    "Param",
    "Progress",
    "ResultError",
    "RetryableError",
    "Rewrite",
    "RunContext",
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
    "ToolDenied",
    "ToolError",
    "ToolEvent",
    "ToolFailed",
    "ToolFormat",
    "ToolNotFound",
    "ToolOutput",
    "ToolOutputChunk",
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
