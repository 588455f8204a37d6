"""Pipeline-overhead child of bench/run.py: `python bench/pipeline.py CALLS`.

Times, in one process and on the in-memory store, a warm `tools/call` of `add(a, b)` three ways: the tool alone
(validate, run, shape the result: what any server must do), through the pipeline with nothing configured, and
through the pipeline with a rate limit and a circuit breaker. Prints one Python literal of medians (microseconds).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from stratus import Context, McpServer
from stratus.composition import build_pipeline
from stratus.metrics import LocalMetrics
from stratus.pipeline.pipeline import Pipeline
from stratus.request.http import HttpRequest
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores

ARGUMENTS = {"a": 1, "b": 2}
HTTP = HttpRequest("POST", "/mcp", {}, None)


def server(*, limited: bool) -> McpServer:
    built = McpServer("add", breaker=BreakerPolicy() if limited else None)

    @built.tool(rate_limit=RateLimit(rate=1e9, burst=1e9) if limited else None)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return built


def context() -> Context:
    return Context(request_id=1, method="tools/call", protocol_version="2026-07-28", request=HTTP, item="add")


async def median_us(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(max(200, calls // 10)):
        await call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await call()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(samples)


async def main(calls: int) -> dict[str, float]:
    bare = server(limited=False)
    tool = bare.tools["add"]

    async def direct() -> Any:
        ctx = context()
        return tool.result(await tool.run(tool.validate(ARGUMENTS), ctx))

    figures = {"direct_us": await median_us(direct, calls)}
    for label, built in (("pipeline_us", bare), ("limited_us", server(limited=True))):
        pipeline = build_pipeline(
            built.policy, build_stores("memory://", StoreOptions(session_ttl_seconds=60)), LocalMetrics()
        )
        target = built.tools["add"]

        async def through(pipeline: Pipeline = pipeline, target: Any = target) -> Any:
            ctx = Context(
                request_id=1,
                method="tools/call",
                protocol_version="2026-07-28",
                request=HTTP,
                item="add",
                deadline=pipeline.deadline_for(HTTP, target.policy.timeout),
            )
            return await pipeline.call_tool(target, ARGUMENTS, ctx)

        figures[label] = await median_us(through, calls)
    return figures


if __name__ == "__main__":
    print(repr(asyncio.run(main(int(sys.argv[1])))))
