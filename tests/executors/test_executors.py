"""Executors: process pools and a real Dask cluster keep every promise the dispatcher makes."""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import pytest

from tests.executors import executor_tools as t
from tinytools import (
    CancellationToken,
    Dispatcher,
    Injected,
    Limits,
    Tool,
    ToolCall,
    ToolCompleted,
    ToolDefinitionError,
    ToolEvent,
    ToolStarted,
    TransferError,
    tool,
)
from tinytools.executors import reference
from tinytools.executors._pools import SHARED

SENT: list[Tool[..., Any]] = [
    t.where,
    t.norm,
    t.local,
    t.fail,
    t.echo_key,
    t.use_handle,
    t.use_remote_handle,
    t.who,
    t.slow,
    t.slow_idempotent,
    t.flaky,
    t.die,
    t.unpicklable,
    t.lock_output,
    t.positional,
]


def pool(workers: int = 2) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"))


@pytest.fixture(scope="module")
def processes() -> Iterator[ProcessPoolExecutor]:
    executor = pool()
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)
    SHARED.shutdown()


@pytest.fixture
def dispatcher(processes: ProcessPoolExecutor) -> Dispatcher:
    return Dispatcher(SENT, executor=processes, max_concurrency=4)


def call(name: str, id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id, name, arguments)


# -- the boundary ------------------------------------------------------------------------------


def test_calls_run_in_worker_processes_and_come_back_in_order_with_their_ids(dispatcher: Dispatcher) -> None:
    results = dispatcher.dispatch_many([call("where", f"w{n}", n=n) for n in range(6)])
    assert [r.call_id for r in results] == [f"w{n}" for n in range(6)]
    assert [r.output["n"] for r in results] == list(range(6))
    assert {r.output["pid"] for r in results}.isdisjoint({os.getpid()})


def test_a_tool_marked_inline_stays_in_this_process(dispatcher: Dispatcher) -> None:
    assert dispatcher.dispatch(call("local", n=1)).output == os.getpid()


def test_arguments_are_validated_and_converted_before_they_leave(processes: ProcessPoolExecutor) -> None:
    class Counting(ProcessPoolExecutor):
        submitted = 0

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            Counting.submitted += 1
            return super().submit(fn, *args, **kwargs)

    executor = Counting(1, mp_context=multiprocessing.get_context("forkserver"))
    try:
        dispatcher = Dispatcher([t.norm], executor=executor)
        refused = dispatcher.dispatch(call("norm", point={"x": "3", "y": 4}))
        malformed = dispatcher.dispatch(ToolCall("c2", "norm", "{not json"))
        assert refused.error is not None and refused.error.code == "invalid_arguments"
        assert malformed.error is not None and malformed.error.code == "malformed_arguments"
        assert Counting.submitted == 0
        converted = dispatcher.dispatch(call("norm", point={"x": 3, "y": 4}, scale=2))  # the tool asserts types
        assert (converted.status, converted.output, Counting.submitted) == ("succeeded", 10.0, 1)
    finally:
        executor.shutdown()


def test_positional_only_parameters_and_runtime_values_travel(dispatcher: Dispatcher) -> None:
    assert dispatcher.dispatch(call("positional", a=1, b=2)).output == 12
    timed = Dispatcher([t.who], executor=dispatcher.routes["who"].executor, limits=Limits(deadline=60.0))
    output = timed.dispatch(call("who", "w-1")).output
    assert output["id"] == "w-1" and output["tool"] == "who"
    assert 0 < output["left"] <= 60.0  # the deadline moved onto the worker's clock


def test_tool_errors_keep_their_text_and_other_exceptions_stay_private(dispatcher: Dispatcher) -> None:
    told = dispatcher.dispatch(call("fail", kind="tool"))
    assert told.error is not None and (told.error.code, told.error.message) == ("not_found", "the order does not exist")
    for kind in ("value", "exit"):  # SystemExit in a worker ends the call, not the program
        hidden = dispatcher.dispatch(call("fail", kind=kind))
        assert hidden.error is not None and hidden.error.code == "tool_error"
        assert "secret internals" not in hidden.error.message and "error id" in hidden.error.message


def test_a_retryable_error_is_retried_across_the_boundary(dispatcher: Dispatcher, tmp_path: Path) -> None:
    result = dispatcher.dispatch(call("flaky", path=str(tmp_path / "tries")))
    assert (result.status, result.output) == ("succeeded", 3)


def test_secrets_stay_redacted(dispatcher: Dispatcher) -> None:
    result = dispatcher.dispatch(call("echo_key", text="key:"), inject={"api_key": "sk-live-123"})
    assert result.output == "key: [redacted]"


def test_outputs_that_do_not_pickle_come_back_as_data_or_fail_cleanly(dispatcher: Dispatcher) -> None:
    summary = dispatcher.dispatch(call("unpicklable"))
    assert summary.output == {"n": 1} and summary.content is not None
    lock = dispatcher.dispatch(call("lock_output"))
    assert lock.error is not None and lock.error.code == "invalid_output" and "'lock'" in lock.error.message


def test_events_are_emitted_in_this_process(processes: ProcessPoolExecutor) -> None:
    events: list[ToolEvent] = []
    Dispatcher([t.where], executor=processes, on_event=events.append).dispatch(call("where", n=1))
    assert [type(e) for e in events] == [ToolStarted, ToolCompleted]


# -- injected values ---------------------------------------------------------------------------


def test_an_injected_value_that_cannot_travel_is_refused_naming_the_parameter(dispatcher: Dispatcher) -> None:
    with pytest.raises(TransferError) as caught:
        dispatcher.dispatch(call("use_handle"), inject={"handle": t.Handle()})
    error = caught.value
    assert (error.tool, error.parameter, error.executor, error.injected) == ("use_handle", "handle", "default", True)
    assert "remote=True" in str(error) and "lock" in error.reason
    with pytest.raises(TransferError):  # the batch path refuses it too
        dispatcher.dispatch_many([call("use_handle", "b1"), call("where", "b2", n=1)], inject={"handle": t.Handle()})


def test_a_remote_value_is_made_by_the_worker(dispatcher: Dispatcher) -> None:
    made = {dispatcher.dispatch(call("use_remote_handle", f"r{n}")).output for n in range(4)}
    assert os.getpid() not in made
    inline = Dispatcher([t.use_remote_handle]).dispatch(call("use_remote_handle"))
    assert inline.output == os.getpid()  # inline, the factory runs here


def test_a_secret_cannot_be_made_remotely() -> None:
    with pytest.raises(ToolDefinitionError, match="redact"):
        Injected("api_key", secret=True, remote=True)


# -- timeouts and dead workers -----------------------------------------------------------------


def test_a_timeout_is_outcome_unknown_unless_the_tool_is_idempotent(dispatcher: Dispatcher) -> None:
    unknown = dispatcher.dispatch(call("slow", seconds=1.0))
    plain = dispatcher.dispatch(call("slow_idempotent", seconds=1.0))
    assert unknown.status == "outcome_unknown" and unknown.error is not None and unknown.error.code == "timeout"
    assert plain.status == "failed" and plain.error is not None and plain.error.code == "timeout"


def test_a_worker_that_dies_mid_call_leaves_every_call_answered(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, "tinytools")
    executor = pool()
    try:
        dispatcher = Dispatcher([t.where, t.die], executor=executor, max_concurrency=4)
        calls = [call("die", "dead", code=1), *(call("where", f"w{n}", n=n) for n in range(3))]
        results = dispatcher.dispatch_many(calls)
        assert [r.call_id for r in results] == ["dead", "w0", "w1", "w2"]
        dead = results[0]
        assert dead.status == "outcome_unknown" and dead.error is not None and dead.error.code == "worker_lost"
        assert "may have acted" in dead.error.message
        for result in results[1:]:  # the pool broke under them: answered either way
            assert result.status == "succeeded" or (result.error and result.error.code == "worker_lost")
        after = dispatcher.dispatch(call("where", "after", n=9))  # the broken pool refuses at once
        assert after.status == "failed" and after.error is not None and after.error.code == "executor_unavailable"
    finally:
        executor.shutdown()


def test_the_shared_process_pool_replaces_a_pool_a_dead_worker_broke(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, "tinytools")
    dispatcher = Dispatcher([t.where_process, t.die_process])
    assert dispatcher.dispatch(call("where_process", n=1)).output != os.getpid()
    assert dispatcher.dispatch(call("die_process", code=1)).status == "outcome_unknown"
    assert dispatcher.dispatch(call("where_process", n=2)).status == "succeeded"


EXITS = """
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from tinytools import Dispatcher, ToolCall
from tests.executors import executor_tools as t

if __name__ == "__main__":
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
    batch = [ToolCall("d", "die", {"code": 1})] + [ToolCall(f"w{n}", "where", {"n": n}) for n in range(3)]
    Dispatcher([t.die, t.where], executor=pool, max_concurrency=4).dispatch_many(batch)
    shared = Dispatcher([t.where_process, t.die_process])
    for n in range(3):
        shared.dispatch(ToolCall("a", "where_process", {"n": n}))
        shared.dispatch(ToolCall("b", "die_process", {"code": 1}))
    print("done")
"""


def test_the_interpreter_exits_after_workers_died(tmp_path: Path) -> None:
    script = tmp_path / "exits.py"
    script.write_text(EXITS)
    root = str(Path(__file__).parents[2])
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert (out.returncode, out.stdout.strip()) == (0, "done"), out.stderr[-2000:]


SHARED_POOL_SCRIPT = """
import os
from tinytools import Dispatcher, ToolCall
from tinytools.executors import shutdown_shared_pool
from tests.executors import executor_tools as t

if __name__ == "__main__":
    dispatcher = Dispatcher([t.where_process])
    outputs = [dispatcher.dispatch(ToolCall(f"c{n}", "where_process", {"n": n})).output for n in range(3)]
    assert all(pid != os.getpid() for pid in outputs), outputs
    if os.environ.get("SHUT_DOWN") == "explicitly":
        shutdown_shared_pool()
        again = dispatcher.dispatch(ToolCall("after", "where_process", {"n": 9}))  # a new pool
        assert again.status == "succeeded", again
        shutdown_shared_pool()
    print("done")
"""


@pytest.mark.parametrize("shut_down", ["at exit", "explicitly"])
def test_a_script_that_used_the_shared_pool_exits_with_nothing_on_stderr(tmp_path: Path, shut_down: str) -> None:
    script = tmp_path / "shared.py"
    script.write_text(SHARED_POOL_SCRIPT)
    root = str(Path(__file__).parents[2])
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root, "SHUT_DOWN": shut_down},
    )
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "done", "")


def test_an_idempotent_tool_is_retried_after_its_worker_died(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, "tinytools")
    result = Dispatcher([t.die_once]).dispatch(call("die_once", path=str(tmp_path / "first")))
    assert (result.status, result.output) == ("succeeded", "second attempt")


# -- what is refused when the dispatcher is built ----------------------------------------------


def original(n: int) -> int:
    return n


def _elsewhere(n: int) -> int:
    return -n


renamed = tool(original)
original = _elsewhere  # the name now leads to another function


def test_a_tool_that_cannot_be_sent_says_so_when_the_dispatcher_is_built(processes: ProcessPoolExecutor) -> None:
    @tool
    def nested(n: int) -> int:
        return n

    lam = Tool.from_schema("lam", "", {"type": "object", "properties": {}, "additionalProperties": False}, lambda: 1)
    cases = [(nested, "inside a function"), (lam, "lambda"), (renamed, "names another object")]
    for sent, reason in cases:
        with pytest.raises(ToolDefinitionError, match=reason) as caught:
            Dispatcher([sent], executor=processes)
        assert caught.value.tool == sent.name and "executor='inline'" in str(caught.value)
    Dispatcher([nested], executor=ThreadPoolExecutor(1))  # a thread pool sends nothing

    def main_level(n: int) -> int:
        return n

    main_level.__module__, main_level.__qualname__ = "__main__", "main_level"
    with pytest.raises(ToolDefinitionError, match="__main__"):
        reference(tool(main_level), executor="dask", allow_main=False)


def test_values_that_can_never_travel_are_refused_when_the_dispatcher_is_built(
    processes: ProcessPoolExecutor,
) -> None:
    @tool
    def cooperative(n: int, token: CancellationToken) -> int:
        return n

    with pytest.raises(ToolDefinitionError) as caught:  # checked before the reference
        Dispatcher([cooperative], executor=processes)
    assert caught.value.parameter == "token" and "CancellationToken" in caught.value.reason


def test_a_remote_value_needs_a_registered_factory(processes: ProcessPoolExecutor) -> None:
    unregistered = tool(_needs_cache)
    with pytest.raises(ToolDefinitionError) as caught:
        Dispatcher([unregistered], executor=processes)
    assert caught.value.parameter == "cache" and "@provide('cache')" in caught.value.reason


def _needs_cache(*, cache: Annotated[dict[str, int], Injected(remote=True)]) -> int:
    return len(cache)


def test_named_executors(processes: ProcessPoolExecutor) -> None:
    with pytest.raises(ToolDefinitionError, match="executor 'cpu'"):
        Dispatcher([t.heavy])
    dispatcher = Dispatcher([t.heavy, t.where], executor={"cpu": processes})
    assert dispatcher.dispatch(call("heavy", n=1)).output != os.getpid()
    assert dispatcher.dispatch(call("where", n=1)).output["pid"] == os.getpid()  # no "default": inline
    with pytest.raises(ToolDefinitionError, match="async"):

        @tool(executor="process")
        async def later() -> int:
            return 1

    with pytest.raises(TypeError, match="Executor"):
        Dispatcher([t.where], executor={"default": object()})  # type: ignore[dict-item]


def test_one_executor_runs_every_sync_tool_not_marked_inline(processes: ProcessPoolExecutor) -> None:
    dispatcher = Dispatcher([t.where_process, t.heavy, t.where, t.local], executor=processes)
    assert {name: route.executor for name, route in dispatcher.routes.items()} == dict.fromkeys(
        ["where_process", "heavy", "where"], processes
    )  # "process" and "cpu" too: the one executor, not the shared pool nor a refusal
    pids = [dispatcher.dispatch(call(name, n=1)).output for name in ("where_process", "heavy")]
    workers = {process.pid for process in processes._processes.values()}  # type: ignore[attr-defined]
    assert set(pids) <= workers
    assert dispatcher.dispatch(call("local", n=1)).output == os.getpid()


def test_importing_the_executors_loads_no_cluster_library() -> None:
    code = "import sys, tinytools.executors; print([m for m in ('distributed', 'dask') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- a real Dask cluster -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address="127.0.0.1:0",
            worker_dashboard_address=None,
        ) as local,
        distributed.Client(local) as client,
    ):
        yield client


def test_dask_runs_calls_on_its_workers(cluster: Any) -> None:
    dispatcher = Dispatcher(SENT, executor=cluster.get_executor(), max_concurrency=4)
    results = dispatcher.dispatch_many([call("where", f"w{n}", n=n) for n in range(6)])
    assert [r.call_id for r in results] == [f"w{n}" for n in range(6)]
    workers = set(cluster.run(os.getpid).values())
    assert {r.output["pid"] for r in results} <= workers
    assert dispatcher.dispatch(call("use_remote_handle")).output in workers
    assert dispatcher.dispatch(call("echo_key", text="k"), inject={"api_key": "sk-9"}).output == "k [redacted]"
    told = dispatcher.dispatch(call("fail", kind="tool"))
    assert told.error is not None and told.error.code == "not_found"
    late = dispatcher.dispatch(call("slow", seconds=0.6))
    assert late.status == "outcome_unknown" and late.error is not None and late.error.code == "timeout"
    closed = cluster.get_executor()
    closed.shutdown()
    refused = Dispatcher([t.where], executor=closed).dispatch(call("where", n=1))
    assert refused.status == "failed" and refused.error is not None and refused.error.code == "executor_unavailable"


def test_a_dask_tool_continues_the_callers_trace(cluster: Any) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tinytools import Tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dispatcher = Dispatcher([t.trace_here], executor=cluster.get_executor(), tracing=Tracing(tracer_provider=provider))
    with provider.get_tracer("test").start_as_current_span("turn"):
        result = dispatcher.dispatch(call("trace_here"))
    assert result.status == "succeeded", result
    assert int(result.output["pid"]) in set(cluster.run(os.getpid).values())
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool trace_here"]
    assert result.output["trace_id"] == f"{span.context.trace_id:032x}"
    assert result.output["span_id"] == f"{span.context.span_id:016x}"


def test_dask_worker_killed_mid_call_every_call_answered_and_no_rerun(
    cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)
    dispatcher = Dispatcher([t.where, t.die_later], executor=cluster.get_executor(), max_concurrency=6)
    calls = [call("die_later", "dead", seconds=0.2), *(call("where", f"w{n}", n=n) for n in range(5))]
    results = dispatcher.dispatch_many(calls)
    assert [r.call_id for r in results] == ["dead", *(f"w{n}" for n in range(5))]
    dead = results[0]
    # Dask reran the task on the other worker; the rerun saw the first attempt's mark and stood down
    assert dead.status == "outcome_unknown" and dead.error is not None and dead.error.code == "worker_lost"
    assert all(r.status == "succeeded" for r in results[1:])
    deadline = time.monotonic() + 5
    while cluster.list_datasets() and time.monotonic() < deadline:  # marks are released without waiting
        time.sleep(0.05)
    assert not cluster.list_datasets()


# -- what travels by pickle, and what is refused ------------------------------------------------


def test_a_partial_and_a_callable_instance_travel_pickled(processes: ProcessPoolExecutor) -> None:
    from tests.executors import travelling_tools as travel

    box: list[Tool[..., Any]] = [travel.sendops, travel.nested_partial, travel.adder]
    dispatcher = Dispatcher(box, executor=processes)
    sent = dispatcher.dispatch(call("sendops", text="hi"))
    assert sent.status == "succeeded", sent.error
    assert sent.output["sent"] == "ops:hi" and sent.output["pid"] != os.getpid()
    assert dispatcher.dispatch(call("nested_partial", text="yo")).output["sent"] == "ops:yo"
    added = dispatcher.dispatch(call("adder", a=1, b=2))
    assert added.status == "succeeded", added.error
    assert added.output["sum"] == 13 and added.output["pid"] != os.getpid()
    assert travel.ADDER.calls == 0  # the worker's copy counted the call, not this process's instance


def test_a_tool_that_cannot_travel_says_what_kind_it_is_and_the_fix(processes: ProcessPoolExecutor) -> None:
    from tests.executors import travelling_tools as travel

    cart = travel.Cart()

    class Local:
        def __call__(self, n: int) -> int:
            """Return n."""
            return n

    def inner(n: int) -> int:
        """Return n."""
        return n

    cases = [
        (cart.add, "it is a method bound to one Cart instance, whose state lives in this process"),
        (tool(cart.add.fn), "it is a method bound to one Cart instance"),
        (travel.Cart.make, "it is a class method, bound to Cart"),
        (travel.locked, "it is a functools.partial of send, which does not pickle (TypeError: cannot pickle"),
        (tool(name="p")(functools.partial(inner)), "it is a functools.partial of "),
        (tool(name="local")(Local()), "it is a callable "),
    ]
    for sent, reason in cases:
        with pytest.raises(ToolDefinitionError) as caught:
            Dispatcher([sent], executor=processes)
        assert caught.value.tool == sent.name
        assert caught.value.reason.startswith(f"it cannot be sent to executor 'default': {reason}")
        assert "@tool(executor='inline')" in caught.value.reason
    with pytest.raises(ToolDefinitionError, match="is defined inside a function"):
        Dispatcher([tool(name="local")(Local())], executor=processes)
    for state_here in (cart.add, travel.Cart.make):
        with pytest.raises(ToolDefinitionError, match="make it a module-level function"):
            Dispatcher([state_here], executor=processes)
    inline = tool(executor="inline")(cart.add.fn)  # the fix the message gives
    assert Dispatcher([inline], executor=processes).dispatch(call("add", item="x")).output == 1
