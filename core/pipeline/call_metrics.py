"""Metrics, on success and on failure: every call counted with its outcome, its latency, and its errors."""

from __future__ import annotations

import logging
import time

from stratus.errors import CircuitOpenError, ForbiddenError, RateLimitedError, RequestTimeoutError, UnauthorizedError
from stratus.metrics import MetricsSink
from stratus.request.inputs import InputRequired, OutOfTime
from stratus.server.signature import ArgumentsError

OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (RateLimitedError, "rate_limited"),
    (CircuitOpenError, "circuit_open"),
    (RequestTimeoutError, "timeout"),
    (UnauthorizedError, "denied"),
    (ForbiddenError, "denied"),
    (ArgumentsError, "invalid_arguments"),
    (OutOfTime, "yielded"),
    (InputRequired, "input_required"),
)
"""The outcome label of a call that raised, by the first matching kind; anything else is `error`."""
console = logging.getLogger("stratus.calls")
"""One line per call (method, item, outcome, milliseconds) at INFO: what `stratus serve` shows. The Lambda telemetry
(`emf`, `powertools`) raises it to WARNING, as the metrics already count every call and each line is billed."""


def outcome_of(error: Exception) -> str:
    return next((label for kind, label in OUTCOMES if isinstance(error, kind)), "error")


def record(metrics: MetricsSink, method: str, item: str, outcome: str, started: float) -> None:
    """Count the call and its latency since `started` (`time.perf_counter`); an outcome but success is an error."""
    elapsed_ms = (time.perf_counter() - started) * 1000
    metrics.count("calls", method=method, item=item, outcome=outcome)
    metrics.latency("latency", elapsed_ms, method=method, item=item)
    if console.isEnabledFor(logging.INFO):
        console.info("%s %s: %s in %.1f ms", method, item, outcome, elapsed_ms)
    if outcome != "success":
        metrics.count("errors", method=method, item=item, outcome=outcome)
