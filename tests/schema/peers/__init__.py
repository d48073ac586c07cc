"""The peers' own test cases, ported: shared parts of the per-peer modules.

Each module beside this one holds definitions rewritten by us in the shapes one peer's tests
exercise (OpenAI Agents SDK, pydantic-ai, LangChain core, FastMCP, the MCP Python SDK), and
`CASES`: for each definition, what that peer expects (JSON pointers into the schema with the
value there, a call's arguments with the values the function receives or the error that
refuses it, a refused definition) and tinytools' verdict: it agrees, it differs by documented
design (and why), or it was wrong before issue 17 (the case then states the fixed behaviour).
`tests/schema/test_peer_cases.py` runs every case on each module as written and on a copy
compiled with ``from __future__ import annotations``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

ABSENT = object()
"""A fact's value saying the pointer leads nowhere."""

AGREES, DIFFERS, FIXED = "AGREES", "DIFFERS", "FIXED_IN_17"

CLOSED = "closed objects: additionalProperties is false, so an argument nobody declared is refused"
NO_LAX = "no lax coercion: the schema the model saw is the contract, and '42' is not 42"
NO_VARARGS = "*args and **kwargs are refused at definition: a JSON object has no place for them"
EXPLICIT_WINS = "explicit text (an Annotated string, Param or Field) beats the docstring"
ALWAYS_PARSED = "the docstring is always read: its sections describe parameters, never the tool"
NO_FLATTENING = "a single model parameter stays a named property: the schema mirrors the signature"
ENUM_INLINE = "an Enum is rendered inline as `enum`, where the model reads it, not as a $defs entry"
RETURNS_ELSEWHERE = "the return is described by the output schema, not folded into the description"
NO_SCHEMA = "a type with no JSON Schema (bytes, Path) is refused at definition, with the fix"
UNWRAPPED = "the output schema is the return type's own, not wrapped in {result: ...}"
UNANNOTATED_IS_ANY = "an unannotated parameter is Any ({}), not a string"
LENIENT = "a docstring is read as far as it goes, never refused for its form or unknown names"
ANYWHERE = "an injected parameter may sit anywhere in the signature"
CANONICAL = "the canonical schema keeps free-form mappings; only the strict rendering refuses them"
ENFORCED = "WithJsonSchema would show the model a schema the validator does not enforce"
TEXT_IS_TEXT = "a JSON document inside a string stays a string: arguments are decoded once"
PARAGRAPHS = "the summary and the body keep their paragraph break"
NO_OUTPUT_SCHEMA = "no output schema for a class with no JSON Schema, or mapping keys JSON cannot hold"
FIELD = "item 1: pydantic Field is honoured like Param"

OA = "openai-agents tests/test_function_schema.py::"
OAT = "openai-agents tests/test_function_tool.py::"
PA = "pydantic-ai tests/test_tools.py::"
PAF = "pydantic-ai tests/test_function_schema.py::"
LC = "langchain libs/core/tests/unit_tests/test_tools.py::"
FMT = "fastmcp tests/tools/tool/test_tool.py::"
FMP = "fastmcp tests/server/providers/local_provider_tools/test_parameters.py::"
FMF = "fastmcp tests/tools/test_tool_future_annotations.py::"
FMC = "fastmcp tests/tools/tool/test_callable.py::"
MCP = "mcp python-sdk tests/server/mcpserver/test_func_metadata.py::"
ISSUE = "issue 17 (no peer test): "

RECEIVED: list[dict[str, Any]] = []
"""What each call delivered, last call last (shared by both copies of every module)."""


def got(values: dict[str, Any]) -> None:
    """Record a call's arguments (a function's ``locals()`` on entry)."""
    RECEIVED.append({name: value for name, value in values.items() if name not in ("self", "cls")})


class Session:
    """Stands in for a peer's run context, which the application supplies."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One definition, what its peer expects of it, and tinytools' verdict."""

    name: str
    """The definition: an attribute of the module that holds the case."""
    source: str
    """Peer, test file and test name the shape comes from."""
    verdict: str = AGREES
    """AGREES, DIFFERS (by design) or FIXED_IN_17 (wrong before issue 17)."""
    why: str = ""
    """The documented design a DIFFERS case follows, or the issue item of a FIXED_IN_17 case."""
    facts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """JSON pointer into the input schema -> the value there (or ABSENT)."""
    output: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """JSON pointer into the output schema -> the value there (or ABSENT); "" is the whole schema."""
    description: str | None = None
    """The tool's description."""
    call: Any = None
    """One call's arguments (a dict, sent as JSON text, or raw text); None: no call."""
    receives: Mapping[str, Any] | Callable[[ModuleType], Mapping[str, Any]] | None = None
    """What the function receives (exact types), or a function of the module (either copy) giving it."""
    refused: str | None = None
    """The error code of a refused call."""
    says: str | None = None
    """Text the refused call's message carries."""
    result: Any = None
    """The output of a succeeded call, when checked."""
    inject: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Values the application injects."""
    undefinable: bool = False
    """The definition is refused with a ToolDefinitionError."""
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Keyword arguments for `tool()`."""
