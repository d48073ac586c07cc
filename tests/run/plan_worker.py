"""A worker process for tests/run/test_call_plans.py: resumes a deferred plan with an approval.

    python plan_worker.py JOURNAL HANDLE

Opens the same SQLite journal with the same signing key and run as the test's dispatcher, approves
the pending plan ``HANDLE`` and prints, as one JSON object, the plan's status, what the model read
of its returned outputs, and the steps this process ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the project: its tests package

from tests.run.test_call_plans import Log, approval_box
from tinytools import Dispatcher, RunContext, SQLiteJournal
from tinytools.policy import Approval, PolicyMiddleware, require_approval


def main() -> None:
    journal, handle = sys.argv[1], sys.argv[2]
    log = Log()
    dispatcher = Dispatcher(
        approval_box(log),
        middleware=[PolicyMiddleware(require_approval(lambda request: Approval.defer("again")))],
        journal=SQLiteJournal(journal),
        signing_key="k",
        context=RunContext(run_id="run-1"),
    )
    result = dispatcher.resume(handle, {"approved": True})
    read = json.loads(result.text()) if result.status == "succeeded" else {}
    print(json.dumps({"status": result.status, "return": read.get("return"), "ran": [c for c, _ in log.calls]}))


if __name__ == "__main__":
    main()
