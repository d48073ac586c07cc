"""`DBOSDispatcher`: tool calls as the steps of a DBOS workflow, at most once each.

    pip install "tinytools[dbos]"

    from dbos import DBOS
    from tinytools import SQLiteJournal
    from tinytools.dbos import DBOSDispatcher

    @DBOS.workflow()
    def agent_turn(calls: list[ToolCall]) -> list[str]:
        dispatcher = DBOSDispatcher(tools, journal=journal)  # the run is the workflow
        return [result.text() for result in dispatcher.dispatch_many(calls)]

An application that already runs DBOS keeps its engine: the dispatcher's run id is the workflow
id, and each call is a DBOS step named after its tool and call id. DBOS recovers a workflow whose
process died and replays it: a call whose step completed is answered from DBOS's records and
never reaches the dispatcher. A call whose step was running when the process died is run again by
DBOS (DBOS records a step only once it ends: at least once); inside that step the tinytools
journal finds the call started by a dead worker and applies its own rules, so a tool that may
have acted is not run twice: ``reconcile``, a re-run if it is idempotent, else ``outcome_unknown``.
The journal must outlive the process (`SQLiteJournal`, `tinytools.postgres.PostgresJournal`).

A batch's calls are steps in the batch's order, run one after another (DBOS numbers a workflow's
steps in the order they are made).

The same shape fits Temporal: there the run id is the workflow id and each call an activity whose
activity id is the call's `tinytools.IdempotencyKey`; Temporal retries an activity that was
running when its worker died, and the activity, dispatching through a journaled `Dispatcher`,
gets ``outcome_unknown`` (or its ``reconcile``) instead of acting twice.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tinytools._context import RunContext
from tinytools._results import ToolCall, ToolResult
from tinytools._run.dispatcher import Dispatcher
from tinytools._run.journals import Journal
from tinytools.providers._common import require

__all__ = ["DBOSDispatcher"]

_RESULT = msgspec.json.Decoder(ToolResult).decode


class DBOSDispatcher(Dispatcher):
    """A `Dispatcher` whose calls are the steps of the DBOS workflow it is made in (see the module).

    Takes the options of `Dispatcher`; ``journal`` is required, and the run is the workflow (a
    ``context`` keeps its other values, its ``run_id`` becomes the workflow id).

    Raises:
        ImportError: ``dbos`` is not installed (``pip install "tinytools[dbos]"``).
        RuntimeError: It is made outside a DBOS workflow.
    """

    def __init__(self, toolbox: Any, *, journal: Journal, context: RunContext | None = None, **options: Any):
        dbos = require("dbos", "dbos").DBOS
        workflow_id = dbos.workflow_id
        if workflow_id is None:
            raise RuntimeError("a DBOSDispatcher is made inside a DBOS workflow: its run is the workflow")
        context = msgspec.structs.replace(context or RunContext(), run_id=workflow_id)
        super().__init__(toolbox, journal=journal, context=context, **options)
        self._dbos = dbos

    def dispatch(self, call: ToolCall, **options: Any) -> ToolResult:
        """`Dispatcher.dispatch`, as a DBOS step named after the call (answered from DBOS on replay)."""
        name = f"tinytools {call.name}:{call.id}"
        written = self._dbos.run_step({"name": name}, self._step, call, options)
        return _RESULT(written)

    def dispatch_many(self, calls: Any, **options: Any) -> list[ToolResult]:
        """Each call a step of its own, in order (see the module)."""
        return [self.dispatch(call, **options) for call in calls]

    async def adispatch(self, call: ToolCall, **options: Any) -> ToolResult:
        """`Dispatcher.adispatch`, as a DBOS step named after the call."""
        name = f"tinytools {call.name}:{call.id}"
        written = await self._dbos.run_step_async({"name": name}, self._astep, call, options)
        return _RESULT(written)

    async def adispatch_many(self, calls: Any, **options: Any) -> list[ToolResult]:
        """Each call a step of its own, in order."""
        return [await self.adispatch(call, **options) for call in calls]

    def _step(self, call: ToolCall, options: dict[str, Any]) -> bytes:
        return Dispatcher.dispatch(self, call, **options).to_json()

    async def _astep(self, call: ToolCall, options: dict[str, Any]) -> bytes:
        return (await Dispatcher.adispatch(self, call, **options)).to_json()
