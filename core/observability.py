"""Structured logs and CloudWatch metrics for Lambda, with nothing imported at cold start.

- `CorrelationFilter` adds the correlation ids of the call being served (Lambda request id, MCP request id,
  session id, tool / resource / prompt) to every record; `JsonFormatter` writes one JSON object per record.
  Headers, tokens and raw events are never part of a record: only the message and explicit `extra` fields are.
- `EmfMetrics` is a `MetricsSink` that writes CloudWatch Embedded Metric Format lines to stdout when flushed
  (once per invocation), which CloudWatch turns into metrics without an API call.

Powertools for AWS Lambda provides both, at about 33 ms of CPU per cold start (its package imports the logger,
metrics and tracer together); `STRATUS_TELEMETRY=powertools` uses it for teams that already standardize on it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO, Any

from stratus.json_text import compact
from stratus.metrics import without_unlisted_item
from stratus.pipeline.current import lambda_request_id, peek_context

_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_LATENCY_METRICS = frozenset({"latency"})
_SLOT = r'"\\u0000(\d+)\\u0000"|\x00(0)\x00'
"""A value's placeholder in a rendered template (a string of its number between NULs, as JSON writes it), or the
timestamp's (0, as written into the text); a string until the first flush of a new shape uses it (`re` compiles
and caches it then): compiling a pattern costs a cold start."""
_MAX_TEMPLATES = 256


class CorrelationFilter(logging.Filter):
    """Adds the correlation ids of the call being served to every record: Lambda request id, MCP request id and
    method, session id, the tool / resource / prompt, and the principal's subject. A field the record already
    has (an explicit `extra`) is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in correlation_fields().items():
            if name not in record.__dict__:
                setattr(record, name, value)
        return True


def correlation_fields() -> dict[str, Any]:
    """The correlation ids of the call being served (none outside a call): `lambda_request_id`, `mcp_request_id`,
    `mcp_method`, `session_id`, `item` (the tool, resource or prompt) and `principal` (the subject)."""
    fields: dict[str, Any] = {}
    request_id = lambda_request_id.get()
    if request_id:
        fields["lambda_request_id"] = request_id
    context = peek_context()
    if context is not None:
        fields["mcp_request_id"] = context.request_id
        fields["mcp_method"] = context.method
        if context.session_id:
            fields["session_id"] = context.session_id
        if context.item:
            fields["item"] = context.item
        if context.user is not None:
            fields["principal"] = context.user.subject
    return fields


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, service, the record's extra fields, and the
    exception's type and traceback when there is one. Only what the code logged explicitly is written."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": round(record.created * 1000),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "service": self.service,
        }
        entry.update(
            (key, value) for key, value in vars(record).items() if key not in _STANDARD_ATTRIBUTES and key[0] != "_"
        )
        if record.exc_info and record.exc_info[0] is not None:
            entry["exception_type"] = record.exc_info[0].__name__
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, separators=(",", ":"))


class ConsoleFormatter(logging.Formatter):
    """One line per record for a terminal, as uvicorn writes its own: `LEVEL:    logger: message`, then the fields
    the code logged with it (an error's reference, a tool's log fields). Only what the code logged explicitly."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(
            f"{key}={value}"
            for key, value in vars(record).items()
            if key not in _STANDARD_ATTRIBUTES and key[0] != "_" and key != "color_message"
        )
        line = f"{record.levelname + ':':<9} {record.name}: {record.getMessage()}" + (f" ({fields})" if fields else "")
        if record.exc_info and record.exc_info[0] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(formatter: logging.Formatter, level: str) -> None:
    """Format every root handler's records with `formatter` and correlation ids (the Lambda runtime installs one
    handler; without any, log to stderr), and set the level of Stratus's loggers."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
    for handler in root.handlers:
        handler.setFormatter(formatter)
        if not any(isinstance(existing, CorrelationFilter) for existing in handler.filters):
            handler.addFilter(CorrelationFilter())
    logging.getLogger("stratus").setLevel(level.upper())


Dimensions = tuple[tuple[str, str], ...]
Points = dict[str, list[float]]


class _Document:
    """The data points one EMF document carries: dimension sets that agree on every value, no metric twice."""

    __slots__ = ("groups", "names", "values")

    def __init__(self, dimensions: Dimensions, metrics: Points) -> None:
        self.groups = [(dimensions, metrics)]
        self.values = dict(dimensions)
        self.names = set(metrics)

    def takes(self, dimensions: Dimensions, metrics: Points) -> bool:
        """Add the group if it fits; whether it did."""
        values = self.values
        if any(values.get(key, value) != value for key, value in dimensions) or not self.names.isdisjoint(metrics):
            return False
        self.groups.append((dimensions, metrics))
        values.update(dimensions)
        self.names.update(metrics)
        return True


class EmfMetrics:
    """Collects data points during an invocation; `flush` writes them as Embedded Metric Format lines."""

    def __init__(
        self,
        namespace: str,
        service: str,
        *,
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.time,
        tools: Iterable[str] = (),
    ) -> None:
        self.namespace = namespace
        self.service = service
        self.tools = frozenset(tools)
        """Whose metrics keep the `item` dimension (STRATUS_METRICS_TOOLS)."""
        self._stream = stream
        self._clock = clock
        self._points: dict[Dimensions, Points] = {}
        self._shape: list[tuple[Dimensions, str]] = []
        """Each (dimensions, metric) recorded since the last flush, in the order first recorded."""
        self._values: list[list[float]] = []
        """Their values, in the same order."""
        self._templates: dict[tuple[tuple[Dimensions, str], ...], tuple[str, tuple[int, ...] | None]] = {}

    def count(self, name: str, value: float = 1.0, **dimensions: str) -> None:
        self._record(name, value, dimensions)

    def latency(self, name: str, milliseconds: float, **dimensions: str) -> None:
        self._record(name, milliseconds, dimensions)

    def _record(self, name: str, value: float, dimensions: dict[str, str]) -> None:
        key = tuple(sorted(without_unlisted_item(dimensions, self.tools).items()))
        metrics = self._points.get(key)
        if metrics is None:
            metrics = self._points[key] = {}
        elif name in metrics:
            metrics[name].append(value)
            return
        values = metrics[name] = [value]
        self._shape.append((key, name))
        self._values.append(values)

    def flush(self) -> None:
        """Write the invocation's data points as few EMF documents as their dimensions allow (one, unless two data
        points disagree on a dimension's value or share a metric's name), and forget them.

        A document carries one metric directive per dimension set: CloudWatch reads each directive's dimensions and
        metrics from the document's root, which holds every set's values
        (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
        The text of a shape already seen (the same dimensions and metrics' names) is reused, its values filled in."""
        if not self._points:
            return
        shape = tuple(self._shape)
        template = self._templates.get(shape)
        if template is None:
            if len(self._templates) >= _MAX_TEMPLATES:
                self._templates.clear()
            template = self._templates[shape] = self._template()
        text, order = template
        fields = [round(self._clock() * 1000), *map(_values_text, self._values)]
        self._points, self._shape, self._values = {}, [], []
        stream = self._stream or sys.stdout
        stream.write(text % (tuple(fields) if order is None else tuple([fields[place] for place in order])))
        stream.flush()

    def _template(self) -> tuple[str, tuple[int, ...] | None]:
        """The text of a flush of this shape with a `%s` for the timestamp and each value, and the order they come
        in (the timestamp 0, then each value by its place in `_values`, from 1; None: that order). The documents
        are rendered once with a numbered placeholder for each, then cut at them: the text depends only on the
        dimensions and the metrics' names."""
        placeholders: dict[Dimensions, Points] = {}
        for number, (dimensions, name) in enumerate(self._shape, 1):
            placeholder: Any = f"\x00{number}\x00"
            placeholders.setdefault(dimensions, {})[name] = [placeholder]
        documents: list[_Document] = []
        for dimensions, metrics in placeholders.items():
            if not any(document.takes(dimensions, metrics) for document in documents):
                documents.append(_Document(dimensions, metrics))
        text = "".join(self._render(document, "\x000\x00") for document in documents)
        cut = re.split(_SLOT, text.replace("%", "%%"))
        order = tuple(int(first or second) for first, second in zip(cut[1::3], cut[2::3], strict=True))
        literal = "%s".join(cut[::3])
        return literal, None if order == tuple(range(len(order))) else order

    def _render(self, document: _Document, timestamp: int | str) -> str:
        directives = compact(
            [
                {
                    "Namespace": self.namespace,
                    "Dimensions": [["service", *(key for key, _ in dimensions)]],
                    "Metrics": [
                        {"Name": name, "Unit": "Milliseconds" if name in _LATENCY_METRICS else "Count"}
                        for name in metrics
                    ],
                }
                for dimensions, metrics in document.groups
            ]
        )
        root: dict[str, Any] = {"service": self.service, **document.values}
        for _, metrics in document.groups:
            for name, values in metrics.items():
                root[name] = values if len(values) > 1 else values[0]
        return f'{{"_aws":{{"Timestamp":{timestamp},"CloudWatchMetrics":{directives}}},{compact(root)[1:]}\n'


def _values_text(values: list[float]) -> str:
    """A metric's values as JSON: one value alone, several as a list."""
    if len(values) == 1:
        return _number(values[0])
    return "[" + ",".join(map(_number, values)) + "]"


def _number(value: float) -> str:
    if (type(value) is float and value - value == 0) or type(value) is int:  # finite: written as JSON writes it
        return repr(value)
    return compact(value)
