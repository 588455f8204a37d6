"""Metrics, on success and on failure: every call counted with its outcome, its latency, and its errors."""

from __future__ import annotations

import time

from stratus.errors import CircuitOpenError, ForbiddenError, RateLimitedError, RequestTimeoutError, UnauthorizedError
from stratus.metrics import MetricsSink
from stratus.request.inputs import InputRequired
from stratus.server.signature import ArgumentsError

OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (RateLimitedError, "rate_limited"),
    (CircuitOpenError, "circuit_open"),
    (RequestTimeoutError, "timeout"),
    (UnauthorizedError, "denied"),
    (ForbiddenError, "denied"),
    (ArgumentsError, "invalid_arguments"),
    (InputRequired, "input_required"),
)
"""The outcome label of a call that raised, by the first matching kind; anything else is `error`."""


def outcome_of(error: Exception) -> str:
    return next((label for kind, label in OUTCOMES if isinstance(error, kind)), "error")


def record(metrics: MetricsSink, method: str, item: str, outcome: str, started: float) -> None:
    """Count the call and its latency since `started` (`time.perf_counter`); an outcome but success is an error."""
    elapsed_ms = (time.perf_counter() - started) * 1000
    metrics.count("calls", method=method, item=item, outcome=outcome)
    metrics.latency("latency", elapsed_ms, method=method, item=item)
    if outcome != "success":
        metrics.count("errors", method=method, item=item, outcome=outcome)
