"""Turn plain Python functions into tools a language model can call."""

from tinytools.dispatch import adispatch, dispatch
from tinytools.errors import (
    ArgumentsError,
    InjectionError,
    SchemaError,
    TinyToolsError,
    ToolDefinitionError,
    ToolError,
    ToolNotFound,
)
from tinytools.results import Status, StructuredError, ToolCall, ToolResult
from tinytools.schema import Param
from tinytools.tool import Injected, Tool, tool
from tinytools.toolbox import Toolbox
from tinytools.validation import InputSchema

__all__ = [
    "ArgumentsError",
    "Injected",
    "InjectionError",
    "InputSchema",
    "Param",
    "SchemaError",
    "Status",
    "StructuredError",
    "TinyToolsError",
    "Tool",
    "ToolCall",
    "ToolDefinitionError",
    "ToolError",
    "ToolNotFound",
    "ToolResult",
    "Toolbox",
    "adispatch",
    "dispatch",
    "tool",
]
