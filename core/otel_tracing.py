"""Tracing with OpenTelemetry (`STRATUS_TRACING=console|otlp|xray`, the `otel` extra): the only module that imports
it, and only when tracing is on (`stratus.tracing.tracing_for`). `OtelTracing` is a `stratus.tracing.Tracing`.

Each MCP request is one SERVER span. Its parent is the W3C trace context the request carried in `params._meta`
(MCP reserves `traceparent`, `tracestate` and `baggage` there, on both eras), linked to the HTTP request's own
context when that differs; without one in `_meta`, the HTTP request's `traceparent` header is the parent. The
process's tracer provider is also OpenTelemetry's global one, so spans a tool makes with the OpenTelemetry API join
the request's trace, and each log record carries the current span's `trace_id` and `span_id`.

Spans are batched and sent when the host flushes (`flush`, after each Lambda invocation as the metrics are):
`console` prints each request's spans on stdout as a waterfall; `otlp` posts them (`stratus.otlp_http`) to the
OTLP/HTTP endpoint the standard variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`;
https://opentelemetry.io/docs/specs/otel/protocol/exporter/); `xray` to X-Ray's OTLP endpoint
(`https://xray.<region>.amazonaws.com/v1/traces`, or `AWS_ENDPOINT_URL_XRAY`'s), each export signed with SigV4 by
the function's role, which needs `xray:PutTraceSegments` (https://docs.aws.amazon.com/xray/latest/devguide/
xray-opentelemetry.html; the account must have CloudWatch Transaction Search on).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from stratus.request.inputs import InputRequired
from stratus.version import __version__
from stratus.waterfall import waterfall_line

if TYPE_CHECKING:
    from stratus.otlp_http import Signer

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
        self.provider.force_flush(timeout_millis=int(FLUSH_SECONDS * 1000))

    @contextmanager
    def _start(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, str],
        context: Context | None = None,
        links: list[Link] | None = None,
    ) -> Iterator[trace.Span]:
        trips = _early_trips.get() if kind in (SpanKind.SERVER, SpanKind.CONSUMER) else ()
        if trips:
            _early_trips.set(())
        with self._tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=dict(attributes),
            links=links,
            start_time=min(trip.started_ns for trip in trips) if trips else None,
            record_exception=False,  # an exception's text may hold what the client must not see, or a secret
            set_status_on_exception=False,
        ) as span:
            for trip in trips:
                self._adopt(trip)
            yield span

    def _adopt(self, trip: _Trip) -> None:
        """A trip made before the current span began, as its child, at the times it was made."""
        attributes = _store_attributes(trip.system, trip.operation)
        child = self._tracer.start_span(
            trip.operation, kind=SpanKind.CLIENT, attributes=attributes, start_time=trip.started_ns
        )
        if trip.error_type is not None:
            _Span(child).failed(trip.error_type)
        child.end(end_time=trip.ended_ns)


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
            _Span(span).failed(type(error).__name__)
            raise


@contextmanager
def upstream_span(method: str, target: str, upstream: str) -> Iterator[_Span]:
    """A CLIENT span for a gateway's request to its upstream (`stratus.tracing.upstream_span`); only under a span."""
    if _latest is None or not trace.get_current_span().get_span_context().is_valid:
        yield _Span(trace.INVALID_SPAN)
        return
    attributes = {"mcp.method.name": method, "stratus.upstream": upstream}
    if target and method == "tools/call":
        attributes["gen_ai.tool.name"] = target
    with _latest._start(f"{method} {target}" if target else method, SpanKind.CLIENT, attributes) as span:
        try:
            yield _Span(span)
        except Exception as error:
            _Span(span).failed(str(getattr(error, "code", None) or type(error).__name__))
            raise


class _Trip(NamedTuple):
    """A store round trip made before its request's span began (the session read, with the call's admission)."""

    system: str
    operation: str
    started_ns: int
    ended_ns: int
    error_type: str | None


_early_trips: ContextVar[tuple[_Trip, ...]] = ContextVar("stratus_early_trips", default=())
"""The trips of this request (this asyncio task) made before its span: a tuple, never a shared list, as a task
inherits its creator's context."""
_EARLY_TRIPS = 16


@contextmanager
def store_span(system: str, named: Callable[[], str]) -> Iterator[_Span]:
    """A CLIENT span for one store round trip (`stratus.tracing.store_span`), named for its operation and attributed
    as OpenTelemetry's database conventions say (`db.system.name`, `db.operation.name`). A trip made before any
    span is current (the transport reads the session, and admits the call, before it knows the request's span) is
    kept and becomes a child of the next span this task starts, which then begins when the trip did; work outside
    any request (a sweeper's scan) makes no root spans of its own."""
    if _latest is None:
        yield _Span(trace.INVALID_SPAN)
        return
    operation = named()
    if not trace.get_current_span().get_span_context().is_valid:
        started, error_type = time.time_ns(), None
        try:
            yield _Span(trace.INVALID_SPAN)
        except Exception as error:
            error_type = type(error).__name__
            raise
        finally:
            trips = _early_trips.get()
            if len(trips) < _EARLY_TRIPS:
                _early_trips.set((*trips, _Trip(system, operation, started, time.time_ns(), error_type)))
        return
    with _latest._start(operation, SpanKind.CLIENT, _store_attributes(system, operation)) as span:
        try:
            yield _Span(span)
        except Exception as error:
            _Span(span).failed(type(error).__name__)
            raise


def _store_attributes(system: str, operation: str) -> dict[str, str]:
    return {"db.system.name": system, "db.operation.name": operation}


def current_trace_context() -> dict[str, str]:
    """The current span's W3C trace context (`traceparent`, and `tracestate`, `baggage` when there are); {} with no
    span current."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier


def _links(context: Context | None) -> list[Link]:
    span = trace.get_current_span(context).get_span_context() if context is not None else None
    return [Link(span)] if span is not None and span.is_valid else []


class Waterfall(SpanExporter):
    """`console`: each request's spans on `output`, once the request's own span has ended, one line each in the order
    they started, each indented under its parent (`stratus.tracing.waterfall_line`)."""

    PENDING = 10_000
    """Spans kept for requests still under way, at most (the oldest are dropped past it)."""

    def __init__(self, output: TextIO | None = None) -> None:
        self.output = output
        self._pending: dict[int, list[ReadableSpan]] = {}
        self._count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            if span.context is None:
                continue
            self._pending.setdefault(span.context.trace_id, []).append(span)
            self._count += 1
            if span.parent is None or span.parent.is_remote:  # this process's root of the trace: its tree is whole
                self._write(self._pending.pop(span.context.trace_id))
        while self._count > self.PENDING and self._pending:
            self._count -= len(self._pending.pop(next(iter(self._pending))))
        return SpanExportResult.SUCCESS

    def _write(self, spans: list[ReadableSpan]) -> None:
        self._count -= len(spans)
        depths: dict[int, int] = {}
        lines = []
        for span in sorted(spans, key=lambda span: span.start_time or 0):
            assert span.context is not None
            parent = span.parent.span_id if span.parent is not None else None
            depth = depths[span.context.span_id] = depths[parent] + 1 if parent in depths else 0
            service = str(span.resource.attributes.get("service.name", "stratus"))
            duration_ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
            lines.append(waterfall_line(format(span.context.trace_id, "032x"), depth, service, span.name, duration_ms))
        output = self.output or sys.stdout
        output.write("".join(f"{line}\n" for line in lines))
        output.flush()

    def shutdown(self) -> None:
        self._pending.clear()


EXPORT_SECONDS = 1.0
"""The longest one try to send an invocation's spans takes (a second try follows only on a dropped kept-alive
connection): a collector or X-Ray out of reach must not hold every invocation, billed, for long
(`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or `OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds, when set, instead). Spans it
could not send are dropped, with a warning."""
FLUSH_SECONDS = 2 * EXPORT_SECONDS
"""The longest the end of an invocation waits for its spans to be sent."""


def _exporter(mode: str) -> SpanExporter:
    if mode == "console":
        return Waterfall()
    from stratus.otlp_http import OtlpHttpExporter, otlp_headers, otlp_traces_url

    timeout = _export_seconds(os.environ)
    if mode == "xray":
        return OtlpHttpExporter(xray_traces_url(), timeout=timeout, sign=_xray_signer(_region(os.environ)))
    given = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
    return OtlpHttpExporter(otlp_traces_url(os.environ), timeout=timeout, headers=otlp_headers(given))


def _export_seconds(environ: Mapping[str, str]) -> float:
    given = environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT")
    try:
        return float(given) / 1000 if given else EXPORT_SECONDS
    except ValueError:
        return EXPORT_SECONDS


def xray_traces_url(environ: Mapping[str, str] = os.environ) -> str:
    """X-Ray's OTLP traces endpoint in the function's Region (`AWS_ENDPOINT_URL_XRAY`, when set, in its place)."""
    base = environ.get("AWS_ENDPOINT_URL_XRAY") or f"https://xray.{_region(environ)}.amazonaws.com"
    return f"{base.rstrip('/')}/v1/traces"


def _region(environ: Mapping[str, str]) -> str:
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def _xray_signer(region: str) -> Signer:
    """Signs each export for X-Ray with the credentials Lambda gives the function's role, read at each export: a
    SnapStart restore gets fresh ones."""
    from stratus.net.sigv4 import environment_credentials, signed_headers

    def sign(url: str, body: bytes, headers: Mapping[str, str]) -> Mapping[str, str]:
        credentials = environment_credentials()
        if credentials is None:
            return {}
        return signed_headers("POST", url, body, headers, credentials, region=region, service="xray")

    return sign


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
            # Each function its own service (a node of X-Ray's map), unless OTEL_SERVICE_NAME names one.
            service = os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or "stratus"
            named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service}
            provider = TracerProvider(resource=Resource.create(named))
            exporter = _exporter(mode)
            # The console's lines are written as each span ends: nothing to batch, and no wait for a batch to fill.
            processor = SimpleSpanProcessor if mode == "console" else BatchSpanProcessor
            provider.add_span_processor(processor(exporter))
            trace.set_tracer_provider(provider)
            correlate_logs()
            _process = OtelTracing(provider)
        return _process
