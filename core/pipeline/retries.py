"""Retry: a call whose handler raised a transient error (`retryable = True`) runs again after a full-jitter delay,
within its attempts and its deadline. A policy declared on the tool is honoured as declared; the server-wide one
applies to idempotent tools only."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from stratus.metrics import MetricsSink
from stratus.resilience.backoff import full_jitter
from stratus.server.context import Context
from stratus.server.policy import RetryPolicy, ServerPolicy
from stratus.server.tools import Tool
from stratus.tracing import child_span

Sleep = Callable[[float], Awaitable[None]]


def is_retryable(error: BaseException) -> bool:
    """Whether the error is marked transient (`retryable = True`, e.g. `ToolError(..., retryable=True)`)."""
    return getattr(error, "retryable", False) is True


class Retries:
    """Runs a tool's handler with its retry policy; the clock of its delays is the injected `sleep`."""

    def __init__(
        self,
        policy: ServerPolicy,
        metrics: MetricsSink,
        *,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.policy = policy
        self.metrics = metrics
        self.sleep = sleep
        self.rand = rand

    def policy_for(self, tool: Tool) -> RetryPolicy | None:
        return tool.policy.retry or (self.policy.retry if tool.idempotent else None)

    async def run(self, tool: Tool, context: Context, kwargs: dict[str, Any]) -> Any:
        policy = self.policy_for(tool)
        if policy is None:
            return await tool.run(kwargs, context)
        attempt = 0
        while True:
            try:
                return await tool.run(kwargs, context)
            except Exception as error:
                attempt += 1
                if not is_retryable(error) or attempt >= policy.attempts:
                    raise
                delay = full_jitter(attempt - 1, base=policy.base_delay, cap=policy.max_delay, rand=self.rand)
                if context.deadline is not None and not context.deadline.allows(delay):
                    raise
                self.metrics.count("retries", item=tool.name)
                with child_span("retry_wait", tool.name):
                    await self.sleep(delay)
