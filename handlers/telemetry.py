"""Telemetry for a Lambda deployment: where metrics go and how logs look, chosen by `STRATUS_TELEMETRY`.

local       metrics counted in memory, logging left as it is (tests, `stratus serve`)
emf         JSON logs with correlation ids; metrics as CloudWatch EMF lines, flushed once per invocation
powertools  the same through Powertools for AWS Lambda (imported only in this mode), shared with the tools: a
            tool's own `Logger()` lines carry the correlation fields, its `Metrics()` data points are flushed
            after each invocation, in the namespace and with the `service` dimension of Stratus's own metrics
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from stratus import Settings
from stratus.metrics import LocalMetrics, MetricsSink, without_unlisted_item

Flush = Callable[[], None]


def _nothing() -> None:
    pass


class PowertoolsMetrics:
    """A MetricsSink over Powertools' `single_metric`: each data point is one EMF line with its own dimensions."""

    def __init__(self, namespace: str, service: str, tools: Iterable[str] = ()) -> None:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        self.tools = frozenset(tools)

        self._single_metric: Any = single_metric
        self._count, self._milliseconds = MetricUnit.Count, MetricUnit.Milliseconds
        self.namespace = namespace
        self.service = service

    def _emit(self, name: str, unit: Any, value: float, dimensions: dict[str, str]) -> None:
        with self._single_metric(name=name, unit=unit, value=value, namespace=self.namespace) as metric:
            metric.add_dimension(name="service", value=self.service)
            for key, dimension in without_unlisted_item(dimensions, self.tools).items():
                metric.add_dimension(name=key, value=dimension)

    def count(self, name: str, value: float = 1.0, **dimensions: str) -> None:
        self._emit(name, self._count, value, dimensions)

    def latency(self, name: str, milliseconds: float, **dimensions: str) -> None:
        self._emit(name, self._milliseconds, milliseconds, dimensions)


def build_telemetry(settings: Settings, service: str) -> tuple[MetricsSink, Flush]:
    """The metrics sink for `settings.telemetry` and what to call at the end of each invocation: its flush, and the
    spans' when tracing is on (`stratus.tracing`)."""
    metrics, flush = _metrics(settings, service)
    if settings.tracing == "off":
        return metrics, flush
    from stratus.tracing import tracing_for

    spans = tracing_for(settings.tracing)

    def flush_both() -> None:
        flush()
        spans.flush()

    return metrics, flush_both


def _metrics(settings: Settings, service: str) -> tuple[MetricsSink, Flush]:
    if settings.telemetry == "local":
        return LocalMetrics(), _nothing
    from stratus.observability import EmfMetrics, JsonFormatter, configure_logging

    if settings.log_level.upper() != "DEBUG":  # the metrics count every call; a billed log line for each adds nothing
        logging.getLogger("stratus.calls").setLevel(logging.WARNING)
    if settings.telemetry == "emf":
        configure_logging(JsonFormatter(service), settings.log_level)
        emf = EmfMetrics(settings.metrics_namespace, service, tools=settings.metrics_tools)
        return emf, emf.flush
    return _powertools(settings, service)


class WrittenByPowertools(logging.Filter):
    """On a root handler: drops a record that a Powertools `Logger` has already written through its own handler.

    A `Logger()` writes to stdout through a handler on the standard logger named for its service, and its records
    still propagate to the root logger. Powertools stops the root's handlers writing them again with a filter, but
    only on the handlers the root has when the `Logger` is made: under the Web Adapter (a plain Python process) the
    tool's module makes its `Logger` before `configure_logging` gives the root its handler, and each line was
    written twice, to stdout and to stderr. This filter goes on the root's handlers whenever they were made."""

    def filter(self, record: logging.LogRecord) -> bool:
        std: logging.Logger | None = logging.getLogger(record.name)
        while std is not None:
            if getattr(std, "powertools_handler", None) in std.handlers:
                return False
            if not std.propagate:
                return True
            std = std.parent
        return True


def annotate_tracer_subsegments() -> None:
    """When the served code made a Powertools `Tracer` (which loads the X-Ray SDK), every subsegment opened during a
    call (a tool's `@tracer.capture_method`, and any inside it) gets the call's correlation fields as annotations,
    which X-Ray indexes for search: `annotation.item = "place_order"`. Nothing is imported here: without a
    `Tracer` made before the handler is built (at module level, the ordinary way), the X-Ray SDK stays unloaded.

    The hook is the recorder's context (`xray_recorder.configure(context=...)`), through which the SDK puts every
    subsegment it begins: https://docs.aws.amazon.com/xray/latest/devguide/xray-sdk-python-configuration.html"""
    core = sys.modules.get("aws_xray_sdk.core")
    if core is None:
        return
    recorder: Any = core.xray_recorder
    current = recorder.context
    if getattr(current, "annotates_correlation", False):
        return
    from stratus.observability import correlation_fields

    class AnnotatingContext(type(current)):  # type: ignore[misc]
        annotates_correlation = True

        def put_subsegment(self, subsegment: Any) -> None:
            super().put_subsegment(subsegment)
            for key, value in correlation_fields().items():
                subsegment.put_annotation(key, value)

    context = AnnotatingContext()
    context.context_missing = current.context_missing
    recorder.configure(context=context)


def _powertools(settings: Settings, service: str) -> tuple[MetricsSink, Flush]:
    """Powertools as a tool uses it: `Logger()` and `Metrics()` with no arguments resolve the service and the
    namespace from POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE, so Stratus reads those when set and
    sets them otherwise (the server's name; STRATUS_METRICS_NAMESPACE): one service, one namespace for both."""
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    from stratus.observability import CorrelationFilter, configure_logging

    service = os.environ.setdefault("POWERTOOLS_SERVICE_NAME", service)
    namespace = os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", settings.metrics_namespace)
    configure_logging(LambdaPowertoolsFormatter(service=service), settings.log_level)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, WrittenByPowertools) for existing in handler.filters):
            handler.addFilter(WrittenByPowertools())
    # A `Logger()` writes through the handlers of the standard logger named for its service (a child logger's
    # records reach them by propagation): correlation fields are added there, for the service's logger and for
    # any Powertools logger the server's module made before this ran (one made later shares the service's).
    Logger(service=service)
    loggers = [logging.getLogger(service), *logging.Logger.manager.loggerDict.values()]
    for handler in {handler for std in loggers if isinstance(std, logging.Logger) for handler in std.handlers}:
        powertools = isinstance(handler.formatter, LambdaPowertoolsFormatter)
        if powertools and not any(isinstance(existing, CorrelationFilter) for existing in handler.filters):
            handler.addFilter(CorrelationFilter())
    annotate_tracer_subsegments()
    shared = Metrics(service=service, namespace=namespace)  # Metrics instances share one set of data points

    def flush() -> None:
        if shared.metric_set:
            shared.flush_metrics()

    return PowertoolsMetrics(namespace, service, settings.metrics_tools), flush
