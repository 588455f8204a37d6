"""Store benchmark child of bench/run.py: `python bench/stores.py CALLS` (the project's venv: redis, boto3, moto).

For each backend (memory, Redis on 127.0.0.1:6379, DynamoDB on moto in-process) it drives the buffered Lambda
handler of a one-tool server whose tool has a rate limit and a circuit breaker, and reports:
- store round trips per request kind (Redis: socket writes of the client; DynamoDB: requests sent);
- the warm latency of a legacy tools/call (session + rate limit + breaker), median and p99, microseconds, and the
  median of each request kind;
- Redis memory per idle session, from `INFO memory` around creating 10,000 sessions, on a redis-server of its own
  (the shared one's `used_memory` moves with other clients' keys and buffers).
Prints one Python literal. moto answers in-process, so its latency says nothing about DynamoDB's own.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import wire
from mangum import Mangum
from moto import mock_aws
from redis import Redis
from redis.asyncio import Connection
from redis.exceptions import ConnectionError as RedisConnectionError

from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.records import SessionRecord
from stratus.stores.redis.builder import redis_stores
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
        stores = redis_stores(client, StoreOptions(prefix=prefix, session_ttl_seconds=3600, timeout=2.0))
        result = measure(lambda_handler(stores), lambda: CountingConnection.writes, calls)
        asyncio.get_event_loop().run_until_complete(client.aclose())
    sync = Redis.from_url(REDIS_URL)
    for key in sync.scan_iter(match=f"{prefix}:*", count=1000):
        sync.delete(key)
    sync.close()
    with private_redis() as url:
        result["memory_per_session_bytes"] = session_memory(url, prefix)
    return result


@contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of this run's own on a free port, no persistence: nothing else writes to it."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (.ci/run installs it)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process = subprocess.Popen([*argv, "--dir", folder], stdout=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        try:
            client = Redis.from_url(url)
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except RedisConnectionError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(f"redis-server did not answer on port {port}") from None
                    time.sleep(0.05)
            client.close()
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)


def session_memory(url: str, prefix: str, sessions: int = 10_000) -> float:
    """Bytes of Redis memory per idle legacy session, from `used_memory` around creating `sessions` of them."""
    from redis.asyncio import Redis as AsyncRedis

    from stratus.stores.redis.scripts import RedisScripts
    from stratus.stores.redis.sessions import RedisSessionStore

    sync = Redis.from_url(url)

    async def create() -> None:
        client = AsyncRedis.from_url(url)
        store = RedisSessionStore(RedisScripts(client, f"{prefix}-memory", timeout=5.0), ttl_seconds=3600)
        await store.create(first_session(0))  # loads the scripts: their memory is not a session's
        before = int(sync.info("memory")["used_memory"])
        for index in range(1, sessions + 1):
            await store.create(first_session(index))
        after = int(sync.info("memory")["used_memory"])
        measured.append((after - before) / sessions)
        await client.aclose()

    measured: list[float] = []
    asyncio.run(create())
    sync.close()
    return measured[0]


def first_session(index: int) -> SessionRecord:
    """An idle handshake-era session as a typical client leaves it after initialize."""
    return SessionRecord(
        session_id=secrets.token_urlsafe(24),
        protocol_version="2025-11-25",
        client_capabilities={"sampling": {}, "elicitation": {}},
        client_info={"name": "bench-client", "version": "1.0.0"},
        principal=f"https://auth.example.com/|user-{index}",
    )


def dynamodb_backend(calls: int) -> dict[str, Any]:
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    with mock_aws(), event_loop():
        client = dynamodb_client(timeout=2.0)
        create_table(client, "bench")
        stores = dynamodb_stores(client, "bench", StoreOptions(prefix="bench", session_ttl_seconds=3600, timeout=2.0))
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
