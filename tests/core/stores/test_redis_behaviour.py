"""What the Redis backend promises beyond the shared contract: one round trip on the hot path of a legacy
tools/call, and bounded, documented failures when Redis is gone."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from redis.asyncio import Connection, Redis

from stratus import McpServer, Settings
from stratus.errors import StoreUnavailableError
from stratus.metrics import LocalMetrics
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from stratus.stores.records import SessionRecord
from stratus.stores.redis.builder import redis_stores
from stratus.stores.redis.client import MAX_CONNECTIONS, redis_client
from stratus.stores.redis.lua import SESSION_CREATE
from stratus.transport.app import build_app
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.store_backends import REDIS_URL
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


class CountingConnection(Connection):
    """A real redis-py connection that counts the writes it sends: one write is one round trip."""

    writes = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.writes += 1
        await super().send_packed_command(command, check_health)


def limited_server() -> McpServer:
    server = McpServer("redis-limits", breaker=BreakerPolicy())

    @server.tool(rate_limit=RateLimit(rate=100, burst=100))
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


@pytest.fixture
async def counted() -> AsyncIterator[McpHttp]:
    import httpx

    client = Redis.from_url(REDIS_URL, connection_class=CountingConnection)
    prefix = f"stratus-test-{secrets.token_hex(4)}"
    stores = redis_stores(client, StoreOptions(prefix=prefix, session_ttl_seconds=600, timeout=2.0))
    app = build_app(limited_server(), Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield McpHttp(http)
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_a_handshake_tools_call_with_session_limit_and_breaker_is_one_round_trip(counted: McpHttp) -> None:
    session = await counted.initialize()
    await session.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})  # loads the scripts once
    CountingConnection.writes = 0
    response = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert response.json()["result"]["structuredContent"] == {"result": 5}
    assert CountingConnection.writes == 1


async def test_a_stateless_tools_call_with_a_limit_and_a_breaker_is_one_round_trip(counted: McpHttp) -> None:
    await counted.stateless("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    CountingConnection.writes = 0
    response = await counted.stateless("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert response.status_code == 200 and CountingConnection.writes == 1


def fault_server() -> McpServer:
    server = McpServer("faults")

    @server.tool(rate_limit=RateLimit(rate=10, burst=10))
    def ping() -> str:
        """Ping."""
        return "pong"

    return server


async def test_redis_stopped_mid_run_gives_bounded_503s_then_recovers(own_redis: OwnRedis) -> None:
    import httpx

    metrics = LocalMetrics()
    settings = Settings(store=own_redis.url, secret_key=SECRET_KEY, store_timeout_seconds=1.0)
    app = build_app(fault_server(), settings, metrics=metrics)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        mcp = McpHttp(http)
        session = await mcp.initialize()
        assert (await session.request("tools/call", {"name": "ping"})).status_code == 200

        own_redis.stop()
        with anyio.fail_after(5):  # bounded: socket timeouts and one retry, never a hang
            down = await session.request("tools/call", {"name": "ping"})
        assert down.status_code == 503 and down.headers["retry-after"] == "1"
        assert down.json()["error"]["code"] == -31502
        with anyio.fail_after(5):
            stateless = await mcp.stateless("tools/call", {"name": "ping"})
        assert stateless.status_code == 200  # rate limits fail open by default, counted and logged
        assert metrics.total("store_unavailable", item="ping") == 1

        own_redis.start()  # an empty Redis: the old session is gone, the app recovers without a restart
        with anyio.fail_after(5):
            assert (await session.request("tools/call", {"name": "ping"})).status_code == 404
            again = await mcp.initialize()
            assert (await again.request("tools/call", {"name": "ping"})).status_code == 200
    await app.shutdown()


async def test_limits_can_fail_closed_instead(own_redis: OwnRedis) -> None:
    import httpx

    settings = Settings(
        store=own_redis.url, secret_key=SECRET_KEY, store_timeout_seconds=1.0, limits_on_store_failure="closed"
    )
    app = build_app(fault_server(), settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        own_redis.stop()
        with anyio.fail_after(5):
            response = await McpHttp(http).stateless("tools/call", {"name": "ping"})
    await app.shutdown()
    assert response.status_code == 503


async def test_the_client_bounds_its_sockets_and_its_pool() -> None:
    client = redis_client(REDIS_URL, timeout=0.5)
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    assert (kwargs["socket_connect_timeout"], kwargs["socket_timeout"]) == (0.5, 0.5)
    assert (pool.max_connections, pool.timeout) == (MAX_CONNECTIONS, 0.5)  # a busy pool is waited for, boundedly
    await client.aclose()
    sized = redis_client(f"{REDIS_URL}?max_connections=7", timeout=0.5)  # the store URL sizes the pool
    assert sized.connection_pool.max_connections == 7
    await sized.aclose()


async def test_500_concurrent_session_creates_all_succeed_through_a_pool_of_20_connections(
    own_redis: OwnRedis,
) -> None:
    # A queued create waits for a free connection up to the store timeout: generous, for a loaded machine.
    client = redis_client(own_redis.url, timeout=5.0, max_connections=20)
    stores = redis_stores(client, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=5.0))
    records = [SessionRecord(session_id=f"s{index}", protocol_version="2025-11-25") for index in range(500)]
    try:
        with anyio.fail_after(30):
            await asyncio.gather(*(stores.sessions.create(record) for record in records))
            assert (await stores.sessions.census()).active == 500
        connected = own_redis.client().info("clients")["connected_clients"]
        assert connected <= 20 + 1, connected  # the pool's connections and the one asking
    finally:
        await stores.aclose()


async def test_a_call_that_finds_every_connection_held_waits_at_most_the_store_timeout(own_redis: OwnRedis) -> None:
    timeout = 0.3
    client = redis_client(own_redis.url, timeout=timeout, max_connections=2)
    stores = redis_stores(client, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=timeout))
    held = [client.pubsub() for _ in range(2)]  # a stream following its log holds a connection like these
    try:
        for subscription in held:
            await subscription.subscribe("held")
        started = time.monotonic()
        with anyio.fail_after(5), pytest.raises(StoreUnavailableError):
            await stores.sessions.load("nobody")
        assert timeout * 0.9 <= time.monotonic() - started < timeout + 1
        await held.pop().aclose()  # a connection comes back: calls are served again
        with anyio.fail_after(5):
            assert await stores.sessions.load("nobody") is None
    finally:
        for subscription in held:
            await subscription.aclose()
        await stores.aclose()


async def test_a_session_create_sent_twice_counts_once_and_a_rival_create_is_refused() -> None:
    """redis-py resends a pipeline whose answer a dropped connection lost; the resend must not read as a clash."""
    client = Redis.from_url(REDIS_URL)
    key = f"stratus-test:{{s:{secrets.token_hex(8)}}}"
    try:
        first = await client.eval(SESSION_CREATE, 1, key, "{}", "100", "60", "5", "token-a")
        resent = await client.eval(SESSION_CREATE, 1, key, "{}", "100", "60", "5", "token-a")
        rival = await client.eval(SESSION_CREATE, 1, key, "{}", "101", "60", "5", "token-b")
        assert (first, resent, rival) == (1, 1, 0)
        assert await client.hget(key, "w") == b"token-a"
    finally:
        await client.delete(key)
        await client.aclose()


async def test_open_streams_wait_on_a_pool_of_their_own_and_leave_the_calls_theirs(own_redis: OwnRedis) -> None:
    stores = build_stores(
        f"{own_redis.url}?max_connections=2", StoreOptions(session_ttl_seconds=600, prefix="w", timeout=0.3)
    )
    try:
        await stores.events.append("s", "first")
        followers = [asyncio.ensure_future(stores.events.wait_after("s", 1, within=5)) for _ in range(5)]
        watcher = own_redis.client()
        with anyio.fail_after(5):
            for _ in range(500):  # until every follower has subscribed: at most 500 looks, 5 s
                if watcher.pubsub_numsub("w:{ev:s}:events")[0][1] == 5:
                    break
                await asyncio.sleep(0.01)
            assert watcher.pubsub_numsub("w:{ev:s}:events")[0][1] == 5
            assert await stores.sessions.load("nobody") is None  # five waits hold connections; the calls' two are free
            await stores.events.append("s", "second")
            woken = await asyncio.gather(*followers)
        assert [[event.data for event in events] for events in woken] == [["second"]] * 5
    finally:
        await stores.aclose()
