"""A tinytools MCP server whose calls wait for a person, for the ``input_required`` tests.

Run as ``python mcp_asking_server.py --http PORT [--no-elicit]`` (the stateless
streamable HTTP app on 127.0.0.1). ``pay`` needs an approval its approver defers (``transfer``
too, and takes a second once approved); ``book`` asks
for a seat and then a meal; ``survey`` asks with a schema no form can hold; ``report`` runs in
the background; ``deploy`` is external; ``archive`` asks from the background; ``crash`` crashes
there; ``acts`` says how often each tool acted.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from functools import partial
from typing import Any

from tinytools import Ask, Dispatcher, Toolbox, ToolPolicy, tool
from tinytools.policy import Approval, PolicyMiddleware, require_approval

ACTED: Counter[str] = Counter()


@tool(policy=ToolPolicy.classified().with_side_effects(["payment"]).with_access(approval_required=True))
def pay(invoice: str, amount: int) -> str:
    """Pay an invoice."""
    ACTED["pay"] += 1
    return f"paid {invoice}: {amount}"


@tool(policy=ToolPolicy.classified().with_side_effects(["payment"]).with_access(approval_required=True))
def transfer(amount: int) -> str:
    """Transfer an amount, which takes a moment once approved."""
    time.sleep(1.0)
    ACTED["transfer"] += 1
    return f"transferred {amount}"


@tool
def book(flight: str, ask: Ask) -> dict[str, Any]:
    """Book a seat on a flight, asking which seat and which meal."""
    seat = ask("Which seat?", {"type": "string", "minLength": 2, "maxLength": 3})
    meal = ask("Which meal?", {"type": "object", "properties": {"meal": {"type": "string", "enum": ["veg", "fish"]}},
                               "required": ["meal"], "additionalProperties": False})  # fmt: skip
    ACTED["book"] += 1
    return {"flight": flight, "seat": seat, "meal": meal["meal"]}


@tool
def survey(ask: Ask) -> Any:
    """Ask for an address, a nested object no flat form can hold."""
    schema = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    ACTED["survey"] += 1
    return ask("Where do you live?", schema)


@tool(background=True)
def report(month: str) -> dict[str, str]:
    """Build a monthly report in the background (a moment's work)."""
    time.sleep(0.3)
    ACTED["report"] += 1
    return {"month": month, "report": "ready"}


@tool(external=True)
def deploy(service: str) -> dict[str, str]:
    """Deploy a service (the server's application runs it elsewhere)."""
    raise AssertionError("an external tool is never run by the dispatcher")


@tool(background=True)
def archive(name: str, ask: Ask) -> str:
    """Archive something in the background, once the user confirmed."""
    schema = {"type": "object", "properties": {"sure": {"type": "boolean"}}, "required": ["sure"]}
    if not ask(f"Archive {name}?", schema)["sure"]:
        return f"{name} kept"
    ACTED["archive"] += 1
    return f"{name} archived"


@tool(background=True)
def crash() -> None:
    """Crash in the background."""
    raise RuntimeError("the secret reason is never sent")


@tool
def acts() -> dict[str, int]:
    """How many times each tool acted."""
    return dict(ACTED)


toolbox = Toolbox([pay, transfer, book, survey, report, deploy, archive, crash, acts])
later = PolicyMiddleware([require_approval(lambda request: Approval.defer("Approve this payment?", ttl=600))])

if __name__ == "__main__":
    from tinytools.providers.mcp._http import serve_http

    options: dict[str, Any] = {"elicit": "--no-elicit" not in sys.argv}
    if "--journal" in sys.argv:
        from tinytools import SQLiteJournal

        journal = SQLiteJournal(sys.argv[sys.argv.index("--journal") + 1])
        options["dispatcher_factory"] = partial(
            Dispatcher, toolbox, middleware=[later], journal=journal, signing_key="k"
        )
    else:
        options["dispatcher_factory"] = partial(Dispatcher, toolbox, middleware=[later])
    serve_http(toolbox, "127.0.0.1", int(sys.argv[sys.argv.index("--http") + 1]), **options)
