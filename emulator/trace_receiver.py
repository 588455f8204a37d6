"""`stratus local --traces`: the stack's own OTLP receiver, so that one request shows as one trace across functions.

Each container is told `STRATUS_TRACING=otlp` (when the template leaves it `off`), `OTEL_EXPORTER_OTLP_ENDPOINT` and
`AWS_ENDPOINT_URL_XRAY` (the emulator's AWS API port, where `POST /v1/traces` lands here) and `OTEL_SERVICE_NAME`
(its function's name), unless the template or the shell sets them. A template's `Traces=xray` sends here too, each
export signed and checked as X-Ray checks it (`xray:PutTraceSegments`, `aws_apis`). A request's spans arrive as each
invocation flushes them, OTLP/HTTP in protobuf (https://opentelemetry.io/docs/specs/otlp/#otlphttp), decoded with
OpenTelemetry's own message types (the `otel` extra, imported only with `--traces` or `Traces=xray`). Each span is
written as it arrives (an invocation's in the order they started), one line, indented under its parent when that
arrived first:
`[trace 4bf92f35] stratus-local-BufferedFunction  tools/call export  3.1 ms`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import IO, Any

from stratus.emulator.events import Answer
from stratus.emulator.proxy_integration import read_limited, send_answer
from stratus.types import Receive, Scope, Send
from stratus.waterfall import waterfall_line

PATH = "/v1/traces"
REQUEST_BYTES = 4 * 1024 * 1024
_KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    service: str
    duration_ms: float
    attributes: dict[str, Any] = field(default_factory=dict)
    links: tuple[str, ...] = ()
    """The span ids it links to."""


class TraceReceiver:
    """Receives the containers' spans; `spans()` is every one so far, in arrival order."""

    def __init__(self, output: IO[bytes] | None = None) -> None:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self._decode_error: type[Exception] = DecodeError

        self._messages = trace_service_pb2
        self.output = output
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self._depths: dict[str, int] = {}

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, too_large = await read_limited(receive, REQUEST_BYTES)
        if scope["method"] != "POST" or too_large:
            await send_answer(send, Answer(413 if too_large else 405, [], b""))
            return
        request = self._messages.ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except self._decode_error:
            await send_answer(send, Answer(400, [("content-type", "text/plain")], b"not an OTLP trace export"))
            return
        self._keep(request)
        answer = self._messages.ExportTraceServiceResponse().SerializeToString()
        await send_answer(send, Answer(200, [("content-type", "application/x-protobuf")], answer))

    def _keep(self, request: Any) -> None:
        for resource_spans in request.resource_spans:
            attributes = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
            service = str(attributes.get("service.name", "?"))
            started = sorted(  # a parent starts before its children: it is written first, they under it
                (span for scope_spans in resource_spans.scope_spans for span in scope_spans.spans),
                key=lambda span: span.start_time_unix_nano,
            )
            for span in started:
                self._add(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=_KINDS.get(span.kind, "UNSPECIFIED"),
                        service=service,
                        duration_ms=(span.end_time_unix_nano - span.start_time_unix_nano) / 1e6,
                        attributes={item.key: _value(item.value) for item in span.attributes},
                        links=tuple(link.span_id.hex() for link in span.links),
                    )
                )

    def _add(self, span: ReceivedSpan) -> None:
        with self._lock:
            self._spans.append(span)
            depth = self._depths.get(span.parent_span_id, -1) + 1
            self._depths[span.span_id] = depth
        if self.output is not None:
            line = waterfall_line(span.trace_id, depth, span.service, span.name, span.duration_ms)
            self.output.write(f"{line}\n".encode())
            self.output.flush()


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "int_value", "double_value", "bool_value") else None
