"""Notification latency across processes: `ctx.notify_resource_updated` on one `stratus serve` process to the
event on a session's GET stream held by another, both on the Redis at 127.0.0.1:6379.

    .venv/bin/python bench/notify.py [--events 200]

Latency is measured from the tool's call to `notify_resource_updated` (CLOCK_MONOTONIC, shared by the
processes) to the event's arrival at the client holding the stream. The anchor is a Redis PING round trip
from the same client in the same run. Also reported: the Redis commands an idle open stream costs over a quiet
window (after the stream settled), beside the same window with no stream open. Prints a summary, then the
figures as one Python literal (what bench/run.py reads). A benchmark: it reports, it never fails on a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpx
import redis.asyncio as redis
import stratus_process

REDIS_URL = "redis://127.0.0.1:6379/0"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
IDLE_SECONDS = 3.0
SETTLE_SECONDS = 0.5
"""Left to a new stream to finish opening (its subscription, its first read) before the idle window starts."""
TARGET_MEDIAN_MS = 5.0


@contextmanager
def serving(prefix: str) -> Iterator[str]:
    """One `stratus serve` process on the shared Redis. Its GET streams hold (`STRATUS_POLL_HOLD_SECONDS`): the
    latency measured is a held stream's; a poll adds up to its retry delay (docs/deploy.md, "What it costs")."""
    environment = {
        "STRATUS_STORE": REDIS_URL,
        "STRATUS_STORE_PREFIX": prefix,
        "STRATUS_SECRET_KEY": secrets.token_hex(32),
        "STRATUS_POLL_HOLD_SECONDS": "600",
    }
    with stratus_process.serving("--app", "bench.notify_app:server", environment=environment) as (url, _):
        yield url


async def session_headers(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    opened = await http.post(f"{url}/mcp", json=init, headers=HEADERS)
    headers = {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    subscribe = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "bench://board"}}
    await http.post(f"{url}/mcp", json=subscribe, headers=headers)
    return headers


async def arrivals(stream: httpx.Response) -> AsyncIterator[float]:
    """0.0 once the stream is primed, then the arrival time of each notification on it."""
    async for line in stream.aiter_lines():
        if line.startswith("retry: "):
            yield 0.0
        elif line.startswith("data: {"):
            yield time.monotonic()


async def commands_processed(client: redis.Redis) -> int:
    return int((await client.info("stats"))["total_commands_processed"])


async def idle_commands(client: redis.Redis) -> int:
    """Commands Redis processed during IDLE_SECONDS, less the INFO that measured it."""
    before = await commands_processed(client)
    await asyncio.sleep(IDLE_SECONDS)
    return await commands_processed(client) - before - 1


async def run(events: int) -> dict[str, float]:
    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"notify-bench-{secrets.token_hex(4)}"
    with serving(prefix) as publisher, serving(prefix) as listener:
        async with httpx.AsyncClient(timeout=30) as http:
            headers = await session_headers(http, publisher)
            quiet = await idle_commands(client)
            async with http.stream("GET", f"{listener}/mcp", headers=headers) as stream:
                received = arrivals(stream)
                await asyncio.wait_for(anext(received), 10)  # primed: the stream follows the log from here
                await asyncio.sleep(SETTLE_SECONDS)
                idle = await idle_commands(client)
                latencies = []
                for number in range(events):
                    call = {"jsonrpc": "2.0", "id": number + 2, "method": "tools/call", "params": {"name": "touch"}}
                    answer = await http.post(f"{publisher}/mcp", json=call, headers=headers)
                    started = float(json.loads(answer.text)["result"]["structuredContent"]["result"])
                    latencies.append((await asyncio.wait_for(anext(received), 10) - started) * 1000)
        pings = []
        for _ in range(events):
            began = time.perf_counter()
            await client.ping()
            pings.append((time.perf_counter() - began) * 1000)
    await client.aclose()
    latencies.sort()
    return {
        "events": events,
        "median_ms": statistics.median(latencies),
        "p90_ms": latencies[int(len(latencies) * 0.9) - 1],
        "redis_ping_ms": statistics.median(pings),
        "idle_seconds": IDLE_SECONDS,
        "idle_commands": idle,
        "quiet_commands": quiet,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200)
    figures = asyncio.run(run(parser.parse_args().events))
    ratio = figures["median_ms"] / figures["redis_ping_ms"]
    verdict = "meets" if figures["median_ms"] <= TARGET_MEDIAN_MS else "misses"
    print(
        f"notify -> GET stream on another process over Redis: median {figures['median_ms']:.2f} ms "
        f"(p90 {figures['p90_ms']:.2f} ms, {figures['events']} events) = {ratio:.1f}x a Redis PING "
        f"({figures['redis_ping_ms']:.3f} ms); {verdict} the {TARGET_MEDIAN_MS:.0f} ms target.\n"
        f"Idle open stream: {figures['idle_commands']} Redis commands in {IDLE_SECONDS:.0f} s "
        f"(no stream open: {figures['quiet_commands']})."
    )
    print(repr(figures))


if __name__ == "__main__":
    main()
