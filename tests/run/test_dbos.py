"""DBOS and the journal together, with a real crash: the workflow recovers and no call acts twice.

A process runs a DBOS workflow of three calls (`dbos_worker.py`): an idempotent search, a payment
that kills its process right after it acts, a notification. A second process launches DBOS on the
same SQLite files; DBOS recovers the workflow and replays it: the search is answered from DBOS's
record of its step (it does not run again), the payment's step is run again by DBOS but the
tinytools journal finds the call started by a dead worker and ends it ``outcome_unknown`` (the
payment is made once), and the notification runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("dbos_worker.py")


def _run(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WORKER.parents[2]), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(WORKER), str(folder), *extra], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip


@pytest.mark.skipif(
    sys.version_info >= (3, 13),
    reason="DBOS 3.4 cannot make its SQLite system database on Python 3.13 (its own insert fails: NOT NULL "
    "constraint failed: application_versions.version_timestamp); the adapter is tested on 3.10 to 3.12",
)
def test_a_workflow_recovered_by_dbos_makes_each_act_once(tmp_path: Path) -> None:
    pytest.importorskip("dbos")
    crashed = _run(tmp_path, "crash")
    assert crashed.returncode == 3, crashed.stderr[-2000:]
    assert (tmp_path / "acts.log").read_text().splitlines() == ["search invoice 7", "pay 120"]
    recovered = _run(tmp_path)
    assert recovered.returncode == 0, recovered.stderr[-2000:]
    results = [json.loads(line) for line in json.loads(recovered.stdout.strip().splitlines()[-1])]
    assert [(r["call_id"], r["status"]) for r in results] == [
        ("c1", "succeeded"), ("c2", "outcome_unknown"), ("c3", "succeeded"),
    ]  # fmt: skip
    assert results[0]["output"] == "found invoice 7" and results[2]["output"] == "told finance"
    assert (tmp_path / "acts.log").read_text().splitlines() == ["search invoice 7", "pay 120", "notify finance"]
