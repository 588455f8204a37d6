"""Tracing with OpenTelemetry (`STRATUS_TRACING=console|otlp`, the `otel` extra): the only module that imports it,
and only when tracing is on (`stratus.tracing.tracing_for`). `OtelTracing` is a `stratus.tracing.Tracing`.

Each MCP request is one SERVER span. Its parent is the W3C trace context the request carried in `params._meta`
(MCP reserves `traceparent`, `tracestate` and `baggage` there, on both eras), linked to the HTTP request's own
context when that differs; without one in `_meta`, the HTTP request's `traceparent` header is the parent. The
process's tracer provider is also OpenTelemetry's global one, so spans a tool makes with the OpenTelemetry API join
the request's trace, and each log record carries the current span's `trace_id` and `span_id`.

Spans are batched and sent when the host flushes (`flush`, after each Lambda invocation as the metrics are):
`console` prints each span as one JSON line on stdout, `otlp` posts them to the OTLP/HTTP endpoint the standard
variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`; https://opentelemetry.io/docs/
specs/otel/protocol/exporter/).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from stratus.request.inputs import InputRequired
from stratus.version import __version__

_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])


class _Span:
    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def failed(self, error_type: str, description: str | None = None, *, status_code: str | None = None) -> None:
        self._span.set_attribute("error.type", error_type)
        if status_code is not None:
            self._span.set_attribute("rpc.response.status_code", status_code)
        self._span.set_status(Status(StatusCode.ERROR, description))


class OtelTracing:
    """Server spans of MCP requests on `provider`."""

    def __init__(self, provider: TracerProvider) -> None:
        global _latest
        self.provider = provider
        self._tracer = provider.get_tracer("stratus", __version__)
        _latest = self  # where the request path's child spans go (`child_span`)

    @contextmanager
    def request(
        self,
        name: str,
        attributes: Mapping[str, str],
        parent: Mapping[str, str],
        transport: Mapping[str, str],
        opened_by: str | None = None,
    ) -> Iterator[_Span]:
        carried = _PROPAGATOR.extract(dict(transport)) if transport else None
        links: list[Link] = []
        context: Context | None
        if parent:
            context = _PROPAGATOR.extract(dict(parent))
            links.extend(_links(carried))
        else:
            context = carried
        if opened_by:
            links.extend(_links(_PROPAGATOR.extract({"traceparent": opened_by})))
        with self._start(name, SpanKind.SERVER, attributes, context, links) as span:
            yield _Span(span)

    def inject(self) -> dict[str, str]:
        return current_trace_context()

    @contextmanager
    def consume(self, name: str, attributes: Mapping[str, str], parent: Mapping[str, str]) -> Iterator[_Span]:
        context = _PROPAGATOR.extract(dict(parent)) if parent else None
        with self._start(name, SpanKind.CONSUMER, attributes, context) as span:
            yield _Span(span)

    def flush(self) -> None:
        self.provider.force_flush()

    def _start(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, str],
        context: Context | None = None,
        links: list[Link] | None = None,
    ) -> AbstractContextManager[trace.Span]:
        return self._tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=dict(attributes),
            links=links,
            record_exception=False,  # an exception's text may hold what the client must not see, or a secret
            set_status_on_exception=False,
        )


_latest: OtelTracing | None = None


_TARGET_ATTRIBUTES = {"execute_tool": "gen_ai.tool.name", "step": "stratus.step.name"}


@contextmanager
def child_span(operation: str, target: str = "") -> Iterator[_Span]:
    """An INTERNAL span under the current one (`stratus.tracing.child_span`), on the latest tracer built (the
    process's): named `{operation} {target}`, the target an attribute too."""
    if _latest is None:
        yield _Span(trace.INVALID_SPAN)
        return
    attributes = {_TARGET_ATTRIBUTES[operation]: target} if target and operation in _TARGET_ATTRIBUTES else {}
    if operation == "execute_tool":
        attributes["gen_ai.operation.name"] = "execute_tool"
    with _latest._start(f"{operation} {target}" if target else operation, SpanKind.INTERNAL, attributes) as span:
        try:
            yield _Span(span)
        except InputRequired:  # a question to the client ends the run here: not a failure
            raise
        except Exception as error:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise


def current_trace_context() -> dict[str, str]:
    """The current span's W3C trace context (`traceparent`, and `tracestate`, `baggage` when there are); {} with no
    span current."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier


def _links(context: Context | None) -> list[Link]:
    span = trace.get_current_span(context).get_span_context() if context is not None else None
    return [Link(span)] if span is not None and span.is_valid else []


class _JsonLines(ConsoleSpanExporter):
    """The console exporter, one JSON object per line (its default is indented over many)."""

    def __init__(self) -> None:
        super().__init__(formatter=lambda span: json.dumps(json.loads(span.to_json()), separators=(",", ":")) + "\n")


def _exporter(mode: str) -> SpanExporter:
    if mode == "console":
        return _JsonLines()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def correlate_logs() -> None:
    """Each log record made from now on carries the current span's `trace_id` and `span_id` (32 and 16 hex digits,
    as X-Ray and OpenTelemetry backends read them), when a span is current."""
    make_record = logging.getLogRecordFactory()

    def with_span(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            record.trace_id = format(context.trace_id, "032x")
            record.span_id = format(context.span_id, "016x")
        return record

    logging.setLogRecordFactory(with_span)


_lock = threading.Lock()
_process: OtelTracing | None = None


def process_tracing(mode: str) -> OtelTracing:
    """The process's one tracer (built on first use, with the exporter `mode` names), OpenTelemetry's global
    provider too."""
    global _process
    with _lock:
        if _process is None:
            named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "stratus"}
            provider = TracerProvider(resource=Resource.create(named))
            provider.add_span_processor(BatchSpanProcessor(_exporter(mode)))
            trace.set_tracer_provider(provider)
            correlate_logs()
            _process = OtelTracing(provider)
        return _process
