"""Servers the multi-process tests run with `stratus serve --app tests.apps:shared`."""

from __future__ import annotations

from core import McpServer, ToolError
from core.resilience.breaker import BreakerPolicy
from core.resilience.limiter import RateLimit

LIMIT = 20

shared = McpServer("shared", "1.0.0")


@shared.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@shared.tool(rate_limit=RateLimit(rate=0.001, burst=LIMIT))
def limited() -> str:
    """Allowed LIMIT times across every process, then refused for a long while."""
    return "ok"


@shared.tool(breaker=BreakerPolicy(failure_threshold=3, window_seconds=300, cooldown_seconds=300))
def flaky() -> str:
    """Always fails, as a transient error: three failures open its breaker everywhere."""
    raise ToolError("upstream unavailable", retryable=True)
