"""Redis failing under Stratus: stopped, restarted empty, flushed, paused. The tests run their own redis-server
(a fresh port, no persistence) so they can break it; each checks what the client sees and what state survives.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import httpx
import pytest

from core import McpServer, Settings, build_app
from core.resilience.limiter import RateLimit
from tests.redis_server import OwnRedis
from tests.servers import LoopWatch, uvicorn_serving
from tests.wire import LegacySession, McpHttp, initialize_message

pytestmark = pytest.mark.anyio
logger = logging.getLogger("stratus.tests.faults")
STORE_TIMEOUT = 0.5


def fault_server() -> McpServer:
    built = McpServer("faults", "1.0.0")

    @built.tool()
    def add(a: int, b: int) -> int:
        """Needs no store at 2026-07-28."""
        return a + b

    @built.tool(rate_limit=RateLimit(rate=1000, burst=1000))
    def limited() -> str:
        """Asks the store for its rate limit on every call."""
        return "ok"

    return built


@pytest.fixture
async def mcp(own_redis: OwnRedis) -> AsyncIterator[McpHttp]:
    settings = Settings(store=own_redis.url, secret_key="k", store_timeout_seconds=STORE_TIMEOUT, max_sessions=0)
    app = build_app(fault_server(), settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield McpHttp(http)
    await app.shutdown()


async def timed(request: object) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await request  # type: ignore[misc]
    return response, time.monotonic() - started


async def test_a_stopped_redis_is_a_bounded_503_and_a_restarted_one_serves_again_without_old_state(
    mcp: McpHttp, own_redis: OwnRedis
) -> None:
    session = await mcp.initialize()
    assert (await session.request("tools/call", {"name": "limited"})).status_code == 200

    own_redis.stop()
    refused, waited = await timed(session.request("tools/call", {"name": "limited"}))
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == -31502
    assert waited < 5 * STORE_TIMEOUT + 1, waited  # bounded by the store timeout, never a hang
    without_store = await mcp.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert without_store.json()["result"]["structuredContent"] == {"result": 5}
    limits_fail_open = await mcp.modern("tools/call", {"name": "limited"})
    assert limits_fail_open.json()["result"]["content"] == [{"type": "text", "text": "ok"}]
    health = await mcp.http.get("/health")
    assert health.status_code == 503 and health.json()["store"]["healthy"] is False

    own_redis.start()  # empty: no persistence
    lost = await session.request("tools/call", {"name": "limited"})
    assert lost.status_code == 404  # the session did not survive; the client initializes again
    fresh = await mcp.initialize()
    assert (await fresh.request("tools/call", {"name": "limited"})).status_code == 200
    assert (await mcp.http.get("/health")).json()["sessions"]["activeSessions"] == 1


async def test_a_flushed_redis_loses_sessions_and_limits_but_nothing_errors(mcp: McpHttp, own_redis: OwnRedis) -> None:
    session = await mcp.initialize()
    own_redis.client().flushall()
    assert (await session.request("tools/list")).status_code == 404
    assert (await mcp.http.get("/health")).json()["sessions"]["activeSessions"] == 0
    again = await mcp.initialize()
    assert (await again.request("tools/call", {"name": "limited"})).status_code == 200


async def test_a_paused_redis_answers_503_within_the_store_timeout_then_recovers(
    mcp: McpHttp, own_redis: OwnRedis
) -> None:
    session = await mcp.initialize()
    own_redis.client().client_pause(3000, all=True)
    refused, waited = await timed(session.request("tools/list"))
    assert refused.status_code == 503
    assert STORE_TIMEOUT <= waited < 5 * STORE_TIMEOUT + 1, waited
    own_redis.client().client_unpause()
    assert (await session.request("tools/list")).status_code == 200


@dataclass
class Outage:
    """What eight clients saw while Redis went away and came back under their load."""

    statuses: Counter[int] = field(default_factory=Counter)
    slowest: float = 0.0
    successes: int = 0
    restarted_at: float | None = None
    recovered_after: float | None = None
    enough_load: asyncio.Event = field(default_factory=asyncio.Event)
    refused: asyncio.Event = field(default_factory=asyncio.Event)
    recovered: asyncio.Event = field(default_factory=asyncio.Event)


async def client_under_outage(mcp: McpHttp, outage: Outage, until: float) -> None:
    """Calls in a session; a lost session (404) is opened again; a refused one (503) is retried."""
    session: LegacySession | None = None
    while time.monotonic() < until and not outage.recovered.is_set():
        started = time.monotonic()
        if session is None:
            opened = await mcp.post(initialize_message())
            response = opened
            if opened.status_code == 200:
                session = LegacySession(mcp, opened.headers["mcp-session-id"], "2025-11-25")
        else:
            response = await mcp.post(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "limited"}}, session.headers
            )
            if response.status_code == 404:
                session = None
        outage.slowest = max(outage.slowest, time.monotonic() - started)
        outage.statuses[response.status_code] += 1
        if response.status_code == 503:
            outage.refused.set()
        elif response.status_code == 200:
            outage.successes += 1
            if outage.successes >= 200:
                outage.enough_load.set()
            if outage.restarted_at is not None and outage.recovered_after is None:
                outage.recovered_after = time.monotonic() - outage.restarted_at
                outage.recovered.set()


async def test_a_redis_restart_under_load_costs_only_bounded_503s_and_lost_sessions(own_redis: OwnRedis) -> None:
    settings = Settings(store=own_redis.url, secret_key="k", store_timeout_seconds=STORE_TIMEOUT, max_sessions=0)
    app = build_app(fault_server(), settings)
    watched = LoopWatch(app)
    outage = Outage()
    with uvicorn_serving(watched) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            until = time.monotonic() + 30
            load = asyncio.gather(*(client_under_outage(McpHttp(http), outage, until) for _ in range(8)))
            with anyio.fail_after(30):
                await outage.enough_load.wait()
                await asyncio.to_thread(own_redis.stop)
                await outage.refused.wait()
                await asyncio.to_thread(own_redis.start)
                outage.restarted_at = time.monotonic()
                await load
        watched.run(app.shutdown())  # the store's connections close on the loop that opened them
    logger.info(
        f"outage under load: {dict(outage.statuses)}, slowest {outage.slowest * 1000:.0f} ms, first success "
        f"{(outage.recovered_after or 0) * 1000:.0f} ms after Redis answered again"
    )
    assert outage.recovered_after is not None, outage.statuses
    assert set(outage.statuses) <= {200, 404, 503}, outage.statuses  # never another error
    assert outage.statuses[503] > 0 and outage.statuses[404] > 0  # the outage was seen, the sessions were lost
    assert outage.slowest < 5 * STORE_TIMEOUT + 1, outage.slowest  # no request hung
    assert outage.recovered_after < 5.0, outage.recovered_after
