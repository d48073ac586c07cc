"""OpenTelemetry spans and the tool-duration metric, with the real SDK and in-memory exporters.

Each dispatcher here is given its own tracer and meter providers (`Tracing(tracer_provider=...)`),
so nothing global is set in this process; `test_the_applications_global_provider_is_followed`
sets the global provider in a subprocess of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.executors import executor_tools
from tests.providers.servers import serving_http
from tinytools import (
    Dispatcher,
    Injected,
    NeedsInput,
    Progress,
    RetryableError,
    ToolCall,
    ToolError,
    ToolPolicy,
    ToolResult,
    Tracing,
    tool,
)
from tinytools.formats import parse_calls
from tinytools.policy import Approval, PolicyMiddleware, require_approval
from tinytools.providers import openai

SECRET = "sk-live-7f3a9c2e41b8d6"


class Traced:
    """A tracer and a meter provider with in-memory exporters, as a test's backend."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("test")

    def tracing(self, content: bool = False) -> Tracing:
        return Tracing(content=content, tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def tool_spans(self) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name.startswith("execute_tool ")]

    def by_call(self) -> dict[str, ReadableSpan]:
        found: dict[str, ReadableSpan] = {}
        for span in self.tool_spans():
            call_id = str((span.attributes or {})["gen_ai.tool.call.id"])
            assert call_id not in found, f"two spans for call {call_id}"
            found[call_id] = span
        return found

    def durations(self) -> list[tuple[dict[str, Any], int]]:
        data = self.reader.get_metrics_data()
        points = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == "gen_ai.execute_tool.duration":
                        assert metric.unit == "s"
                        points += [(dict(p.attributes or {}), p.count) for p in metric.data.data_points]
        return points


@pytest.fixture
def traced() -> Iterator[Traced]:
    backend = Traced()
    yield backend
    backend.tracer_provider.shutdown()
    backend.meter_provider.shutdown()


@tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b


@tool(description="Fail on purpose.")
def refuse(reason: str) -> str:
    raise ToolError(reason)


@tool(timeout=0.05, description="Take too long.")
def stall() -> str:
    time.sleep(0.3)
    return "late"


@tool(policy=ToolPolicy().with_access(approval_required=True), description="Deploy once approved.")
def deploy(service: str) -> str:
    return f"deployed {service}"


@tool(description="Ask the user, then answer.")
def confirm(item: str, answer: Annotated[Any, Injected("answer")] = None) -> str:
    if answer is None:
        raise NeedsInput("Which size?", {"type": "string"})
    return f"{item} in {answer}"


@tool(idempotent=True, retries=1, timeout=0.05, description="Time out once, then answer.")
def flaky(path: str) -> str:
    import os

    if not os.path.exists(path):
        open(path, "w").close()
        time.sleep(0.3)
    return "second try"


TOOLS = [add, refuse, stall, deploy, confirm, flaky]
DEFER = PolicyMiddleware([require_approval(lambda request: Approval.defer("A person decides."))])


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _check_span(span: ReadableSpan, result: ToolResult) -> None:
    """A call's span says what its result says, in the conventions' names."""
    attributes = _attributes(span)
    assert span.name == f"execute_tool {result.name}"
    assert span.kind == trace.SpanKind.INTERNAL
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == result.name
    assert attributes["gen_ai.tool.type"] == "function"
    assert attributes["gen_ai.tool.call.id"] == result.call_id
    assert attributes["tinytools.status"] == result.status
    if result.status in ("succeeded", "pending"):
        assert span.status.status_code == trace.StatusCode.UNSET and "error.type" not in attributes
    else:
        assert result.error is not None
        assert span.status.status_code == trace.StatusCode.ERROR
        assert attributes["error.type"] == result.error.code
        assert span.status.description == result.error.message


CALLS = [
    ToolCall("ok", "add", {"a": 1, "b": 2}),
    ToolCall("tool-error", "refuse", {"reason": "no"}),
    ToolCall("unknown", "nope", {}),
    ToolCall("invalid", "add", {"a": "x"}),
    ToolCall("timeout", "stall", {}),
    ToolCall("pending", "deploy", {"service": "api"}),
]
EXPECTED = {
    "ok": "succeeded",
    "tool-error": "failed",
    "unknown": "failed",
    "invalid": "failed",
    "timeout": "outcome_unknown",
    "pending": "pending",
}


def _sync_one(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    return [dispatcher.dispatch(call) for call in calls]


def _async_one(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    async def run() -> list[ToolResult]:
        return [await dispatcher.adispatch(call) for call in calls]

    return asyncio.run(run())


def _sync_batch(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    return dispatcher.dispatch_many(calls)


def _async_batch(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    return asyncio.run(dispatcher.adispatch_many(calls))


def _text_format(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    text = "\n".join(json.dumps({"name": call.name, "arguments": call.arguments}) for call in calls)
    parsed = parse_calls(text, dispatcher.toolbox)
    assert [call.name for call in parsed] == [call.name for call in calls]
    named = [
        ToolCall(sent.id, call.name, call.arguments, call.invalid) for sent, call in zip(calls, parsed, strict=True)
    ]
    return dispatcher.dispatch_many(named)


def _openai(dispatcher: Dispatcher, calls: list[ToolCall]) -> list[ToolResult]:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in calls
        ],
    }
    return dispatcher.dispatch_many(openai.read_calls(message))


ENTRIES = {
    "dispatch": _sync_one,
    "adispatch": _async_one,
    "dispatch_many": _sync_batch,
    "adispatch_many": _async_batch,
    "text format": _text_format,
    "openai": _openai,
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_every_entry_point_gives_one_span_per_call_with_its_outcome(traced: Traced, entry: str) -> None:
    dispatcher = Dispatcher(TOOLS, tracing=traced.tracing(), middleware=[DEFER], signing_key="k")
    results = ENTRIES[entry](dispatcher, CALLS)
    assert {r.call_id: r.status for r in results} == EXPECTED
    spans = traced.by_call()
    assert set(spans) == set(EXPECTED)
    for result in results:
        _check_span(spans[result.call_id], result)
    assert _attributes(spans["ok"])["gen_ai.tool.description"] == "Add two numbers."
    assert _attributes(spans["ok"])["tinytools.attempts"] == 1
    assert _attributes(spans["pending"])["tinytools.pending.kind"] == "approval"
    assert [event.name for event in spans["timeout"].events] == ["tinytools.timeout"]
    approval = [event for event in spans["pending"].events if event.name == "tinytools.approval"]
    assert [dict(event.attributes or {})["tinytools.approval.decision"] for event in approval] == ["defer"]
    assert "gen_ai.tool.call.arguments" not in _attributes(spans["ok"])  # content is opt-in
    recorded: Counter[tuple[str, str]] = Counter()
    for points, count in traced.durations():
        recorded[(points["gen_ai.tool.name"], points.get("error.type", ""))] += count
    assert recorded == Counter(
        (r.name, r.error.code if r.error is not None and r.status != "pending" else "") for r in results
    )


def test_a_tool_span_is_the_child_of_the_callers_span_and_the_parent_of_the_tools_own(traced: Traced) -> None:
    opened: list[str] = []

    @tool
    def lookup(q: str) -> str:
        """Open a span of its own (a database query, say)."""
        with traced.tracer.start_as_current_span("query"):
            opened.append(q)
        return q

    dispatcher = Dispatcher([lookup], tracing=traced.tracing())

    async def turn() -> None:
        with traced.tracer.start_as_current_span("agent turn"):
            await dispatcher.adispatch(ToolCall("c1", "lookup", {"q": "a"}))  # a sync tool: on a pool thread
        with traced.tracer.start_as_current_span("sync turn"):
            dispatcher.dispatch(ToolCall("c2", "lookup", {"q": "b"}))  # the fast path steps aside while traced

    asyncio.run(turn())
    spans = {span.name + ":" + str(_attributes(span).get("gen_ai.tool.call.id", "")): span for span in traced.spans()}
    agent, sync_turn = spans["agent turn:"], spans["sync turn:"]
    first, second = spans["execute_tool lookup:c1"], spans["execute_tool lookup:c2"]
    queries = sorted((s for s in traced.spans() if s.name == "query"), key=lambda s: s.start_time or 0)
    assert first.parent is not None and first.parent.span_id == agent.context.span_id
    assert second.parent is not None and second.parent.span_id == sync_turn.context.span_id
    assert [q.parent.span_id for q in queries if q.parent] == [first.context.span_id, second.context.span_id]
    assert {s.context.trace_id for s in (agent, first, queries[0])} == {agent.context.trace_id}


def test_a_process_pool_tool_continues_the_callers_trace(traced: Traced) -> None:
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        dispatcher = Dispatcher([executor_tools.trace_here], executor=pool, tracing=traced.tracing())
        with traced.tracer.start_as_current_span("turn"):
            result = dispatcher.dispatch(ToolCall("c1", "trace_here", {}))
    assert result.status == "succeeded", result
    (span,) = traced.tool_spans()
    assert result.output["pid"] != str(__import__("os").getpid())  # it ran in a worker process
    assert result.output["trace_id"] == f"{span.context.trace_id:032x}"
    assert result.output["span_id"] == f"{span.context.span_id:016x}"  # the call's span is its parent there
    assert _attributes(span)["tinytools.route"] == "default"


def test_retries_are_span_events_and_attempts_are_counted(traced: Traced, tmp_path: Any) -> None:
    dispatcher = Dispatcher([flaky], tracing=traced.tracing())
    result = dispatcher.dispatch(ToolCall("c1", "flaky", {"path": str(tmp_path / "mark")}))
    assert result.output == "second try"
    (span,) = traced.tool_spans()
    assert [event.name for event in span.events] == ["tinytools.timeout", "tinytools.retry"]
    assert _attributes(span)["tinytools.attempts"] == 2
    assert span.status.status_code == trace.StatusCode.UNSET


def test_a_resumed_call_gets_a_span_linked_to_the_one_that_parked_it(traced: Traced, tmp_path: Any) -> None:
    from tinytools import SQLiteJournal

    journal = SQLiteJournal(tmp_path / "journal.db")
    first = Dispatcher(TOOLS, journal=journal, signing_key="k", middleware=[DEFER], tracing=traced.tracing())
    parked = first.dispatch(ToolCall("c1", "deploy", {"service": "api"}))
    assert parked.pending is not None
    asked = first.dispatch(ToolCall("c2", "confirm", {"item": "shirt"}))
    assert asked.pending is not None and asked.pending.kind == "input"
    later = Dispatcher(TOOLS, journal=journal, signing_key="k", middleware=[DEFER], tracing=traced.tracing())
    done = later.resume(parked.pending.handle, {"approved": True})
    answered = asyncio.run(later.aresume(asked.pending.handle, "large", inject={"answer": "large"}))
    assert (done.status, answered.status) == ("succeeded", "succeeded")
    spans = [s for s in traced.tool_spans() if _attributes(s)["gen_ai.tool.call.id"] in ("c1", "c2")]
    parked_spans = [s for s in spans if _attributes(s)["tinytools.status"] == "pending"]
    resumed = [s for s in spans if _attributes(s)["tinytools.status"] == "succeeded"]
    assert len(parked_spans) == 2 and len(resumed) == 2
    for before in parked_spans:
        call_id = _attributes(before)["gen_ai.tool.call.id"]
        (after,) = [s for s in resumed if _attributes(s)["gen_ai.tool.call.id"] == call_id]
        assert [link.context.span_id for link in after.links] == [before.context.span_id]


def test_answers_from_the_journal_and_the_cache_say_so(traced: Traced, tmp_path: Any) -> None:
    from tinytools import SQLiteJournal

    @tool(policy=ToolPolicy.read_only(), cache_ttl=60)
    def price(item: str) -> int:
        """Look a price up."""
        return len(item)

    dispatcher = Dispatcher([price], journal=SQLiteJournal(tmp_path / "j.db"), tracing=traced.tracing())
    dispatcher.dispatch(ToolCall("c1", "price", {"item": "tea"}))
    dispatcher.dispatch(ToolCall("c1", "price", {"item": "tea"}))  # the same call again: the journal answers
    dispatcher.dispatch(ToolCall("c2", "price", {"item": "tea"}))  # another call: the cache answers
    answered = [_attributes(s).get("tinytools.answered_by") for s in traced.tool_spans()]
    assert answered == [None, "journal", "cache"]


def test_a_background_call_runs_in_a_span_linked_to_its_parked_call(traced: Traced) -> None:
    @tool(background=True)
    def crunch(n: int) -> int:
        """Crunch in the background."""
        with traced.tracer.start_as_current_span("inside"):
            return n * 2

    dispatcher = Dispatcher([crunch], tracing=traced.tracing())
    with traced.tracer.start_as_current_span("turn"):
        parked = dispatcher.dispatch(ToolCall("c1", "crunch", {"n": 2}))
    assert parked.pending is not None
    assert dispatcher.resume(parked.pending.handle).output == 4
    deadline = time.monotonic() + 5
    while len(traced.tool_spans()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    parked_span, ran = sorted(traced.tool_spans(), key=lambda s: s.start_time or 0)
    (inside,) = [s for s in traced.spans() if s.name == "inside"]
    assert _attributes(parked_span)["tinytools.pending.kind"] == "task"
    assert [link.context.span_id for link in ran.links] == [parked_span.context.span_id]
    assert inside.parent is not None and inside.parent.span_id == ran.context.span_id
    turn = next(s for s in traced.spans() if s.name == "turn")
    assert ran.parent is not None and ran.parent.span_id == turn.context.span_id  # the context it was started in


def test_content_is_recorded_only_when_asked_and_only_as_the_model_reads_it(traced: Traced) -> None:
    @tool
    def echo(text: str, key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Echo the text and the key."""
        return f"{text} with {key}"

    dispatcher = Dispatcher([echo], tracing=traced.tracing(content=True))
    result = dispatcher.dispatch(ToolCall("c1", "echo", {"text": "hello"}), inject={"api_key": SECRET})
    (span,) = traced.tool_spans()
    attributes = _attributes(span)
    assert json.loads(attributes["gen_ai.tool.call.arguments"]) == {"text": "hello"}
    assert attributes["gen_ai.tool.call.result"] == result.text()
    assert SECRET not in json.dumps(attributes)


@tool
def leaky(
    text: str, progress: Progress, key: Annotated[str, Injected("api_key", secret=True)]
) -> str:  # fmt: skip
    """Echo the secret every way a tool can."""
    progress.emit(0.5, message=f"halfway with {key}")
    logging.getLogger("leaky").warning("using %s", key)
    if text == "fail":
        raise ToolError(f"failed with {key}")
    if text == "crash":
        raise RuntimeError(f"crashed with {key}")
    return f"{text}: {key} / {key[::-1]} / {key.encode().hex()}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secret=st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=8, max_size=40),
    kind=st.sampled_from(["ok", "fail", "crash", "echo"]),
)
def test_no_span_attribute_or_event_holds_eight_characters_of_a_secret(secret: str, kind: str) -> None:
    text = _traced_text(secret, kind)
    neutral = _traced_text("\u00a7" * len(secret), kind)  # what the spans say whatever the secret
    windows = {secret[i : i + 8] for i in range(len(secret) - 7)}
    windows = {window for window in windows if window not in neutral}  # ("execute_" is in every span's name)
    assert not any(window in text for window in windows), text


def _traced_text(secret: str, kind: str) -> str:
    """Everything the spans of one call of ``leaky`` with ``secret`` recorded, as text."""
    backend = Traced()
    events: list[Any] = []
    dispatcher = Dispatcher([leaky], tracing=backend.tracing(content=True), on_event=events.append)
    text = f"the key is {secret}" if kind == "echo" else kind  # a model that echoes a secret it saw elsewhere
    dispatcher.dispatch(ToolCall("c1", "leaky", {"text": text}), inject={"api_key": secret})
    recorded = []
    for span in backend.spans():
        recorded += [str(value) for value in _attributes(span).values()]
        recorded += [span.status.description or ""]
        for event in span.events:
            recorded += [event.name, *(str(value) for value in dict(event.attributes or {}).values())]
    backend.tracer_provider.shutdown()
    return "\n".join(recorded)


def test_tracing_false_and_no_provider_record_nothing(traced: Traced) -> None:
    Dispatcher([add], tracing=False).dispatch(ToolCall("c1", "add", {"a": 1, "b": 1}))
    assert traced.spans() == []
    assert Dispatcher([add], tracing=False).tracer is None


def test_a_meter_provider_alone_records_every_plain_call(traced: Traced) -> None:
    # given providers, every call is traced: a plain tool's calls take no express path around it
    dispatcher = Dispatcher([add], tracing=Tracing(meter_provider=traced.meter_provider))
    dispatcher.dispatch(ToolCall("c1", "add", {"a": 1, "b": 1}))
    asyncio.run(dispatcher.adispatch(ToolCall("c2", "add", '{"a": 1, "b": 2}')))
    assert [count for _, count in traced.durations()] == [2]
    assert traced.spans() == []


GLOBAL = """
import asyncio, json, sys
import tinytools
from tinytools import ToolCall, tool

@tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

tinytools.dispatch(ToolCall("unloaded", "add", {"a": 1, "b": 0}), add)  # the API not even loaded yet
assert "opentelemetry.trace" not in sys.modules
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

before = tinytools.dispatch(ToolCall("before", "add", {"a": 1, "b": 1}), add)  # no provider yet: no span
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
tinytools.dispatch(ToolCall("fast", "add", {"a": 1, "b": 2}), add)
asyncio.run(tinytools.adispatch(ToolCall("async", "add", {"a": 1, "b": 3}), add))
tinytools.Dispatcher(add).dispatch(ToolCall("dispatcher", "add", {"a": 1, "b": 4}))
tinytools.Dispatcher(add, tracing=False).dispatch(ToolCall("off", "add", {"a": 1, "b": 5}))
print(json.dumps(sorted(s.attributes["gen_ai.tool.call.id"] for s in exporter.get_finished_spans())))
"""


def test_the_applications_global_provider_is_followed() -> None:
    done = subprocess.run([sys.executable, "-c", GLOBAL], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == ["async", "dispatcher", "fast"]


def test_import_tinytools_does_not_import_opentelemetry() -> None:
    code = "import sys, tinytools; d = tinytools.Dispatcher([]); print('opentelemetry' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


TRACED_SERVER = Path(__file__).parents[1] / "providers" / "mcp_traced_server.py"


@pytest.mark.parametrize("transport", ["stdio", "http", "http-stateful"])
def test_an_mcp_clients_trace_continues_in_the_server(traced: Traced, tmp_path: Path, transport: str) -> None:
    from tinytools.providers.mcp import connect

    spans_file = tmp_path / "server-spans.jsonl"
    spans_file.touch()

    async def turn(target: Any) -> ToolResult:
        async with connect(target) as box:
            dispatcher = Dispatcher(box, tracing=traced.tracing())
            with traced.tracer.start_as_current_span("client turn"):
                return await dispatcher.adispatch(ToolCall("c1", "add", {"a": 2, "b": 3}))

    with contextlib.ExitStack() as stack:
        if transport == "stdio":
            target: Any = [sys.executable, str(TRACED_SERVER), str(spans_file)]
        else:
            stateful = ("--stateful",) if transport == "http-stateful" else ()
            target = stack.enter_context(serving_http([str(TRACED_SERVER), str(spans_file)], *stateful))
        result = asyncio.run(turn(target))
        assert result.output == {"result": 5}  # the server's structured content
        deadline = time.monotonic() + 10
        while "execute_tool add" not in spans_file.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    client_span = next(s for s in traced.tool_spans() if _attributes(s)["gen_ai.tool.call.id"] == "c1")
    server = [json.loads(line) for line in spans_file.read_text().splitlines()]
    (served,) = [s for s in server if s["name"] == "execute_tool add"]
    assert served["trace_id"] == f"{client_span.context.trace_id:032x}"  # one trace across the two processes
    assert served["attributes"]["gen_ai.tool.name"] == "add"


class _Broken:
    """A tracer provider (and its tracers and spans) that raises at one chosen place."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.real = TracerProvider()

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        if self.where == "get_tracer":
            raise RuntimeError("get_tracer broke")
        return _BrokenTracer(self.real.get_tracer("x"), self.where)


class _BrokenTracer:
    def __init__(self, tracer: Any, where: str) -> None:
        self.tracer, self.where = tracer, where

    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        if self.where == "start_span":
            raise RuntimeError("start_span broke")
        return _BrokenSpan(self.tracer.start_span(*args, **kwargs), self.where)


class _BrokenSpan:
    def __init__(self, span: Any, where: str) -> None:
        self.span, self.where = span, where

    def __getattr__(self, name: str) -> Any:
        if name == self.where:
            raise RuntimeError(f"span.{name} broke")
        return getattr(self.span, name)


class _BrokenMeter:
    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("get_meter broke")


@pytest.mark.parametrize(
    "where", ["get_tracer", "start_span", "set_attribute", "set_status", "end", "is_recording", "add_event", "meter"]
)
def test_a_provider_that_raises_never_changes_a_call(where: str, caplog: pytest.LogCaptureFixture) -> None:
    tracing = (
        Tracing(tracer_provider=TracerProvider(), meter_provider=_BrokenMeter(), content=True)
        if where == "meter"
        else Tracing(tracer_provider=_Broken(where), meter_provider=MeterProvider(), content=True)
    )
    calls = [ToolCall("ok", "add", {"a": 1, "b": 2}), ToolCall("bad", "refuse", {"reason": "no"}),
             ToolCall("unknown", "nope", {}), ToolCall("pending", "deploy", {"service": "api"})]  # fmt: skip
    untraced = Dispatcher(TOOLS, tracing=False, middleware=[DEFER], signing_key="k").dispatch_many(calls)
    with caplog.at_level(logging.ERROR, logger="tinytools"):
        traced = Dispatcher(TOOLS, tracing=tracing, middleware=[DEFER], signing_key="k").dispatch_many(calls)
    assert [(r.status, r.output, r.error) for r in traced] == [(r.status, r.output, r.error) for r in untraced]
    assert sum("tracing failed" in record.getMessage() for record in caplog.records) == 1  # said once


class _Counting(SimpleSpanProcessor):
    def __init__(self) -> None:
        super().__init__(InMemorySpanExporter())
        self.open: set[int] = set()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.open.add(span.context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        self.open.discard(span.context.span_id)


def test_every_span_started_ends_even_when_the_call_is_cut_short() -> None:
    provider = TracerProvider()
    counting = _Counting()
    provider.add_span_processor(counting)
    gate = asyncio.Event()

    class Stuck:
        async def before_tool(self, call: ToolCall, tool: Any) -> None:
            await gate.wait()

    class Interrupts:
        def before_tool(self, call: ToolCall, tool: Any) -> None:
            raise KeyboardInterrupt

    async def cancelled() -> None:
        dispatcher = Dispatcher([add], middleware=[Stuck()], tracing=Tracing(tracer_provider=provider))
        task = asyncio.ensure_future(dispatcher.adispatch(ToolCall("c1", "add", {"a": 1, "b": 2})))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    with pytest.raises(KeyboardInterrupt):
        Dispatcher([add], middleware=[Interrupts()], tracing=Tracing(tracer_provider=provider)).dispatch(
            ToolCall("c2", "add", {"a": 1, "b": 2})
        )
    assert counting.open == set()


def test_approval_reasons_and_retry_codes_are_scrubbed_in_span_events(traced: Traced) -> None:
    @tool(policy=ToolPolicy().with_access(approval_required=True))
    def wire(amount: int, key: Annotated[str, Injected("api_key", secret=True)]) -> int:
        """Wire money."""
        return amount

    @tool(idempotent=True, retries=1)
    def shaky(key: Annotated[str, Injected("api_key", secret=True)]) -> str:
        """Fail with a code that holds the key."""
        raise RetryableError("again", code=f"bad_{key}")

    def approver(request: Any) -> Approval:
        return Approval.deny(f"key {request.call.arguments} {SECRET} is revoked")

    dispatcher = Dispatcher(
        [wire, shaky],
        middleware=[PolicyMiddleware([require_approval(approver)])],
        tracing=traced.tracing(content=True),
    )
    dispatcher.dispatch(ToolCall("c1", "wire", {"amount": 5}), inject={"api_key": SECRET})
    dispatcher.dispatch(ToolCall("c2", "shaky", {}), inject={"api_key": SECRET})
    events = [event for span in traced.tool_spans() for event in span.events]
    assert {event.name for event in events} >= {"tinytools.approval", "tinytools.retry"}
    recorded = json.dumps([dict(event.attributes or {}) for event in events])
    assert SECRET[:8] not in recorded and SECRET[-8:] not in recorded


def test_calls_that_end_without_running_again_get_spans(traced: Traced, tmp_path: Path) -> None:
    from tinytools import SQLiteJournal

    dispatcher = Dispatcher(
        TOOLS, journal=SQLiteJournal(tmp_path / "j.db"), signing_key="k", middleware=[DEFER], tracing=traced.tracing()
    )
    twice = dispatcher.dispatch_many([ToolCall("c1", "add", {"a": 1, "b": 1}), ToolCall("c1", "add", {"a": 1, "b": 1})])
    assert [r.error.code if r.error else None for r in twice] == [None, "duplicate_call_id"]
    parked = [dispatcher.dispatch(ToolCall(f"p{n}", "deploy", {"service": "api"})) for n in range(2)]
    assert parked[1].pending is not None
    cancelled = dispatcher.cancel_pending(parked[1].pending.handle)
    (expired,) = dispatcher.expire(now=time.time() + 10_000)
    assert (expired.call_id, cancelled.call_id) == ("p0", "p1")
    spans = traced.tool_spans()
    assert sum(1 for s in spans if _attributes(s)["gen_ai.tool.call.id"] == "c1") == 2
    for call_id, code in (("p0", "expired"), ("p1", "cancelled")):
        parked_span, ended = sorted(
            (s for s in spans if _attributes(s)["gen_ai.tool.call.id"] == call_id), key=lambda s: s.start_time or 0
        )
        assert _attributes(ended)["error.type"] == code
        assert [link.context.span_id for link in ended.links] == [parked_span.context.span_id]


def test_a_call_sent_to_another_tool_by_middleware_is_named_for_that_tool(traced: Traced) -> None:
    class Reroute:
        def before_tool(self, call: ToolCall, tool: Any) -> ToolCall | None:
            return ToolCall(call.id, "add", {"a": 2, "b": 2}) if call.name == "refuse" else None

    dispatcher = Dispatcher(TOOLS, middleware=[Reroute()], tracing=traced.tracing())
    assert dispatcher.dispatch(ToolCall("c1", "refuse", {"reason": "no"})).output == 4
    (span,) = traced.tool_spans()
    assert span.name == "execute_tool add" and _attributes(span)["gen_ai.tool.description"] == "Add two numbers."
    assert [points["gen_ai.tool.name"] for points, _ in traced.durations()] == ["add"]
