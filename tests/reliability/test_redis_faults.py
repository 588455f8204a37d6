"""Redis failing under Stratus: stopped, restarted empty, flushed, paused. The tests run their own redis-server
(a fresh port, no persistence) so they can break it; each checks what the client sees and what state survives.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import redis

from core import McpServer, Settings, build_app
from core.resilience.limiter import RateLimit
from tests.wire import McpHttp

pytestmark = pytest.mark.anyio
STORE_TIMEOUT = 0.5
START_TIMEOUT_SECONDS = 10.0


class OwnRedis:
    """A redis-server this test started, on its own port, without persistence: stop and start it at will."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)  # polling a process start-up, bounded by the deadline
        client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port)


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


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
