"""Telemetry for a Lambda deployment: where metrics go and how logs look, chosen by `STRATUS_TELEMETRY`.

local       metrics counted in memory, logging left as it is (tests, `stratus serve`)
emf         JSON logs with correlation ids; metrics as CloudWatch EMF lines, flushed once per invocation
powertools  the same through Powertools for AWS Lambda (imported only in this mode)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratus import Settings
from stratus.metrics import LocalMetrics, MetricsSink

Flush = Callable[[], None]


def _nothing() -> None:
    pass


class PowertoolsMetrics:
    """A MetricsSink over Powertools' `single_metric`: each data point is one EMF line with its own dimensions."""

    def __init__(self, namespace: str, service: str) -> None:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        self._single_metric: Any = single_metric
        self._count, self._milliseconds = MetricUnit.Count, MetricUnit.Milliseconds
        self.namespace = namespace
        self.service = service

    def _emit(self, name: str, unit: Any, value: float, dimensions: dict[str, str]) -> None:
        with self._single_metric(name=name, unit=unit, value=value, namespace=self.namespace) as metric:
            metric.add_dimension(name="service", value=self.service)
            for key, dimension in dimensions.items():
                metric.add_dimension(name=key, value=dimension)

    def count(self, name: str, value: float = 1.0, **dimensions: str) -> None:
        self._emit(name, self._count, value, dimensions)

    def latency(self, name: str, milliseconds: float, **dimensions: str) -> None:
        self._emit(name, self._milliseconds, milliseconds, dimensions)


def build_telemetry(settings: Settings, service: str) -> tuple[MetricsSink, Flush]:
    """The metrics sink for `settings.telemetry` and what to call at the end of each invocation."""
    if settings.telemetry == "local":
        return LocalMetrics(), _nothing
    from stratus.observability import EmfMetrics, JsonFormatter, configure_logging

    if settings.telemetry == "emf":
        configure_logging(JsonFormatter(service), settings.log_level)
        emf = EmfMetrics(settings.metrics_namespace, service)
        return emf, emf.flush
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    configure_logging(LambdaPowertoolsFormatter(service=service), settings.log_level)
    return PowertoolsMetrics(settings.metrics_namespace, service), _nothing
