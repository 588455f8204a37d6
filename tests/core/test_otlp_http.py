"""The OTLP/HTTP span exporter a Lambda invocation sends with: a real HTTP server on 127.0.0.1 receives the batch and
decodes it with OpenTelemetry's own protobuf messages; a collector that closes its connections, or refuses the
batch, is met as it should be."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from stratus.otlp_http import OtlpHttpExporter, otlp_headers, otlp_traces_url


class _Collector(BaseHTTPRequestHandler):
    status = 200
    received: ClassVar[list[tuple[dict[str, str], ExportTraceServiceRequest]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(({key.lower(): value for key, value in self.headers.items()}, request))
        self.send_response(type(self).status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def collector(*, status: int = 200, keep_alive: bool = True) -> Iterator[tuple[str, type[_Collector]]]:
    version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
    handler: type[_Collector] = type(
        "Collector", (_Collector,), {"status": status, "received": [], "protocol_version": version}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _spans(*names: str) -> list[ReadableSpan]:
    tracer = TracerProvider().get_tracer("test")
    spans = []
    for name in names:
        span = tracer.start_span(name)
        span.end()
        spans.append(span)
    return spans  # type: ignore[return-value]  # the SDK's spans are ReadableSpans once ended


def test_a_batch_arrives_as_otlp_protobuf_with_the_configured_headers() -> None:
    with collector() as (url, received):
        exporter = OtlpHttpExporter(url, timeout=5, headers=otlp_headers("api-key=s%20ecret, team = blue"))
        assert exporter.export(_spans("tools/call add", "execute_tool add")) is SpanExportResult.SUCCESS
        assert exporter.export(_spans("tools/list")) is SpanExportResult.SUCCESS
        exporter.shutdown()
    (first_headers, first), (_, second) = received.received
    names = [span.name for resource in first.resource_spans for scope in resource.scope_spans for span in scope.spans]
    assert names == ["tools/call add", "execute_tool add"]
    assert second.resource_spans[0].scope_spans[0].spans[0].name == "tools/list"
    assert (first_headers["content-type"], first_headers["api-key"], first_headers["team"]) == (
        "application/x-protobuf",
        "s ecret",
        "blue",
    )


def test_a_collector_that_closes_each_connection_still_gets_every_batch() -> None:
    with collector(keep_alive=False) as (url, received):
        exporter = OtlpHttpExporter(url, timeout=5)
        results = [exporter.export(_spans(f"call {n}")) for n in range(3)]
        exporter.shutdown()
    assert results == [SpanExportResult.SUCCESS] * 3 and len(received.received) == 3


def test_a_refused_batch_is_a_failure_and_is_not_sent_again() -> None:
    with collector(status=403) as (url, received):
        exporter = OtlpHttpExporter(url, timeout=5)
        assert exporter.export(_spans("tools/call add")) is SpanExportResult.FAILURE
        exporter.shutdown()
    assert len(received.received) == 1


def test_the_url_comes_from_opentelemetry_s_variables() -> None:
    assert (
        otlp_traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}) == "http://collector:4318/v1/traces"
    )
    given = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://x.example/traces",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://y",
    }
    assert otlp_traces_url(given) == "https://x.example/traces"
    assert otlp_traces_url({}) == "http://localhost:4318/v1/traces"
