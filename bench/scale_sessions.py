"""Sessions-scaling child of bench/run.py: `python bench/scale_sessions.py CALLS LEVEL...` (the project's venv).

Grows the live legacy sessions in Redis (127.0.0.1:6379) to each LEVEL in turn and, at each, measures: the warm
latency of a legacy tools/call in one of them through the buffered Lambda handler's stack (median, p99, us), the
`/health` census (us), and Redis memory per session (`used_memory` growth / sessions). Prints one Python literal;
deletes its keys at the end.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import sys
import time
from typing import Any

import wire
from mangum import Mangum
from redis import Redis

from stratus import McpServer, Settings
from stratus.stores.base import StoreOptions
from stratus.stores.records import SessionRecord
from stratus.stores.redis.builder import redis_stores
from stratus.stores.redis.client import redis_client
from stratus.transport.app import build_app

REDIS_URL = "redis://127.0.0.1:6379/0"


def server() -> McpServer:
    built = McpServer("add")

    @built.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return built


def main(calls: int, levels: list[int]) -> list[dict[str, Any]]:
    prefix = f"bench-scale-{secrets.token_hex(4)}"
    sync = Redis.from_url(REDIS_URL)
    baseline = int(sync.info("memory")["used_memory"])
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stores = redis_stores(
        redis_client(REDIS_URL, timeout=5.0), StoreOptions(prefix=prefix, session_ttl_seconds=3600, timeout=5.0)
    )
    handler = Mangum(build_app(server(), Settings(max_sessions=0), stores=stores), lifespan="off")
    opened = handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None)
    session_id = {key.lower(): value for key, value in opened["headers"].items()}["mcp-session-id"]
    call = wire.http_api_event(wire.HANDSHAKE_CALL_BODY, wire.handshake_headers(session_id))
    results = []
    live = 1

    async def grow(count: int) -> None:
        for start in range(0, count, 50):
            batch = [
                stores.sessions.create(
                    SessionRecord(
                        session_id=secrets.token_urlsafe(24),
                        protocol_version="2025-11-25",
                        client_capabilities={"sampling": {}, "elicitation": {}},
                        client_info={"name": "bench-client", "version": "1.0.0"},
                        principal=f"https://auth.example.com/|user-{start + index}",
                    )
                )
                for index in range(min(50, count - start))
            ]
            await asyncio.gather(*batch)

    try:
        for level in levels:
            loop.run_until_complete(grow(level - live))
            live = level
            for _ in range(100):
                handler(call, None)
            samples = []
            for _ in range(calls):
                started = time.perf_counter_ns()
                handler(call, None)
                samples.append((time.perf_counter_ns() - started) / 1e3)
            samples.sort()
            started = time.perf_counter_ns()
            census = loop.run_until_complete(stores.sessions.census())
            census_us = (time.perf_counter_ns() - started) / 1e3
            assert census.active == level, (census, level)
            used = int(sync.info("memory")["used_memory"]) - baseline
            results.append(
                {
                    "sessions": level,
                    "call_median_us": statistics.median(samples),
                    "call_p99_us": samples[int(len(samples) * 0.99)],
                    "census_us": census_us,
                    "memory_per_session_bytes": used / level,
                }
            )
    finally:
        loop.run_until_complete(stores.aclose())
        for key in sync.scan_iter(match=f"{prefix}:*", count=1000):
            sync.delete(key)
        sync.close()
    return results


if __name__ == "__main__":
    print(repr(main(int(sys.argv[1]), [int(level) for level in sys.argv[2:]])))
