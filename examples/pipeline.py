"""The README's pipeline example: limits, a timeout, retries and a circuit breaker, declared on server and tool."""

from __future__ import annotations

from stratus import BreakerPolicy, McpServer, RateLimit, RateLimits, RetryPolicy, ToolError

server = McpServer(
    "inventory",
    rate_limits=RateLimits(per_principal=RateLimit.per_minute(120)),
    timeout=20.0,
    retry=RetryPolicy(attempts=3),
    breaker=BreakerPolicy(failure_threshold=5, window_seconds=60, cooldown_seconds=30),
)
STOCK = {"sku-1": 12}


@server.tool(
    scopes=["stock:read"],
    rate_limit=RateLimit.per_second(5),
    timeout=2.0,
    annotations={"readOnlyHint": True, "idempotentHint": True},
)
async def stock(sku: str) -> int:
    """Units in stock for a SKU."""
    if sku not in STOCK:
        raise ToolError(f"unknown SKU {sku}")
    return STOCK[sku]
