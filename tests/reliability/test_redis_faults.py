"""Redis failing under Stratus: stopped, restarted empty, flushed, paused. The tests run their own redis-server
(a fresh port, no persistence) so they can break it; each checks what the client sees and what state survives.
The same faults under load are in test_redis_faults_under_load.py.
"""

from __future__ import annotations

import time

import httpx
import pytest

from stratus.transport.health import CENSUS_SECONDS
from tests.fixtures.clients import McpFactory
from tests.fixtures.fault_load import STORE_TIMEOUT, fault_server, redis_settings
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


@pytest.fixture
def census_clock() -> list[float]:
    """The clock of /health's census cache: a test moves it past the cache before asking after a change."""
    return [0.0]


@pytest.fixture
async def mcp(mcp_factory: McpFactory, own_redis: OwnRedis, census_clock: list[float]) -> McpHttp:
    return await mcp_factory(fault_server(), redis_settings(own_redis), monotonic=lambda: census_clock[0])


async def timed(request: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await request  # type: ignore[misc]
    return response, time.monotonic() - started


async def health(mcp: McpHttp, census_clock: list[float]) -> httpx.Response:
    """`/health` after any cached census has expired: what the store says now."""
    census_clock[0] += CENSUS_SECONDS
    return await mcp.http.get("/health")


async def test_a_stopped_redis_is_a_bounded_503_and_a_restarted_one_serves_again_without_old_state(
    mcp: McpHttp, own_redis: OwnRedis, census_clock: list[float]
) -> None:
    session = await mcp.initialize()
    assert (await session.request("tools/call", {"name": "limited"})).status_code == 200

    own_redis.stop()
    refused, waited = await timed(session.request("tools/call", {"name": "limited"}))
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == -31502
    assert waited < 5 * STORE_TIMEOUT + 1, waited  # bounded by the store timeout, never a hang
    without_store = await mcp.stateless("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert without_store.json()["result"]["structuredContent"] == {"result": 5}
    limits_fail_open = await mcp.stateless("tools/call", {"name": "limited"})
    assert limits_fail_open.json()["result"]["content"] == [{"type": "text", "text": "ok"}]
    unhealthy = await health(mcp, census_clock)
    assert unhealthy.status_code == 503 and unhealthy.json()["store"]["healthy"] is False

    own_redis.start()  # empty: no persistence
    lost = await session.request("tools/call", {"name": "limited"})
    assert lost.status_code == 404  # the session did not survive; the client initializes again
    fresh = await mcp.initialize()
    assert (await fresh.request("tools/call", {"name": "limited"})).status_code == 200
    assert (await health(mcp, census_clock)).json()["sessions"]["activeSessions"] == 1


async def test_a_flushed_redis_loses_sessions_and_limits_but_nothing_errors(
    mcp: McpHttp, own_redis: OwnRedis, census_clock: list[float]
) -> None:
    session = await mcp.initialize()
    own_redis.client().flushall()
    assert (await session.request("tools/list")).status_code == 404
    assert (await health(mcp, census_clock)).json()["sessions"]["activeSessions"] == 0
    again = await mcp.initialize()
    assert (await again.request("tools/call", {"name": "limited"})).status_code == 200


async def test_a_paused_redis_answers_503_within_the_store_timeout_then_recovers(
    mcp: McpHttp, own_redis: OwnRedis
) -> None:
    session = await mcp.initialize()
    admin = own_redis.client()
    admin.client_pause(int(3 * STORE_TIMEOUT * 1000), all=True)
    refused, waited = await timed(session.request("tools/list"))
    assert refused.status_code == 503
    assert STORE_TIMEOUT <= waited < 5 * STORE_TIMEOUT + 1, waited
    admin.client_unpause()  # on Redis 7.0 this waits in the pause too: it returns when the pause has ended
    assert (await session.request("tools/list")).status_code == 200
