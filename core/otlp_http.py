"""OTLP/HTTP export of spans for a Lambda invocation (`stratus.otel_tracing`, imported only when tracing is on).

OpenTelemetry's own OTLP/HTTP exporter sends through `requests`: measured per warm call, its export cost 1.6 ms of
CPU, most of it `requests` (environment proxies read on every request, its adapters), and its import about a quarter
of tracing's cold start. This one encodes with OpenTelemetry's own encoder (`opentelemetry-exporter-otlp-proto-common`,
protobuf: https://opentelemetry.io/docs/specs/otlp/#otlphttp) and posts over one kept-alive `http.client` connection:
the same bytes on the wire, without the library around them.

An export is bounded: one try, and one more on a fresh connection when the kept one was closed by the collector
(idle keep-alives are), within `timeout` seconds each; a refusal or a collector out of reach drops the batch with a
warning, as OpenTelemetry's does once it gives up. Nothing retries for long: the invocation is waiting, billed.
"""

from __future__ import annotations

import http.client
import logging
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("stratus.tracing")
Signer = Callable[[str, bytes, Mapping[str, str]], Mapping[str, str]]
"""Headers that sign one export (url, body, its headers): X-Ray's SigV4."""


class OtlpHttpExporter(SpanExporter):
    """Posts each batch of spans to `url` as OTLP/HTTP protobuf."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float,
        headers: Mapping[str, str] | None = None,
        sign: Signer | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an OTLP/HTTP URL: {url!r}")
        self.url = url
        self.timeout = timeout
        self.headers = {"content-type": "application/x-protobuf", **(headers or {})}
        self.sign = sign
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        body = encode_spans(spans).SerializeToString()
        headers = dict(self.headers)
        if self.sign is not None:
            headers.update(self.sign(self.url, body, headers))
        with self._lock:
            for attempt in range(2):
                try:
                    status = self._post(body, headers)
                except (OSError, http.client.HTTPException) as error:
                    self._close()
                    if attempt == 0:
                        continue  # a kept-alive connection the collector had closed: once more, on a fresh one
                    logger.warning("spans not sent to %s: %s (%s)", self.url, type(error).__name__, error)
                    return SpanExportResult.FAILURE
                if 200 <= status < 300:
                    return SpanExportResult.SUCCESS
                logger.warning("spans not sent to %s: it answered %d", self.url, status)
                return SpanExportResult.FAILURE
        return SpanExportResult.FAILURE

    def _post(self, body: bytes, headers: Mapping[str, str]) -> int:
        if self._connection is None:
            self._connection = (
                http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.timeout, context=ssl.create_default_context()
                )
                if self._https
                else http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            )
        self._connection.request("POST", self._path, body=body, headers=dict(headers))
        response = self._connection.getresponse()
        response.read()
        if response.will_close:
            self._close()
        return response.status

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def shutdown(self) -> None:
        with self._lock:
            self._close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def otlp_headers(value: str) -> dict[str, str]:
    """`OTEL_EXPORTER_OTLP_HEADERS` / `..._TRACES_HEADERS`: `key=value` pairs, comma-separated, values URL-encoded
    (https://opentelemetry.io/docs/specs/otel/protocol/exporter/#specifying-headers-via-environment-variables)."""
    headers = {}
    for pair in value.split(","):
        key, equals, encoded = pair.partition("=")
        if equals and key.strip():
            headers[key.strip().lower()] = unquote(encoded.strip())
    return headers


def otlp_traces_url(environ: Mapping[str, str]) -> str:
    """Where OTLP/HTTP spans go, as OpenTelemetry's variables say: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given,
    else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`, else the collector's default on this machine."""
    if traces := environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return traces
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return f"{base.rstrip('/')}/v1/traces"
