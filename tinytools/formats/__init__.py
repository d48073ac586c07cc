"""Model-facing call syntaxes: declare tools as prompt text and read calls back from replies.

For models that call tools through text rather than native function calling. Each tool has a
`ToolFormat` (JSON by default, XML, or p-type); whatever the syntax, a parsed call is a plain
`ToolCall` that goes through the same validation as any other:

```python
prompt = render_tools(toolbox)
for call in parse_calls(reply_text, toolbox):
    result = dispatch(call, toolbox)
    shown_as = toolbox[call.name].format if call.name in toolbox else ToolFormat.json()  # no such tool: JSON
    answer = render_result(result, shown_as)
```

Pass ``format=`` to use one syntax for every tool. (For maintainers: `_text` renders and parses
in any syntax, `_json`, `_xml` and `_ptype` hold each syntax's own reading and writing, and
`_common` what the three share.)
"""

from tinytools._toolformat import ToolFormat
from tinytools.formats._text import parse_calls, render_call, render_result, render_tools

__all__ = ["ToolFormat", "parse_calls", "render_call", "render_result", "render_tools"]
