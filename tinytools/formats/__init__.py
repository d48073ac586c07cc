"""Model-facing call syntaxes: declare tools as prompt text and read calls back from replies.

For models that call tools through text rather than native function calling. Each tool has a
`ToolFormat` (JSON by default, XML, or p-type); whatever the syntax, a parsed call is a plain
`ToolCall` that goes through the same validation as any other:

```python
prompt = render_tools(toolbox)
for call in parse_calls(reply_text, toolbox):
    result = dispatch(call, toolbox)
    answer = render_result(result, toolbox[call.name].format)
```

The modules: `_text` (render and parse in any syntax), `_json`, `_xml` and `_ptype` (each
syntax's own reading and writing), and `_common` (what the three share).
"""

from tinytools._toolformat import ToolFormat
from tinytools.formats._text import parse_calls, render_call, render_result, render_tools

__all__ = ["ToolFormat", "parse_calls", "render_call", "render_result", "render_tools"]
