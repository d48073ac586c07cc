"""Model Context Protocol: the wire shapes, and a server for a toolbox.

``serve(toolbox)`` runs a toolbox as an MCP server over stdio with the official ``mcp``
package (``pip install "tinytools[mcp]"``); ``tinytools serve-mcp TARGET`` does the same from
the command line. The package holds:

- `tinytools.providers.mcp.wire`: ``tools/list`` entries, ``tools/call`` requests and results,
  the same three verbs as every provider (`export_tools`, `read_calls`, `write_results`);
- `tinytools.providers.mcp.stdio`: the stdio transport, which answers every request line;
- `tinytools.providers.mcp.sessions`: each session's injected values (`SessionContext`), made
  when a tool first needs them and torn down when the session ends;
- `tinytools.providers.mcp.server`: `build_server`, `aserve`, `serve`;
- `tinytools.providers.mcp.http`: `http_app`, `serve_http`, streamable HTTP with a lean path;
- `tinytools.providers.mcp.remote`: one remote tool as a local `Tool` (schemas judged apart,
  results read);
- `tinytools.providers.mcp.client`: `connect`, a remote server's tools as a toolbox.
"""

from tinytools.providers.mcp.client import connect
from tinytools.providers.mcp.http import http_app, serve_http
from tinytools.providers.mcp.server import AsyncDispatcher, aserve, build_server, serve
from tinytools.providers.mcp.sessions import SessionContext
from tinytools.providers.mcp.wire import export_tools, read_calls, tool_annotations, write_results

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
