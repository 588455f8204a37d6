"""A gateway's call to its upstream continues the trace: the upstream Stratus gets the gateway span's context in the
request's `_meta` and as the `traceparent` header, so its server span is the gateway span's child (both apps here
share OpenTelemetry's SDK with its in-memory exporter; each is served over real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from stratus import McpServer, Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.otel_tracing import OtelTracing
from stratus.types import ASGIApp, Receive, Scope, Send
from tests.fixtures.sample_server import server
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class _SeenHeaders:
    """The upstream app, keeping each request's `traceparent` header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.traceparents: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if b"traceparent" in headers:
                self.traceparents.append(headers[b"traceparent"].decode())
        await self.app(scope, receive, send)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


async def test_the_upstream_s_span_is_the_gateway_span_s_child_in_the_client_s_trace(
    exporter: InMemorySpanExporter,
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = OtelTracing(provider)
    upstream_app = _SeenHeaders(build_app(server, Settings(), tracing=tracing))
    with uvicorn_serving(upstream_app, lifespan="on") as upstream_url:
        gateway: McpServer = GatewayServer(
            [Upstream(name="sample", transport="http", url=f"{upstream_url}/mcp", namespaced=False)],
            allowed_networks=("127.0.0.0/8",),
        )
        with uvicorn_serving(build_app(gateway, Settings(), tracing=tracing), lifespan="on") as gateway_url:
            async with httpx.AsyncClient(base_url=gateway_url, timeout=30) as http:
                session = await McpHttp(http).initialize()
                exporter.clear()
                answered = await session.request(
                    "tools/call",
                    {"name": "add", "arguments": {"a": 1, "b": 2}},
                    headers={"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"},
                )
    assert answered.json()["result"]["structuredContent"] == {"result": 3}
    spans = exporter.get_finished_spans()
    calls = [span for span in spans if span.name == "tools/call add" and span.kind is SpanKind.SERVER]
    upstream_span, gateway_span = sorted(calls, key=lambda span: span.end_time or 0)  # the upstream's ends first
    # The gateway's run of its proxy tool, under its request's span, sends the upstream request: a CLIENT span, the
    # upstream's server span its child.
    assert gateway_span.context is not None
    (proxy,) = [
        span
        for span in spans
        if span.name == "execute_tool add" and span.parent and span.parent.span_id == gateway_span.context.span_id
    ]
    (sent,) = [span for span in spans if span.kind is SpanKind.CLIENT and span.name == "tools/call add"]
    assert proxy.context is not None and sent.parent is not None and sent.parent.span_id == proxy.context.span_id
    assert dict(sent.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "add",
        "stratus.upstream": "sample",
    }
    assert upstream_span.context is not None and upstream_span.parent is not None and sent.context is not None
    assert {format(span.context.trace_id, "032x") for span in spans if span.context} == {TRACE_ID}
    assert upstream_span.parent.span_id == sent.context.span_id  # from the request's _meta
    assert f"00-{TRACE_ID}-{sent.context.span_id:016x}-01" in upstream_app.traceparents  # and the header
    provider.shutdown()
