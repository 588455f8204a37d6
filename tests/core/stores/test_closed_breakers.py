"""A breaker seen closed is taken as closed for CLOSED_SECONDS without asking the store, on every backend: the
container whose calls open it refuses its next call at once, another container within CLOSED_SECONDS (its stated
bound) and not later; the container asks the store nothing about the breaker meanwhile."""

from __future__ import annotations

import pytest

from stratus import McpServer, ToolError
from stratus.composition import build_pipeline
from stratus.errors import CircuitOpenError
from stratus.metrics import LocalMetrics
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.closed_breakers import CLOSED_SECONDS
from stratus.stores.base import CallGate
from stratus.stores.records import CallAdmission, CallChecks
from tests.fixtures.clocks import RecordedSleeps
from tests.fixtures.pipeline_harness import Harness
from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio
POLICY = BreakerPolicy(failure_threshold=2, window_seconds=60.0, cooldown_seconds=30.0)


class AskedGate:
    """The backend's own gate, keeping the checks each call asked it."""

    def __init__(self, gate: CallGate) -> None:
        self.gate = gate
        self.asked: list[CallChecks] = []

    async def admit(self, checks: CallChecks) -> CallAdmission:
        self.asked.append(checks)
        return await self.gate.admit(checks)


def container(backend: Backend, failing: list[bool]) -> tuple[Harness, AskedGate]:
    """One container's pipeline over the shared backend, on the backend's clock, and what it asked the gate."""
    server = McpServer("breaker", breaker=POLICY)

    @server.tool()
    def upstream() -> str:
        if failing[0]:
            raise ToolError("upstream unavailable", retryable=True)
        return "ok"

    gate = AskedGate(backend.stores.gate)
    metrics = LocalMetrics()
    pipeline = build_pipeline(server.policy, backend.stores.replace(gate=gate), metrics, clock=backend.clock)
    return Harness(server, pipeline, metrics, backend.clock, RecordedSleeps(backend.clock)), gate


async def test_a_breaker_opened_elsewhere_refuses_here_at_most_closed_seconds_later(backend: Backend) -> None:
    failing = [False]
    (here, asked), (there, _) = container(backend, failing), container(backend, failing)
    assert (await here.call("upstream"))["content"][0]["text"] == "ok"  # here sees the breaker closed
    assert [checks.breaker for checks in asked.asked] == [("tool:upstream", POLICY)]

    failing[0] = True
    for _ in range(POLICY.failure_threshold):
        assert (await there.call("upstream"))["isError"] is True
    with pytest.raises(CircuitOpenError):  # the container that opened it refuses its next call at once
        await there.call("upstream")

    failing[0] = False
    backend.clock.advance(CLOSED_SECONDS - 0.5)
    assert (await here.call("upstream"))["content"][0]["text"] == "ok"  # within the bound: still taken as closed
    assert len(asked.asked) == 1  # and the store was not asked (no limits, no session: nothing else to ask)
    backend.clock.advance(0.5)
    with pytest.raises(CircuitOpenError):  # and no later
        await here.call("upstream")


async def test_a_container_that_records_a_failure_asks_the_store_again(backend: Backend) -> None:
    failing = [False]
    here, _ = container(backend, failing)
    await here.call("upstream")
    failing[0] = True
    for _ in range(POLICY.failure_threshold):
        assert (await here.call("upstream"))["isError"] is True
    with pytest.raises(CircuitOpenError):
        await here.call("upstream")
