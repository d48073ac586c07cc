"""Traces: an OpenTelemetry span for every tool call, and the tool-duration metric, with nothing secret in them.

Spans follow the OpenTelemetry GenAI conventions for tool execution: ``execute_tool {tool}``,
kind INTERNAL, with ``gen_ai.operation.name``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.type`` and ``gen_ai.tool.description``; a failed call sets ``error.type`` to its
`StructuredError` code and the span's status to ERROR with the model-facing message. What the
conventions do not name is under ``tinytools.*``: the call's status, its attempts, what answered it
(the journal, the result cache, an act already made), a pending call's kind, the executor route.
Retries, timeouts, cancellations and approval decisions are span events. The metric is the
conventions' ``gen_ai.execute_tool.duration`` histogram (seconds), by tool name, type and error.

The call's span is current while its tool runs (on whatever thread, with the contextvars the
tool gets), so spans a tool opens are its children; a process pool or Dask worker continues the
trace from the W3C ``traceparent`` the routed call carries; a resumed call's span links to the
span of the call that parked it.

Content (``gen_ai.tool.call.arguments`` and ``.result``) is recorded only with
``Tracing(content=True)``, and only as the boundary made it: the result's model-facing text, the
arguments' JSON with every form of the call's secrets scrubbed.

``opentelemetry-api`` is optional and never imported here until the application has imported it:
a dispatcher traces when ``opentelemetry.trace`` is loaded and a tracer or meter provider is set
(or given to `Tracing`). Otherwise a call does no tracing work at all.

Tracing never changes a call: a provider, exporter or scrubber that raises loses that span,
attribute or event (logged once per dispatcher) and the call goes on as it would untraced. Text
that cannot be scrubbed is not recorded.
"""

from __future__ import annotations

import sys
import time
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import msgspec

from tinytools._public import publish
from tinytools._run.failures import logger

if TYPE_CHECKING:
    from tinytools._results import ToolCall, ToolResult

# The boundary, a call's state and its secrets are typed Any here: this module sits below the run
# layer's other modules (the executors' workers import it), so it imports none of them.

__all__ = ["TRACE_API", "CallTracer", "Tracing", "available", "current_traceparent", "traceparent_of", "within_trace"]

DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""The conventions' advisory bucket boundaries for ``gen_ai.execute_tool.duration`` (seconds)."""

TRACE_API = "opentelemetry.trace"
"""The API's module: while it is not in ``sys.modules``, no call is traced but by providers given.

The express paths ask this in their own frame before `CallTracer.live` (a dispatcher given
providers has no express path: all its calls are traced).
"""

_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether ``opentelemetry-api`` is installed (looked up once per process)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        import importlib.util  # by the first dispatcher, not by `import tinytools`

        try:
            _AVAILABLE = importlib.util.find_spec("opentelemetry") is not None
        except (ImportError, ValueError):  # a module entry of None: an application that blocked it
            _AVAILABLE = False
    return _AVAILABLE


class Tracing:
    """How a dispatcher traces its calls: ``Dispatcher(tracing=Tracing(content=True))``.

    Args:
        content: Record ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``: the
            arguments' JSON and the result's model-facing text, scrubbed of the call's secrets as
            the model would read them. Off by default.
        tracer_provider: Where spans go; by default the provider the application set
            (``opentelemetry.trace.set_tracer_provider``). tinytools configures nothing.
        meter_provider: Where the duration metric goes; by default the application's.
    """

    __slots__ = ("content", "meter_provider", "tracer_provider")

    def __init__(self, *, content: bool = False, tracer_provider: Any = None, meter_provider: Any = None):
        self.content = content
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider

    def __repr__(self) -> str:
        return f"Tracing(content={self.content!r})"


class CallTracer:
    """One dispatcher's spans and metric (see the module); made only where the API is installed."""

    __slots__ = ("_histogram", "_tracer", "boundary", "config", "failed", "given")

    def __init__(self, config: Tracing, boundary: Any):
        self.config = config
        self.boundary = boundary
        self.given = config.tracer_provider is not None or config.meter_provider is not None
        """Whether the application gave providers: then every call is traced."""
        self._tracer: Any = None
        self._histogram: Any = None
        self.failed = False
        """Whether tracing failed once already (it is logged once per dispatcher)."""

    def live(self) -> bool:
        """Whether calls are traced now: the API is loaded and a provider is set (or was given).

        Asked on every call of a dispatcher that may trace: two attribute reads once the API is
        loaded (its modules are looked up once, then kept).
        """
        if self.given:
            return True
        api = _API
        if api is None:
            if TRACE_API not in sys.modules:  # not loaded (yet): the common case, a dict lookup
                return False
            api = _find_api()
            if api is None:
                return False
        trace, metrics = api
        if trace._TRACER_PROVIDER is not None:
            return True
        if metrics is None:  # the metrics API may be loaded later: looked up again, a dict read
            metrics = sys.modules.get("opentelemetry.metrics._internal")
        return metrics is not None and getattr(metrics, "_METER_PROVIDER", None) is not None

    def fault(self, where: str) -> None:
        """Tracing failed (a provider, an exporter, a scrubber): logged once; the call goes on."""
        if not self.failed:
            self.failed = True
            logger().exception("tracing failed (%s); calls go on, untraced there", where)

    def tracer(self) -> Any:
        """The tracer, made on first use (a proxy that follows the provider the application sets)."""
        tracer = self._tracer
        if tracer is None:
            from opentelemetry import trace

            provider = self.config.tracer_provider or trace.get_tracer_provider()
            tracer = self._tracer = provider.get_tracer("tinytools", _version())
        return tracer

    def histogram(self) -> Any:
        """The tool-duration histogram, made on first use."""
        histogram = self._histogram
        if histogram is None:
            from opentelemetry import metrics

            provider = self.config.meter_provider or metrics.get_meter_provider()
            meter = provider.get_meter("tinytools", _version())
            histogram = self._histogram = meter.create_histogram(
                "gen_ai.execute_tool.duration",
                unit="s",
                description="Duration of tool execution",
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
            )
        return histogram

    def open(self, call: ToolCall, name: str, description: str | None, start: int, links: tuple[str, ...] = ()) -> Any:
        """Start a call's span, a child of the span current here, as if started at ``start`` (perf ns).

        None when the provider could not start one: the call goes on untraced.
        """
        try:
            from opentelemetry.trace import SpanKind

            name = _short(name)
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": _short(call.id, 256),
            }
            if description:
                attributes["gen_ai.tool.description"] = description
            began = time.time_ns() - (perf_counter_ns() - start)
            return self.tracer().start_span(
                f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=began,
                links=_links(links),
            )  # fmt: skip
        except Exception:
            self.fault("starting a span")
            return None

    def close(self, span: Any, result: ToolResult, arguments: Any, secrets: Any, state: Any) -> None:
        """End a call's span with its final (sealed) result, and record its duration."""
        try:
            self._describe(span, result, arguments, secrets, state)
        except Exception:
            self.fault("describing a span")
        try:
            span.end()
        except Exception:
            self.fault("ending a span")
        try:
            self._measure(result)
        except Exception:
            self.fault("recording a duration")

    def alone(self, call: ToolCall, result: ToolResult, start: int, **known: Any) -> None:
        """The span of a call that ended without running (refused, expired, a repeated id): open, then closed.

        ``known`` may give the tool's ``description``, the ``arguments`` and ``secrets`` to
        record (content only), and ``links`` (a parked call's ``traceparent``).
        """
        span = self.open(call, result.name, known.get("description"), start, known.get("links", ()))
        if span is not None:
            self.close(span, result, known.get("arguments"), known.get("secrets"), None)

    def rename(self, span: Any, name: str, description: str | None) -> None:
        """A call a middleware sent to another tool: its span names that tool."""
        try:
            span.update_name(f"execute_tool {_short(name)}")
            span.set_attribute("gen_ai.tool.name", _short(name))
            span.set_attribute("gen_ai.tool.description", description or "")
        except Exception:
            self.fault("renaming a span")

    def _describe(self, span: Any, result: ToolResult, arguments: Any, secrets: Any, state: Any) -> None:
        if not span.is_recording():
            return
        span.set_attribute("tinytools.status", result.status)
        if state is not None:
            _describe_state(span, state)
        if result.pending is not None:
            span.set_attribute("tinytools.pending.kind", result.pending.kind)
        error = result.error
        if error is not None and result.status != "pending":
            from opentelemetry.trace import StatusCode

            span.set_attribute("error.type", error.code)
            span.set_status(StatusCode.ERROR, error.message)
        if self.config.content:
            shown = self.arguments_text(arguments, secrets)
            if shown is not None:
                span.set_attribute("gen_ai.tool.call.arguments", shown)
            if result.status == "succeeded":
                span.set_attribute("gen_ai.tool.call.result", result.text())

    def arguments_text(self, arguments: Any, secrets: Any) -> str | None:
        """The arguments as JSON text, scrubbed and cut to the output budget.

        Every form of the call's secrets is scrubbed; None when they cannot be written or scrubbed.
        """
        if arguments is None:
            return None
        try:
            if isinstance(arguments, (bytes, bytearray, memoryview)):
                text = bytes(arguments).decode("utf-8", "replace")
            else:
                text = arguments if isinstance(arguments, str) else _json(arguments)
            scrub = self.boundary.scrubber(secrets)
            if scrub is not None:
                text = scrub(text)
        except Exception:  # what cannot be written or scrubbed is not recorded
            return None
        limit = self.boundary.limit
        if limit is not None and len(text) * 4 > limit:
            written = text.encode("utf-8", "surrogatepass")
            if len(written) > limit:
                return written[:limit].decode("utf-8", "ignore") + f"... [{len(written) - limit} more bytes]"
        return text

    def _measure(self, result: ToolResult) -> None:
        seconds = result.elapsed / 1e9
        attributes = {"gen_ai.tool.name": _short(result.name), "gen_ai.tool.type": "function"}
        if result.error is not None and result.status != "pending":
            attributes["error.type"] = result.error.code
        self.histogram().record(seconds, attributes)

    def event(self, span: Any, name: str, attributes: dict[str, Any], secrets: Any = None) -> None:
        """A span event (a retry, a timeout, an approval decision), its text scrubbed as the model's is."""
        try:
            if span is None or not span.is_recording():
                return
            scrub = self.boundary.scrubber(secrets)
            if scrub is not None:
                attributes = {k: scrub(value) if isinstance(value, str) else value for k, value in attributes.items()}
            span.add_event(name, attributes)
        except Exception:  # text that cannot be scrubbed is not recorded
            self.fault("recording an event")

    def current(self, span: Any) -> _Current:
        """A context manager making ``span`` the current span (around a tool's run)."""
        return _Current(span, self)


def _describe_state(span: Any, state: Any) -> None:
    span.set_attribute("tinytools.attempts", state.attempts)
    if state.answered_by is not None:
        span.set_attribute("tinytools.answered_by", state.answered_by)
    route = state.plan.route
    if route is not None:
        span.set_attribute("tinytools.route", route.name)


class _Current:
    __slots__ = ("span", "token", "tracer")

    def __init__(self, span: Any, tracer: CallTracer):
        self.span = span
        self.tracer = tracer
        self.token: Any = None

    def __enter__(self) -> None:
        try:
            from opentelemetry import context, trace

            self.token = context.attach(trace.set_span_in_context(self.span))
        except Exception:
            self.tracer.fault("making a span current")

    def __exit__(self, *exc: object) -> None:
        if self.token is None:
            return
        try:
            from opentelemetry import context

            context.detach(self.token)
        except Exception:
            self.tracer.fault("leaving a span")


_API: tuple[Any, Any] | None = None
"""The API's trace and metrics modules, once loaded (``_TRACER_PROVIDER``, ``_METER_PROVIDER`` read)."""


def _find_api() -> tuple[Any, Any] | None:
    """The API's modules, if the application loaded them; kept once found."""
    global _API
    trace = sys.modules.get(TRACE_API)
    if trace is None:
        return None
    metrics = sys.modules.get("opentelemetry.metrics._internal")
    if not hasattr(trace, "_TRACER_PROVIDER") or (metrics is not None and not hasattr(metrics, "_METER_PROVIDER")):
        return (_Always, _Always)  # an API that hides where it keeps its providers: trace, and let it decide
    _API = (trace, metrics)  # kept; a metrics API loaded later is looked up by `live`
    return _API


class _Always:
    """Stands for an API module whose providers cannot be read: they count as set."""

    _TRACER_PROVIDER = True
    _METER_PROVIDER = True


def traceparent_of(span: Any) -> str | None:
    """The W3C ``traceparent`` of a span (to link to it later, or to continue it elsewhere)."""
    if span is None:
        return None
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def current_traceparent() -> str | None:
    """The ``traceparent`` of the span current here, when the API is loaded and one is."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    return traceparent_of(trace.get_current_span())


class within_trace:
    """Continue, in this thread, the trace whose ``traceparent`` a routed call carried (a worker's side)."""

    __slots__ = ("parent", "token")

    def __init__(self, parent: str | None):
        self.parent = parent
        self.token: Any = None

    def __enter__(self) -> None:
        if self.parent is None or not available():
            return
        from opentelemetry import context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        continued = TraceContextTextMapPropagator().extract({"traceparent": self.parent})
        self.token = context.attach(continued)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            from opentelemetry import context

            context.detach(self.token)


def _links(parents: tuple[str, ...]) -> list[Any]:
    if not parents:
        return []
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    links = []
    for parent in parents:
        context = trace.get_current_span(TraceContextTextMapPropagator().extract({"traceparent": parent}))
        span_context = context.get_span_context()
        if span_context.is_valid:
            links.append(trace.Link(span_context))
    return links


def _short(text: str, limit: int = 64) -> str:
    """A name as spans and metrics carry it: one the model made up is cut (names are low-cardinality)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


_VERSION: str | None = None


def _version() -> str:
    global _VERSION
    if _VERSION is None:
        try:
            from importlib.metadata import version

            _VERSION = version("tinytools")
        except Exception:
            _VERSION = ""
    return _VERSION


publish("tinytools", Tracing)
