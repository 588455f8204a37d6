"""Where the pipeline reports what happened: a small sink protocol with a local implementation.

The Lambda handlers plug in an EMF sink (Powertools Metrics); locally and in tests calls are counted in memory.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Protocol

logger = logging.getLogger("stratus.metrics")


class MetricsSink(Protocol):
    """Counters and latencies, dimensioned by a few low-cardinality names (method, item, outcome)."""

    def count(self, name: str, value: float = 1.0, **dimensions: str) -> None: ...

    def latency(self, name: str, milliseconds: float, **dimensions: str) -> None: ...


class LatencySummary:
    """How many data points, their sum and their maximum: constant memory however long the process serves."""

    __slots__ = ("count", "maximum", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.maximum = 0.0

    def add(self, milliseconds: float) -> None:
        self.count += 1
        self.total += milliseconds
        self.maximum = max(self.maximum, milliseconds)


class LocalMetrics:
    """Keeps totals and latency summaries in memory, one entry per metric and dimension set, and logs each
    count at DEBUG."""

    def __init__(self) -> None:
        self.counts: defaultdict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        self.latencies: defaultdict[tuple[str, tuple[tuple[str, str], ...]], LatencySummary] = defaultdict(
            LatencySummary
        )

    def count(self, name: str, value: float = 1.0, **dimensions: str) -> None:
        self.counts[(name, tuple(dimensions.items()))] += value
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("metric", extra={"metric": name, "value": value, "dimensions": dimensions})

    def latency(self, name: str, milliseconds: float, **dimensions: str) -> None:
        self.latencies[(name, tuple(dimensions.items()))].add(milliseconds)

    def total(self, name: str, **dimensions: str) -> float:
        """The sum of `name` over data points whose dimensions include `dimensions`."""
        wanted = set(dimensions.items())
        return sum(value for (metric, dims), value in self.counts.items() if metric == name and wanted <= set(dims))


def without_unlisted_item(dimensions: dict[str, str], tools: frozenset[str]) -> dict[str, str]:
    """`dimensions` without `item` unless it names one of `tools` (`*`: all): what a billed sink records."""
    item = dimensions.get("item")
    if item is None or item in tools or "*" in tools:
        return dimensions
    return {key: value for key, value in dimensions.items() if key != "item"}
