"""Each MCP request is one server span, named and attributed as OpenTelemetry's MCP conventions say, continuing the
trace the client sent (`params._meta` on both eras, else the `traceparent` header), with no argument value, token or
header among its attributes; its log lines carry the span's ids. Spans are read from OpenTelemetry's own SDK (its
in-memory exporter), not from a stand-in."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from stratus import Settings
from stratus.otel_tracing import OtelTracing, correlate_logs
from stratus.stores.records import SessionRecord, decode_session, encode_session
from tests.fixtures.clients import McpFactory
from tests.fixtures.sample_server import server
from tests.fixtures.wire import HandshakeSession, initialize_message, stateless_meta

pytestmark = pytest.mark.anyio
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
HEADER_TRACE = "0af7651916cd43dd8448eb211c80319c"
TOKEN = "Bearer s3cr3t-token-value"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Iterator[OtelTracing]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield OtelTracing(provider)
    provider.shutdown()


def _servers(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.kind is SpanKind.SERVER]


def _only(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = _servers(exporter)
    return span


async def test_a_handshake_tools_call_is_a_server_span_named_for_its_tool_under_the_header_s_trace(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    session = await (await mcp_factory(server, Settings(), tracing=tracing)).initialize()
    exporter.clear()
    answered = await session.request(
        "tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}}, headers={"traceparent": TRACEPARENT}
    )
    assert answered.json()["result"]["structuredContent"] == {"result": 42}
    span = _only(exporter)
    assert span.name == "tools/call add" and span.kind is SpanKind.SERVER
    assert span.context is not None and span.parent is not None
    assert (format(span.context.trace_id, "032x"), format(span.parent.span_id, "016x")) == (TRACE_ID, CLIENT_SPAN)
    attributes = dict(span.attributes or {})
    assert attributes == {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "jsonrpc.request.id": str(session.client._next_id),
        "mcp.session.id": attributes["mcp.session.id"],
        "gen_ai.tool.name": "add",
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "tcp",
        "network.protocol.name": "http",
    }
    # The session's spans correlate by a digest: the id itself, which lets its holder act in the session, stays out.
    digest = str(attributes["mcp.session.id"])
    assert len(digest) == 16 and digest not in session.session_id
    assert span.status.status_code is StatusCode.UNSET


async def test_a_2026_request_continues_the_trace_in_its_meta_and_links_the_header_s(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    mcp = await mcp_factory(server, Settings(), tracing=tracing)
    meta = stateless_meta(traceparent=TRACEPARENT, tracestate="rojo=00f067aa0ba902b7")
    header = f"00-{HEADER_TRACE}-b7ad6b7169203331-01"
    params = {"name": "greeting", "arguments": {"name": "Ada"}, "_meta": meta}
    answered = await mcp.stateless("prompts/get", params, headers={"traceparent": header})
    assert answered.status_code == 200, answered.text
    span = _only(exporter)
    assert span.name == "prompts/get greeting"
    assert span.context is not None and format(span.context.trace_id, "032x") == TRACE_ID  # _meta's, not the header's
    assert span.context.trace_state.get("rojo") == "00f067aa0ba902b7"
    assert [format(link.context.trace_id, "032x") for link in span.links] == [HEADER_TRACE]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.prompt.name"] == "greeting" and attributes["mcp.protocol.version"] == "2026-07-28"
    assert "mcp.session.id" not in attributes  # no session in the stateless era


@pytest.mark.parametrize("where", ["header", "lambda"])
async def test_without_a_traceparent_a_sampled_x_ray_trace_header_is_the_parent_and_an_unsampled_one_is_not(
    mcp_factory: McpFactory,
    tracing: OtelTracing,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    session = await (await mcp_factory(server, Settings(), tracing=tracing)).initialize()
    params = {"name": "add", "arguments": {"a": 1, "b": 2}}
    seen: list[ReadableSpan] = []
    for sampled in ("1", "0"):
        header = f"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled={sampled}"
        if where == "lambda":  # Lambda's own, for the invocation (the buffered door)
            monkeypatch.setenv("_X_AMZN_TRACE_ID", header)
        exporter.clear()
        answered = await session.request(
            "tools/call", params, headers={"x-amzn-trace-id": header} if where == "header" else {}
        )
        assert answered.status_code == 200, answered.text
        seen.append(_only(exporter))
    continued, fresh = seen
    assert continued.context is not None and continued.parent is not None
    assert format(continued.context.trace_id, "032x") == "5759e988bd862e3fe1be46a994272793"
    assert format(continued.parent.span_id, "016x") == "53995c3f42cd8ad8"
    assert fresh.parent is None and fresh.context is not None and fresh.context.trace_flags.sampled
    assert format(fresh.context.trace_id, "032x") != "5759e988bd862e3fe1be46a994272793"


async def test_a_tool_error_and_a_json_rpc_error_mark_the_span_failed_with_their_error_type(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    session = await (await mcp_factory(server, Settings(), tracing=tracing)).initialize()
    exporter.clear()
    await session.request("tools/call", {"name": "divide", "arguments": {"numerator": 1, "denominator": 0}})
    refused = await session.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert refused.json()["error"]["code"] == -32602
    tool_error, unknown = _servers(exporter)
    assert (tool_error.attributes or {})["error.type"] == "tool_error"
    assert tool_error.status.status_code is StatusCode.ERROR
    assert (unknown.attributes or {})["error.type"] == "-32602"
    assert (unknown.attributes or {})["rpc.response.status_code"] == "-32602"
    assert unknown.status.status_code is StatusCode.ERROR
    assert unknown.status.description == refused.json()["error"]["message"]  # what the client was told


async def test_the_tool_s_run_is_a_child_span_of_the_request_s(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    session = await (await mcp_factory(server, Settings(), tracing=tracing)).initialize()
    exporter.clear()
    await session.request("tools/call", {"name": "divide", "arguments": {"numerator": 6, "denominator": 3}})
    run, request = exporter.get_finished_spans()  # the child ends first
    assert (run.name, run.kind, dict(run.attributes or {})) == (
        "execute_tool divide",
        SpanKind.INTERNAL,
        {"gen_ai.tool.name": "divide", "gen_ai.operation.name": "execute_tool"},
    )
    assert run.parent is not None and request.context is not None and run.parent.span_id == request.context.span_id


async def test_no_attribute_holds_an_argument_value_a_token_or_a_header(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    session = await (await mcp_factory(server, Settings(), tracing=tracing)).initialize()
    secret_city = "Zzyzx-Argument-Value"
    await session.request(
        "tools/call",
        {"name": "forecast", "arguments": {"city": secret_city}, "_meta": {"traceparent": TRACEPARENT}},
        headers={"authorization": TOKEN, "x-api-key": "key-in-a-header"},
    )
    rendered = json.dumps([dict(span.attributes or {}) for span in exporter.get_finished_spans()])
    for leaked in (secret_city, "s3cr3t-token-value", "key-in-a-header", session.session_id):
        assert leaked not in rendered


def test_log_lines_made_in_a_request_s_span_carry_its_ids(
    tracing: OtelTracing, caplog: pytest.LogCaptureFixture
) -> None:
    factory = logging.getLogRecordFactory()
    correlate_logs()
    try:
        with caplog.at_level(logging.INFO, logger="stratus"):
            with tracing.request("tools/call add", {}, {"traceparent": TRACEPARENT}, {}):
                logging.getLogger("stratus.test").info("inside a span")
            logging.getLogger("stratus.test").info("outside")
    finally:
        logging.setLogRecordFactory(factory)
    inside, outside = caplog.records
    assert (inside.trace_id, len(inside.span_id)) == (TRACE_ID, 16)  # type: ignore[attr-defined]
    assert not hasattr(outside, "trace_id")


async def test_initialize_is_a_span_and_the_session_s_later_requests_link_to_it(
    mcp_factory: McpFactory, tracing: OtelTracing, exporter: InMemorySpanExporter
) -> None:
    mcp = await mcp_factory(server, Settings(), tracing=tracing)
    opened = await mcp.post(initialize_message("2025-11-25"), {"traceparent": TRACEPARENT})
    session = HandshakeSession(mcp, opened.headers["mcp-session-id"], "2025-11-25")
    await session.request("tools/list")
    (initialize,) = [span for span in _servers(exporter) if span.name == "initialize"]
    (listed,) = [span for span in _servers(exporter) if span.name == "tools/list"]
    assert initialize.context is not None and initialize.parent is not None
    assert format(initialize.parent.span_id, "016x") == CLIENT_SPAN  # the client's trace, from the header
    assert (dict(initialize.attributes or {})["mcp.method.name"]) == "initialize"
    # Each later request is its own trace (or its client's), linked to the span that opened its session.
    assert [link.context.span_id for link in listed.links] == [initialize.context.span_id]


def test_a_session_keeps_the_span_that_opened_it_through_a_shared_store_s_encoding() -> None:
    record = SessionRecord(session_id="s", protocol_version="2025-11-25", opened_by=TRACEPARENT)
    decoded = decode_session("s", encode_session(record), created=1.0, active=1.0, expires=2.0)
    assert decoded.opened_by == TRACEPARENT
    untraced = SessionRecord(session_id="s", protocol_version="2025-11-25")
    assert "trace" not in encode_session(untraced)  # nothing kept when tracing is off


def test_a_collector_out_of_reach_holds_the_end_of_an_invocation_for_at_most_the_flush_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenTelemetry's exporter alone retries for 10 s: every invocation would wait, billed, for a collector that is
    down. Port 9 (discard) refuses on 127.0.0.1."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from stratus import otel_tracing

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TIMEOUT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(otel_tracing._exporter("otlp")))
    tracing = OtelTracing(provider)
    with tracing.request("tools/call add", {}, {}, {}):
        pass
    started = time.monotonic()
    tracing.flush()
    assert time.monotonic() - started < otel_tracing.FLUSH_SECONDS + 1.0
    provider.shutdown()


async def test_the_console_prints_each_request_as_a_waterfall_once_its_span_has_ended(mcp_factory: McpFactory) -> None:
    """`stratus serve --traces` (`STRATUS_TRACING=console`): a request's spans, in the order they started, each
    under its parent, written when the request's own span ends (its children end first)."""
    from opentelemetry.sdk.resources import Resource

    from stratus.otel_tracing import Waterfall

    output = io.StringIO()
    provider = TracerProvider(resource=Resource.create({"service.name": "demo"}))
    provider.add_span_processor(SimpleSpanProcessor(Waterfall(output)))
    session = await (await mcp_factory(server, Settings(), tracing=OtelTracing(provider))).initialize()
    output.truncate(0)
    output.seek(0)
    await session.request(
        "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, headers={"traceparent": TRACEPARENT}
    )
    lines = [line.rsplit("  ", 1)[0] for line in output.getvalue().splitlines()]  # without the durations
    assert lines == [
        f"[trace {TRACE_ID[:8]}] demo  tools/call add",
        f"[trace {TRACE_ID[:8]}]   demo  execute_tool add",
    ]
    provider.shutdown()
