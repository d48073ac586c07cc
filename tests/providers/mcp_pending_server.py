"""A tinytools MCP server whose calls end their turn pending, for the client tests.

Run as ``python mcp_pending_server.py`` (stdio) or ``... --http PORT`` (streamable HTTP on
127.0.0.1). ``deploy`` is an external tool with an output schema (its call waits for the
server's application), ``pay`` needs an approval its approver defers, ``ping`` answers at once.
"""

from __future__ import annotations

import sys
from functools import partial

from tinytools import Dispatcher, Toolbox, ToolPolicy, tool
from tinytools.policy import Approval, PolicyMiddleware, require_approval

APPROVAL_TTL = 600.0


@tool(external=True)
def deploy(service: str) -> dict[str, str]:
    """Deploy a service (the server's application runs it elsewhere)."""
    raise AssertionError("an external tool is never run by the dispatcher")


@tool(policy=ToolPolicy.classified().with_side_effects(["payment"]).with_access(approval_required=True))
def pay(invoice: str, amount: int) -> str:
    """Pay an invoice."""
    return f"paid {invoice}"


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


toolbox = Toolbox([deploy, pay, ping])
later = PolicyMiddleware(
    [require_approval(lambda request: Approval.defer("Finance approves payments.", ttl=APPROVAL_TTL))]
)
factory = partial(Dispatcher, toolbox, middleware=[later], signing_key="the server's secret")

if __name__ == "__main__":
    from tinytools.providers import mcp

    if "--http" in sys.argv:
        from tinytools.providers.mcp._http import serve_http

        serve_http(toolbox, "127.0.0.1", int(sys.argv[sys.argv.index("--http") + 1]), dispatcher_factory=factory)
    else:
        mcp.serve(toolbox, dispatcher_factory=factory)
