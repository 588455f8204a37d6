from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.metrics import LocalMetrics
from core.pipeline.pipeline import Pipeline
from core.request.http import HttpRequest
from core.server.context import Context
from core.server.server import McpServer
from core.stores.factory import Stores
from core.stores.memory import MemoryBreakerStore, MemoryRateLimitStore, MemorySessionStore


@dataclass
class FakeClock:
    """A clock tests move by hand; stores and deadlines read it instead of the real time."""

    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class RecordedSleeps:
    """Stands in for asyncio.sleep in retry loops: records each delay and advances the clock instead of waiting."""

    clock: FakeClock
    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.clock.advance(seconds)


@dataclass
class Harness:
    server: McpServer
    pipeline: Pipeline
    metrics: LocalMetrics
    clock: FakeClock
    sleeps: RecordedSleeps

    def context(self, tool: str, *, session_id: str | None = None, lambda_context: object = None) -> Context:
        """The context the dispatcher builds for a call of `tool`: the item named, the deadline set."""
        http = HttpRequest("POST", "/mcp", {}, lambda_context)
        deadline = self.pipeline.deadline_for(http, self.server.tools[tool].policy.timeout)
        return Context(
            request_id=1,
            method="tools/call",
            protocol_version="2026-07-28",
            session_id=session_id,
            request=http,
            item=tool,
            deadline=deadline,
        )

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        lambda_context: object = None,
    ) -> dict[str, Any]:
        context = self.context(tool, session_id=session_id, lambda_context=lambda_context)
        return await self.pipeline.call_tool(self.server.tools[tool], arguments or {}, context)


@pytest.fixture
def harness_for() -> Callable[[McpServer], Harness]:
    def build(server: McpServer) -> Harness:
        clock = FakeClock()
        stores = Stores(
            sessions=MemorySessionStore(clock=clock),
            rate_limits=MemoryRateLimitStore(clock=clock),
            breakers=MemoryBreakerStore(clock=clock),
        )
        metrics = LocalMetrics()
        sleeps = RecordedSleeps(clock)
        pipeline = Pipeline(server.policy, stores, metrics, clock=clock, sleep=sleeps, rand=lambda: 0.5)
        return Harness(server, pipeline, metrics, clock, sleeps)

    return build
