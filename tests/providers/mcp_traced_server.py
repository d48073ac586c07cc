"""A tinytools MCP server that records its spans, for the tracing tests (run as a script).

``python mcp_traced_server.py SPANS [--http PORT [--stateful]]``: every span the server ends is
written to the file SPANS as one JSON line (name, trace id, span id, parent span id, attributes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from tinytools import Toolbox, tool


class LinesExporter(SpanExporter):
    """Writes each span as a JSON line, flushed at once (the test reads the file while we run)."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's life

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            line = {
                "name": span.name,
                "trace_id": f"{span.context.trace_id:032x}",
                "span_id": f"{span.context.span_id:016x}",
                "parent": f"{span.parent.span_id:016x}" if span.parent else None,
                "attributes": dict(span.attributes or {}),
            }
            self.file.write(json.dumps(line) + "\n")
        self.file.flush()
        return SpanExportResult.SUCCESS


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


toolbox = Toolbox([add])

if __name__ == "__main__":
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(LinesExporter(sys.argv[1])))
    trace.set_tracer_provider(provider)
    from tinytools.providers import mcp

    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        mcp.serve_http(toolbox, "127.0.0.1", port, stateless="--stateful" not in sys.argv)
    else:
        mcp.serve(toolbox)
