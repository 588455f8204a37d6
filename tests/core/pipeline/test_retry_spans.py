"""A tool's retries show in its trace: each wait before another attempt is a span of its own under the tool's run
(`retry_wait <tool>`), as long as the wait the injected sleep recorded."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stratus import McpServer, ToolError
from stratus.otel_tracing import OtelTracing
from stratus.server.policy import RetryPolicy
from tests.fixtures.pipeline_harness import Harness

pytestmark = pytest.mark.anyio


async def test_each_retry_wait_is_a_span_under_the_tool_s_run(harness_for: Callable[[McpServer], Harness]) -> None:
    server = McpServer("flaky", retry=RetryPolicy(attempts=3, base_delay=0.1))
    failures = [ToolError("busy", retryable=True), ToolError("busy", retryable=True)]

    @server.tool(annotations={"idempotentHint": True})
    def fetch() -> str:
        if failures:
            raise failures.pop()
        return "fetched"

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = OtelTracing(provider)
    harness = harness_for(server)
    with tracing.request("tools/call fetch", {}, {}, {}):
        result = await harness.call("fetch")
    assert result["content"] == [{"type": "text", "text": "fetched"}]

    spans = exporter.get_finished_spans()
    (run,) = [span for span in spans if span.name == "execute_tool fetch"]
    waits = [span for span in spans if span.name == "retry_wait fetch"]
    assert run.context is not None and len(waits) == 2 == len(harness.sleeps.delays)
    assert all(wait.parent is not None and wait.parent.span_id == run.context.span_id for wait in waits)
    provider.shutdown()
