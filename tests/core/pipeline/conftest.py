from __future__ import annotations

from collections.abc import Callable

import pytest

from stratus.composition import build_pipeline
from stratus.metrics import LocalMetrics
from stratus.server.server import McpServer
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures.clocks import FakeClock, RecordedSleeps
from tests.fixtures.pipeline_harness import Harness


@pytest.fixture
def harness_for() -> Callable[[McpServer], Harness]:
    def build(server: McpServer) -> Harness:
        clock = FakeClock()
        stores = build_stores("memory://", StoreOptions(session_ttl_seconds=3600, clock=clock))
        metrics = LocalMetrics()
        sleeps = RecordedSleeps(clock)
        pipeline = build_pipeline(server.policy, stores, metrics, clock=clock, sleep=sleeps, rand=lambda: 0.5)
        return Harness(server, pipeline, metrics, clock, sleeps)

    return build
