"""The journal across real processes and real SQLite files: no call runs twice.

- Crash and restart: a worker process runs 200 journaled calls and is killed with SIGKILL at a
  random moment, ten times over; a second worker runs the same calls on the same journal. Every
  call id then has exactly one final result (the one the first worker printed, if it printed
  one), and no non-idempotent tool acted twice (each act is a row in another SQLite file).
- Two workers race on the same calls and the same journal: each call acts exactly once, and
  both workers report the same final result for it.
- A deferred approval survives its process: one worker parks the call, another resumes it.
- A file that is not a journal, or a journal of another format, is refused with `JournalError`.
- Any interleaving of dispatch, resume, expiry and cancellation ends each call id in exactly one
  final result (hypothesis, in this process).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytools import (
    NOT_RUN,
    Dispatcher,
    JournalError,
    MemoryJournal,
    PendingError,
    RunContext,
    SQLiteJournal,
    ToolCall,
    ToolPolicy,
    ToolResult,
    tool,
)
from tinytools._run.journal_stage import canonical
from tinytools._run.journals import JournalEntry, this_owner
from tinytools.policy import Approval, PolicyMiddleware, require_approval

from . import journal_worker
from .journal_worker import CALLS

WORKER = Path(journal_worker.__file__)
IDEMPOTENT = {"refresh"}


def _start(journal: Path, effects: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WORKER.parents[2]), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, str(WORKER), str(journal), str(effects), *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _results(output: bytes) -> dict[str, ToolResult]:
    """The final results a worker printed, by call id (a line cut by the kill is left out)."""
    printed: dict[str, ToolResult] = {}
    for line in output.decode().splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        assert data["call_id"] not in printed, "a worker printed two results for one call"
        printed[data["call_id"]] = ToolResult(**{k: v for k, v in data.items() if k in ("call_id", "name", "status")})
        printed[data["call_id"]].output = data.get("output")
    return printed


def _acts(effects: Path) -> Counter[tuple[str, int]]:
    with contextlib.closing(sqlite3.connect(effects)) as db, db:
        return Counter((kind, n) for kind, n in db.execute("SELECT kind, n FROM effects"))


def _finish(process: subprocess.Popen[bytes], seconds: float = 120) -> bytes:
    out, err = process.communicate(timeout=seconds)
    assert process.returncode == 0, err.decode()[-2000:]
    return out


@pytest.mark.parametrize("trial", range(10))
def test_a_worker_killed_at_a_random_moment_never_repeats_a_call(tmp_path: Path, trial: int) -> None:
    journal, effects = tmp_path / "journal.db", tmp_path / "effects.db"
    journal_worker.prepare(effects)
    first = _start(journal, effects, "batch")
    assert first.stdout is not None
    heard = [first.stdout.readline() for _ in range(random.Random(trial).randint(1, CALLS - 16))]
    time.sleep(random.Random(trial).uniform(0, 0.02))  # somewhere in the calls that follow
    first.send_signal(signal.SIGKILL)
    before = _results(b"".join(heard) + first.communicate()[0])
    assert len(before) < CALLS
    after = _results(_finish(_start(journal, effects, "batch")))
    each_call_ended_once(before, after, effects)


def each_call_ended_once(before: dict[str, ToolResult], after: dict[str, ToolResult], effects: Path) -> None:
    """After a crash: every call id has one result, the one the killed worker gave if it gave one,
    and no act that is not idempotent happened twice."""
    assert sorted(after) == sorted(f"call-{n}" for n in range(CALLS))  # every call id, once
    for call_id, result in before.items():  # what the killed worker answered is the answer
        assert (after[call_id].status, after[call_id].output) == (result.status, result.output)
    acts = _acts(effects)
    assert all(count == 1 for (kind, _), count in acts.items() if kind not in IDEMPOTENT), acts
    for call_id, result in after.items():
        n = int(call_id.split("-")[1])
        if result.status == "succeeded":
            assert acts[result.name, n] >= 1
        else:  # the worker died mid-call: it may have acted, and nothing ran it again
            assert result.status == "outcome_unknown" and result.name not in IDEMPOTENT, result


def test_two_workers_racing_on_the_same_calls_act_once_each(tmp_path: Path) -> None:
    journal, effects = tmp_path / "journal.db", tmp_path / "effects.db"
    journal_worker.prepare(effects)
    SQLiteJournal(journal).close()  # made before both open it
    workers = [_start(journal, effects, "race", str(seed)) for seed in (1, 2)]
    one, two = (_results(_finish(worker)) for worker in workers)
    assert sorted(one) == sorted(two) == sorted(f"call-{n}" for n in range(CALLS))
    for call_id in one:
        assert (one[call_id].status, one[call_id].output) == (two[call_id].status, two[call_id].output)
        assert one[call_id].status == "succeeded"
    acts = _acts(effects)
    assert len(acts) == CALLS and set(acts.values()) == {1}


def test_a_deferred_approval_is_resumed_by_another_process(tmp_path: Path) -> None:
    journal, effects = tmp_path / "journal.db", tmp_path / "effects.db"
    journal_worker.prepare(effects)
    parked = json.loads(_finish(_start(journal, effects, "defer")))
    assert parked["status"] == "pending" and parked["pending"]["kind"] == "approval"
    assert _acts(effects) == Counter()
    final = json.loads(_finish(_start(journal, effects, "resume", parked["pending"]["handle"])))
    assert (final["call_id"], final["status"], final["output"]) == ("defer-1", "succeeded", "released 1")
    again = json.loads(_finish(_start(journal, effects, "resume", parked["pending"]["handle"])))
    assert again == final and _acts(effects) == Counter({("release", 1): 1})


def test_an_inbox_lists_the_calls_another_process_parked_and_resumes_one(tmp_path: Path) -> None:
    journal, effects = tmp_path / "journal.db", tmp_path / "effects.db"
    journal_worker.prepare(effects)
    _finish(_start(journal, effects, "inbox"))
    key = journal_worker.KEY
    inbox = Dispatcher([], journal=SQLiteJournal(journal), signing_key=key, context=RunContext(run_id="the-run"))
    listed = inbox.pending()
    assert [(item.call_id, item.tool, item.pending.kind) for item in listed] == [
        ("inbox-1", "release", "approval"),
        ("inbox-2", "release", "approval"),
        ("inbox-3", "wire", "approval"),
    ]
    assert [item.arguments for item in listed[:2]] == [{"n": 1}, {"n": 2}]
    assert listed[2].arguments["n"] == 3 and journal_worker.SECRET[:8] not in json.dumps(listed[2].arguments)
    assert all(item.pending.request.message == "A person decides." and item.run_id == "the-run" for item in listed)
    assert all(item.pending.expires_at > time.time() + 3000 for item in listed)
    assert Dispatcher([], journal=SQLiteJournal(journal), context=RunContext(run_id="another run")).pending() == []
    assert len(Dispatcher([], journal=SQLiteJournal(journal)).pending(all_runs=True)) == 3
    final = json.loads(_finish(_start(journal, effects, "resume", listed[2].pending.handle)))
    assert (final["call_id"], final["output"]) == ("inbox-3", "wired 3")
    assert [item.call_id for item in inbox.pending()] == ["inbox-1", "inbox-2"]
    assert _acts(effects) == Counter({("wire", 3): 1})


def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path) -> None:
    noise = tmp_path / "noise.db"
    noise.write_bytes(os.urandom(8192))
    with pytest.raises(JournalError, match="not a usable tinytools journal"):
        SQLiteJournal(noise)
    foreign = tmp_path / "foreign.db"
    with contextlib.closing(sqlite3.connect(foreign)) as db, db:
        db.execute("CREATE TABLE tinytools_journal (id INTEGER PRIMARY KEY, note TEXT)")
    with pytest.raises(JournalError, match="not a usable tinytools journal"):
        SQLiteJournal(foreign)
    newer = tmp_path / "newer.db"
    SQLiteJournal(newer).close()
    with contextlib.closing(sqlite3.connect(newer)) as db, db:
        db.execute("UPDATE tinytools_meta SET value = '99' WHERE name = 'format'")
    with pytest.raises(JournalError, match="another format"):
        SQLiteJournal(newer)


FORMAT_1 = """
CREATE TABLE tinytools_journal (
    key TEXT PRIMARY KEY, run_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
    arguments BLOB NOT NULL, state TEXT NOT NULL, owner TEXT NOT NULL, step INTEGER NOT NULL,
    pending BLOB, result BLOB, updated REAL NOT NULL, UNIQUE (run_id, call_id)) WITHOUT ROWID;
CREATE TABLE tinytools_cache (key TEXT PRIMARY KEY, result BLOB NOT NULL, expires REAL NOT NULL);
CREATE TABLE tinytools_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO tinytools_meta VALUES ('format', '1');
INSERT INTO tinytools_journal VALUES ('k1', 'r', 'c1', 'add', X'7B7D', 'done', 'h:1:0', 1, NULL, X'7B7D', 1.0);
"""
"""A journal as the version before leases wrote it."""


def test_a_journal_written_before_leases_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executescript(FORMAT_1)
    journal = SQLiteJournal(path)
    kept = journal.get("k1")
    assert kept is not None and (kept.state, kept.step, kept.lease, kept.result) == ("done", 1, 0.0, b"{}")
    assert journal.renew("k1", 1, "h:1:0", 5.0) is True
    journal.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT value FROM tinytools_meta WHERE name = 'format'").fetchone() == ("2",)
    SQLiteJournal(path).close()  # opened again as it now is


def test_a_journal_file_corrupted_after_opening_fails_its_call_clearly(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = SQLiteJournal(path)

    @tool
    def noted(n: int) -> int:
        """Note a number."""
        return n

    dispatcher = Dispatcher([noted], journal=journal)
    assert dispatcher.dispatch(ToolCall("a", "noted", {"n": 1})).output == 1
    journal.close()
    with pytest.raises(JournalError):
        dispatcher.dispatch(ToolCall("b", "noted", {"n": 2}))


# --- any interleaving ends each call in one final result ---------------------------------

ACTED: list[str] = []


@tool(policy=ToolPolicy().with_access(approval_required=True))
def approve_me(n: int) -> str:
    """Waits for approval."""
    ACTED.append(f"approve_me {n}")
    return f"approved {n}"


@tool(external=True)
def outside(n: int) -> int:
    """Run elsewhere."""
    raise AssertionError("never runs here")


OPS = st.lists(
    st.tuples(st.sampled_from(["dispatch", "resume", "deny", "expire", "cancel", "poll"]), st.integers(0, 3)),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, journaled=st.booleans())
def test_any_interleaving_ends_each_call_in_exactly_one_final_result(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]], journaled: bool
) -> None:
    ACTED.clear()
    journal = SQLiteJournal(tmp_path_factory.mktemp("j") / "journal.db") if journaled else None
    later = PolicyMiddleware([require_approval(lambda request: Approval.defer("decide"))])
    dispatcher = Dispatcher([approve_me, outside], journal=journal, middleware=[later], context=RunContext(run_id="p"))
    calls = [ToolCall(f"c{n}", "approve_me" if n % 2 else "outside", {"n": n}) for n in range(4)]
    handles: dict[str, str] = {}
    finals: dict[str, set[str]] = {}

    def seen(result: ToolResult) -> None:
        if result.status == "pending":
            assert result.pending is not None
            handles[result.call_id] = result.pending.handle
        else:
            finals.setdefault(result.call_id, set()).add(result.to_json().decode())

    clock = time.time()
    for op, n in ops:
        call = calls[n]
        handle = handles.get(call.id)
        if op == "dispatch":
            seen(dispatcher.dispatch(call))
        elif op == "expire":
            clock += 1800
            for result in dispatcher.expire(clock):
                seen(result)
        elif handle is not None and op == "cancel":
            seen(dispatcher.cancel_pending(handle))
        elif handle is not None and op == "poll":
            seen(dispatcher.poll(handle))
        elif handle is not None:
            answer = {"approved": op == "resume"} if n % 2 else n * 10
            try:
                seen(dispatcher.resume(handle, answer))
            except PendingError as exc:  # only a handle of an expired entry read as not expired here
                raise AssertionError(exc) from None
    for result in dispatcher.expire(clock + 10**7):
        seen(result)
    for handle in handles.values():
        seen(dispatcher.poll(handle))
    for call_id, texts in finals.items():
        assert len(texts) == 1, (call_id, texts)  # the same final result each time it was read
    assert set(finals) == set(handles)  # every call that waited has ended
    assert all(ACTED.count(entry) <= 1 for entry in ACTED)


# --- a call whose worker died: reconcile, run again, or outcome_unknown ------------------

ASKED: list[tuple[dict[str, object], str]] = []
RAN: list[int] = []


def _what_happened(arguments: dict[str, object], key: str) -> object:
    ASKED.append((arguments, key))
    return NOT_RUN if arguments["n"] == 1 else {"sent": arguments["n"], "found": "in the outbox"}


@tool(reconcile=_what_happened)
def send(n: int) -> dict[str, object]:
    """Send a message once."""
    RAN.append(n)
    return {"sent": n}


@tool
def post(n: int) -> str:
    """Post once, with no way to ask what happened."""
    RAN.append(n)
    return f"posted {n}"


def _dead_owner() -> str:
    """The owner string of a process that has exited (as a worker killed mid-call leaves it)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host, _, _ = this_owner().split(":")
    return f"{host}:{child.pid}:1"


@pytest.mark.parametrize(("tool_name", "n", "expected", "ran"), [
    ("send", 1, ("succeeded", {"sent": 1}), [1]),  # reconcile: it never happened, so it runs now
    ("send", 2, ("succeeded", {"sent": 2, "found": "in the outbox"}), []),  # it happened: that is the output
    ("post", 3, ("outcome_unknown", None), []),  # nobody can tell: it may have acted, it is not run again
])  # fmt: skip
def test_a_call_left_started_by_a_dead_worker(
    tmp_path: Path, tool_name: str, n: int, expected: tuple[str, object], ran: list[int]
) -> None:
    ASKED.clear()
    RAN.clear()
    journal = SQLiteJournal(tmp_path / "journal.db")
    dispatcher = Dispatcher([send, post], journal=journal, context=RunContext(run_id="r"))
    arguments = canonical({"n": n})
    key = dispatcher.journal_stage.call_key("c1")
    left = JournalEntry(key=key, run_id="r", call_id="c1", tool=tool_name, arguments=arguments, owner=_dead_owner())
    assert journal.claim(left) is None
    result = dispatcher.dispatch(ToolCall("c1", tool_name, {"n": n}))
    assert (result.status, result.output) == expected and ran == RAN
    assert ([({"n": n}, key)] if tool_name == "send" else []) == ASKED
    assert dispatcher.dispatch(ToolCall("c1", tool_name, {"n": n})) == result  # recorded: asked once
    assert len(ASKED) <= 1 and ran == RAN


class _Flaky(MemoryJournal):
    """A journal whose renewals fail while it is down (an outage, or closed under a running call)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True
        self.renewed: list[float] = []

    def renew(self, key: str, step: int, owner: str, until: float) -> bool:
        if self.down:
            raise JournalError("the journal is unreachable")
        self.renewed.append(until)
        return True


def _wait_for(condition: Callable[[], object]) -> None:
    deadline = time.monotonic() + 5.0
    while not condition() and time.monotonic() < deadline:  # a watchdog, not a measure
        time.sleep(0.02)


def test_a_lease_the_journal_cannot_renew_is_warned_once_and_renewed_again_when_it_can(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tinytools._run.leases import Leases

    journal = _Flaky()
    leases = Leases(journal, this_owner(), seconds=0.3)
    with caplog.at_level("WARNING", logger="tinytools.journal"):
        leases.hold("k" * 16, 1)
        _wait_for(lambda: any("ran out" in record.getMessage() for record in caplog.records))
        time.sleep(0.3)  # a few more failing rounds: no more warnings
        journal.down = False  # the journal is back while the call still runs
        _wait_for(lambda: journal.renewed)
    messages = [record.getMessage() for record in caplog.records]
    assert sum("failed" in message for message in messages) == 1  # warned once, not at every round
    assert sum("ran out" in message for message in messages) == 1
    assert journal.renewed and leases.held() == {"k" * 16: 1}  # the call runs on here: its lease is held again
    leases.drop("k" * 16)
