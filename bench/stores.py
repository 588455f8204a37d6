"""Store benchmark child of bench/run.py: `python bench/stores.py CALLS` (the project's venv: redis, boto3, moto).

For each backend (memory, Redis on 127.0.0.1:6379, DynamoDB on moto in-process) it drives the buffered Lambda
handler of a one-tool server whose tool has a rate limit and a circuit breaker, and reports:
- store round trips per request kind (Redis: socket writes of the client; DynamoDB: requests sent);
- the warm latency of a legacy tools/call (session + rate limit + breaker), median and p99, microseconds, and the
  median of each request kind;
- Redis memory per idle session, from `INFO memory` around creating 10,000 sessions.
Prints one Python literal. moto answers in-process, so its latency says nothing about DynamoDB's own.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import wire
from mangum import Mangum
from moto import mock_aws
from redis import Redis
from redis.asyncio import Connection

from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import Stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.factory import dynamodb_stores, redis_stores
from stratus.stores.records import SessionRecord
from stratus.transport.app import build_app

REDIS_URL = "redis://127.0.0.1:6379/0"
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class CountingConnection(Connection):
    """A real redis-py connection that counts its writes: one write is one round trip."""

    writes = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.writes += 1
        await super().send_packed_command(command, check_health)


def server() -> McpServer:
    built = McpServer("add", breaker=BreakerPolicy())

    @built.tool(rate_limit=RateLimit(rate=1e6, burst=1e6))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return built


def handshake_session(handler: Handler) -> dict[str, str]:
    opened = handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None)
    session_id = {key.lower(): value for key, value in opened["headers"].items()}["mcp-session-id"]
    handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZED_BODY, wire.handshake_headers(session_id)), None)
    return wire.handshake_headers(session_id)


KINDS = {
    "legacy tools/call": lambda headers: wire.http_api_event(wire.HANDSHAKE_CALL_BODY, headers),
    "legacy tools/list": lambda headers: wire.http_api_event('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', headers),
    "modern tools/call": lambda headers: wire.STATELESS_CALL_EVENT,
}


def measure(handler: Handler, count: Callable[[], int], calls: int) -> dict[str, Any]:
    headers = handshake_session(handler)
    trips = {}
    for kind, event_for in KINDS.items():
        event = event_for(headers)
        handler(event, None)  # warm: scripts loaded, connections open
        before = count()
        response = handler(event, None)
        assert response["statusCode"] == 200, response
        trips[kind] = count() - before
    before = count()
    handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None)
    trips["legacy initialize"] = count() - before
    latency = {kind: timed(handler, event_for(headers), max(20, calls // 4)) for kind, event_for in KINDS.items()}
    event = KINDS["legacy tools/call"](headers)
    samples = timed(handler, event, calls, summary=False)
    body = json.loads(handler(event, None)["body"])
    assert body["result"]["structuredContent"] == {"result": 3}, body
    return {
        "round_trips": trips,
        "latency_by_kind_us": latency,
        "median_us": statistics.median(samples),
        "p99_us": samples[int(len(samples) * 0.99)],
    }


def timed(handler: Handler, event: dict[str, Any], calls: int, *, summary: bool = True) -> Any:
    """Per-call latencies (us, sorted) of `calls` calls, or their median when `summary`."""
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        handler(event, None)
        samples.append((time.perf_counter_ns() - start) / 1000)
    samples.sort()
    return statistics.median(samples) if summary else samples


@contextmanager
def event_loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def memory_backend(calls: int) -> dict[str, Any]:
    with event_loop():
        return measure(make_handler(server(), Settings()), lambda: 0, calls)


def redis_backend(calls: int) -> dict[str, Any]:
    from redis.asyncio import Redis as AsyncRedis

    prefix = f"bench-{secrets.token_hex(4)}"
    with event_loop():
        client = AsyncRedis.from_url(REDIS_URL, connection_class=CountingConnection)
        stores = redis_stores(client, prefix=prefix, session_ttl_seconds=3600, timeout=2.0)
        result = measure(lambda_handler(stores), lambda: CountingConnection.writes, calls)
        asyncio.get_event_loop().run_until_complete(client.aclose())
    sync = Redis.from_url(REDIS_URL)
    result["memory_per_session_bytes"] = session_memory(sync, prefix)
    for key in sync.scan_iter(match=f"{prefix}:*", count=1000):
        sync.delete(key)
    sync.close()
    return result


def session_memory(sync: Redis, prefix: str, sessions: int = 10_000) -> float:
    """Bytes of Redis memory per idle legacy session, from `used_memory` around creating `sessions` of them."""
    from stratus.stores.redis.scripts import RedisScripts
    from stratus.stores.redis.sessions import RedisSessionStore

    before = int(sync.info("memory")["used_memory"])

    async def create() -> None:
        from redis.asyncio import Redis as AsyncRedis

        client = AsyncRedis.from_url(REDIS_URL)
        store = RedisSessionStore(RedisScripts(client, f"{prefix}-memory", timeout=5.0), ttl_seconds=3600)
        for index in range(sessions):
            await store.create(
                SessionRecord(
                    session_id=secrets.token_urlsafe(24),
                    protocol_version="2025-11-25",
                    client_capabilities={"sampling": {}, "elicitation": {}},
                    client_info={"name": "bench-client", "version": "1.0.0"},
                    principal=f"https://auth.example.com/|user-{index}",
                )
            )
        await client.aclose()

    asyncio.run(create())
    after = int(sync.info("memory")["used_memory"])
    for key in sync.scan_iter(match=f"{prefix}-memory:*", count=1000):
        sync.delete(key)
    return (after - before) / sessions


def dynamodb_backend(calls: int) -> dict[str, Any]:
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    with mock_aws(), event_loop():
        client = dynamodb_client(timeout=2.0)
        create_table(client, "bench")
        stores = dynamodb_stores(client, "bench", prefix="bench", session_ttl_seconds=3600, timeout=2.0)
        handler = lambda_handler(stores)
        return measure(handler, lambda: stores.sessions.table.requests, calls)  # type: ignore[attr-defined]


def lambda_handler(stores: Stores) -> Handler:
    """The buffered Lambda handler's stack (Mangum over build_app) on the given stores."""
    app = Mangum(build_app(server(), Settings(), stores=stores), lifespan="off")
    return lambda event, context: app(event, context)


def main(calls: int) -> dict[str, Any]:
    return {
        "memory": memory_backend(calls),
        "redis": redis_backend(calls),
        "dynamodb (moto)": dynamodb_backend(calls),
    }


if __name__ == "__main__":
    print(repr(main(int(sys.argv[1]))))
