"""Each round trip to the state store is a CLIENT span under the request's, named for what it sent and attributed as
OpenTelemetry's database conventions say, on the real stores: redis-server, and DynamoDB on moto's server. No store
key (which holds a session's id) is an attribute."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from stratus import McpServer, Settings
from stratus.otel_tracing import OtelTracing
from stratus.resilience.limiter import RateLimit
from tests.fixtures.clients import McpFactory
from tests.fixtures.emulated_stack import store_environment
from tests.fixtures.keys import SECRET_KEY

pytestmark = pytest.mark.anyio
server = McpServer("spans")


@server.tool(rate_limit=RateLimit(rate=100, burst=100))
def add(a: int, b: int) -> int:
    return a + b


@pytest.fixture(params=["redis", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Settings]]:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with store_environment(request.param) as environment:
        for name, value in environment.items():
            if not name.startswith("STRATUS_"):
                monkeypatch.setenv(name, value)
        prefix = environment.get("STRATUS_STORE_PREFIX", "stratus")
        yield request.param, Settings(store=environment["STRATUS_STORE"], store_prefix=prefix, secret_key=SECRET_KEY)


async def test_each_store_round_trip_of_a_call_is_a_client_span_under_its_request(
    mcp_factory: McpFactory, store: tuple[str, Settings]
) -> None:
    backend, settings = store
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    session = await (await mcp_factory(server, settings, tracing=OtelTracing(provider))).initialize()
    exporter.clear()
    answered = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert answered.json()["result"]["structuredContent"] == {"result": 5}

    spans = exporter.get_finished_spans()
    (request,) = [span for span in spans if span.kind is SpanKind.SERVER]
    assert request.context is not None
    trips = [span for span in spans if span.kind is SpanKind.CLIENT]
    assert trips, [(span.name, span.kind) for span in spans]
    system = {"redis": "redis", "dynamodb": "aws.dynamodb"}[backend]
    for trip in trips:
        attributes = dict(trip.attributes or {})
        assert attributes == {"db.system.name": system, "db.operation.name": trip.name}
        assert trip.context is not None and trip.context.trace_id == request.context.trace_id
    # The transport reads the session and admits the call (the tool's limit is the store's to count) before it
    # knows the request's span: that trip is still the span's child, and the span begins when it did.
    first = min(trips, key=lambda span: span.start_time or 0)
    assert first.parent is not None and first.parent.span_id == request.context.span_id
    assert request.start_time is not None and first.start_time is not None and request.start_time <= first.start_time
    # One round trip on Redis (a pipeline of the two scripts); on DynamoDB the session's and the limit's items read
    # in one batch, then the limit's bucket taken.
    expected = {"redis": ["EVALSHA session_load bucket_take"], "dynamodb": ["BatchGetItem", "UpdateItem"]}[backend]
    assert sorted(span.name for span in trips) == expected
    assert session.session_id not in str([dict(span.attributes or {}) for span in spans])
    provider.shutdown()
