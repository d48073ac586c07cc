"""Provider adapters: each one exports declarations, reads calls, and writes results.

Import an adapter by its path; nothing here imports a provider SDK:

```python
from tinytools.providers import openai   # Chat Completions (and strict mode)
from tinytools.providers import openai_responses, anthropic, gemini, mcp
```

Every adapter offers the same three verbs: ``export_tools(toolbox, **options)`` gives the
declarations in the provider's shape, ``read_calls(response)`` reads `ToolCall` objects out of
a response (a plain dict or the SDK's own object), and ``write_results(results)`` gives the
messages, items, blocks or parts that carry the results back. `tinytools.providers.mcp` also
serves a toolbox as an MCP server over stdio.

Which adapters there are, by the name ``provider=`` takes (``Toolbox.fingerprint``,
``Toolbox.diff``, ``tinytools schema --provider``), is one registry: ``tinytools._exports.PROVIDERS``
(a new adapter is its module and one line there). `sent` is the bytes a request carries for an
export, and `ExportDiff` what ``Toolbox.diff`` returns.
"""

from tinytools._exports import ExportDiff, sent

__all__ = ["ExportDiff", "sent"]
