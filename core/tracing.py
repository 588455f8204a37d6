"""The tracing seam: what the request path asks of a tracer, and the tracer when tracing is off.

With `STRATUS_TRACING=off` (the default) every request gets `NO_TRACING`'s span, which does nothing, and no module of
OpenTelemetry is imported. `console`, `otlp` and `xray` build `stratus.otel_tracing.OtelTracing` (the `otel` extra): one
server span per MCP request, named and attributed as OpenTelemetry's MCP conventions say
(`stratus.protocol.request_spans`), its parent the W3C trace context the client sent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Protocol

TRACE_CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")
"""W3C trace context, in a request's `params._meta` (MCP reserves these keys) or in HTTP headers."""
TRACE_EVENT_KEY = "stratusTrace"
"""A launch event's key for the launching request's trace context, which the run's span continues."""


class RequestSpan(Protocol):
    def failed(self, error_type: str, description: str | None = None, *, status_code: str | None = None) -> None:
        """The request ended in error: `error_type` a low-cardinality class (a JSON-RPC code, `tool_error`, an
        exception's type name), `description` what the client was told (never an internal error's text),
        `status_code` the JSON-RPC error code when there is one."""


class Tracing(Protocol):
    def request(
        self,
        name: str,
        attributes: Mapping[str, str],
        parent: Mapping[str, str],
        transport: Mapping[str, str],
        opened_by: str | None = None,
    ) -> AbstractContextManager[RequestSpan]:
        """A server span for one MCP request, current while the block runs. `parent`: the trace context the request
        carried in `params._meta`; `transport`: the HTTP request's own (headers), the parent when `parent` has none,
        else a link; `opened_by`: the `traceparent` of the span that opened the request's session, a link."""

    def inject(self) -> dict[str, str]:
        """The current span's W3C trace context, for a launch to carry to the invocation that runs it ({} with
        none)."""

    def consume(
        self, name: str, attributes: Mapping[str, str], parent: Mapping[str, str]
    ) -> AbstractContextManager[RequestSpan]:
        """A CONSUMER span for work a launch started in another invocation (a task's run, a relayed call's), its
        parent the trace context the launch carried."""

    def flush(self) -> None:
        """Send the spans that ended (before a Lambda invocation ends, so none is lost at the freeze)."""


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def failed(self, error_type: str, description: str | None = None, *, status_code: str | None = None) -> None:
        return None


NO_SPAN = _NoSpan()


class NoTracing:
    """Tracing off: every request's span does nothing."""

    __slots__ = ()

    def request(
        self,
        name: str,
        attributes: Mapping[str, str],
        parent: Mapping[str, str],
        transport: Mapping[str, str],
        opened_by: str | None = None,
    ) -> AbstractContextManager[RequestSpan]:
        return NO_SPAN

    def inject(self) -> dict[str, str]:
        return {}

    def consume(
        self, name: str, attributes: Mapping[str, str], parent: Mapping[str, str]
    ) -> AbstractContextManager[RequestSpan]:
        return NO_SPAN

    def flush(self) -> None:
        return None


NO_TRACING = NoTracing()


def tracing_for(mode: str) -> Tracing:
    """The tracer `STRATUS_TRACING` (`Settings.tracing`) asks for; `NO_TRACING` when off (OpenTelemetry is imported
    only when on)."""
    if mode == "off":
        return NO_TRACING
    from stratus.otel_tracing import process_tracing

    return process_tracing(mode)


def traced(event: dict[str, str], tracing: Tracing) -> dict[str, object]:
    """A launch's event, with the current span's trace context when there is one (`TRACE_EVENT_KEY`)."""
    carrier = tracing.inject()
    return {**event, TRACE_EVENT_KEY: carrier} if carrier else dict(event)


def current_trace_context() -> dict[str, str]:
    """The current span's W3C trace context, for a request this process sends on (a gateway's to its upstream); {}
    with tracing off, when `stratus.otel_tracing` was never imported (and it is not imported here)."""
    otel = sys.modules.get("stratus.otel_tracing")
    if otel is None:
        return {}
    carried: dict[str, str] = otel.current_trace_context()
    return carried


def child_span(operation: str, target: str = "") -> AbstractContextManager[RequestSpan]:
    """An INTERNAL span under the current one, for where a request's time goes: `admission` (the store's round trip
    for limits and breaker), `execute_tool` (the tool's run, `target` its name), `step` (a task's step, `target` its
    name). A span that does nothing with tracing off, when `stratus.otel_tracing` was never imported: nothing is built
    for it then, not even its name."""
    otel = sys.modules.get("stratus.otel_tracing")
    if otel is None:
        return NO_SPAN
    span: AbstractContextManager[RequestSpan] = otel.child_span(operation, target)
    return span


def store_span(system: str, operation: Callable[[], str]) -> AbstractContextManager[RequestSpan]:
    """A CLIENT span for one round trip to the state store (`system`: `redis`, `aws.dynamodb`; `operation` names what
    it sent, e.g. `EVALSHA admit` or `GetItem`, and is called only when traced: a store's hot path builds no name with
    tracing off), under the current span; nothing with tracing off, as `child_span`."""
    otel = sys.modules.get("stratus.otel_tracing")
    if otel is None:
        return NO_SPAN
    span: AbstractContextManager[RequestSpan] = otel.store_span(system, operation)
    return span


def upstream_span(method: str, target: str, upstream: str) -> AbstractContextManager[RequestSpan]:
    """A CLIENT span for one request a gateway sends to its upstream `upstream` (named `{method} {target}` as the
    MCP conventions name a client's span), under the current span, whose context the request carries on; nothing
    with tracing off, or outside a request (a gateway's own refresh of its lists)."""
    otel = sys.modules.get("stratus.otel_tracing")
    if otel is None:
        return NO_SPAN
    span: AbstractContextManager[RequestSpan] = otel.upstream_span(method, target, upstream)
    return span
