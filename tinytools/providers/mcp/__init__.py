"""Model Context Protocol: the wire shapes, and a server for a toolbox.

``serve(toolbox)`` runs a toolbox as an MCP server over stdio with the official ``mcp``
package (``pip install "tinytools[mcp]"``); ``tinytools serve-mcp TARGET`` does the same from
the command line. The package holds:

- `tinytools.providers.mcp._wire`: ``tools/list`` entries, ``tools/call`` requests and results,
  the same three verbs as every provider (`export_tools`, `read_calls`, `write_results`);
- `tinytools.providers.mcp._stdio`: the stdio transport, which answers every request line;
- `tinytools.providers.mcp._sessions`: each session's injected values (`SessionContext`), made
  when a tool first needs them and torn down when the session ends;
- `tinytools.providers.mcp._server`: `build_server`, `aserve`, `serve`;
- `tinytools.providers.mcp._cancellations`: session keys for stateless HTTP, and the running
  calls a 2025 client's cancellation reaches through them;
- `tinytools.providers.mcp._handed`: the handles of pending calls handed to sessionless clients,
  and what such a client takes (forms, tasks);
- `tinytools.providers.mcp._input_required`: a pending call asked of the client as a form
  (``input_required``), and the answer its retry brings;
- `tinytools.providers.mcp._tasks`: a pending call as a task of MCP's tasks extension;
- `tinytools.providers.mcp._lean_path`: plain ``tools/list`` and ``tools/call`` over stateless
  HTTP, both protocol eras, answered without the SDK;
- `tinytools.providers.mcp._http`: `http_app`, `serve_http`, streamable HTTP (the SDK's app, the
  lean path in front);
- `tinytools.providers.mcp._remote`: one remote tool as a local `Tool` (schemas judged apart,
  results read);
- `tinytools.providers.mcp._client`: `connect`, a remote server's tools as a toolbox.
"""

from tinytools.providers.mcp._client import connect
from tinytools.providers.mcp._http import http_app, serve_http
from tinytools.providers.mcp._server import AsyncDispatcher, aserve, build_server, serve
from tinytools.providers.mcp._sessions import SessionContext
from tinytools.providers.mcp._wire import export_tools, read_calls, tool_annotations, write_results

__all__ = [
    "AsyncDispatcher",
    "SessionContext",
    "aserve",
    "build_server",
    "connect",
    "export_tools",
    "http_app",
    "read_calls",
    "serve",
    "serve_http",
    "tool_annotations",
    "write_results",
]
