"""The scale simulation (issue 18, docs/scale.md): `python bench/scale_sim.py [--requests N] [--smoke]` (the project's
venv: moto, redis; Redis on 127.0.0.1:6379 or `--redis URL`).

Drives the ASGI app (`build_app`, in process, through httpx's ASGI transport) on DynamoDB (moto in process) and on
Redis with every request kind of both eras: initialize, notifications/initialized, tools/call in a session and
stateless, a session's GET stream held open, a tool call run as a task and its tasks/get, DELETE, the session REST
API (POST /session, a call, DELETE /session/{id}), `/health` (each one a fresh census), and the sweeper's
`sweep_step` over expired sessions. Every store request is counted on the client's wire, per key
(bench/scale_ledger.py), and each kind's busiest shared key (one that is not a session's or task's own) is
extrapolated to the target load: `target x (its operations / requests of the kind)`, beside the even share over
its family (the sampled busiest of 64 shards runs high at a few requests per shard), against the ceiling:
DynamoDB 1,000 WCU/s and 3,000 RCU/s per partition key, about 1,000 writes/s per item; Redis 100,000 operations/s
per shard (an assumption: one shard runs one command at a time; a script counts as one operation).
A last row adds every kind at its target at once.

Prints a Markdown table per backend (docs/scale.md quotes it). `--smoke`: a few requests of each kind, seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import scale_ledger
from moto import mock_aws
from scale_ledger import DynamoWire, KeyedConnection, Ledger, RedisWire, family

from stratus import Context, McpServer, Settings
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import Stores
from stratus.stores.dynamodb.replicated_log import MIRRORS
from stratus.stores.records import SessionRecord
from stratus.transport.app import build_app

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
STREAM_SECONDS = 4.0
"""How long each simulated GET stream is held: its opening (a burst of polls) spread over a few seconds of following."""
TTL = 3600.0
SWEEPER_RUNS_PER_SECOND = 1 / 300  # template.yaml: every 5 minutes
HEALTH_PER_SECOND = 200.0  # 1,000 containers' census, once per 5 s each (CENSUS_SECONDS)
CEILING = {"dynamodb": (1000.0, 3000.0), "redis": 100_000.0}
SPREAD = {"sim#stream#*/notifications#<k>": MIRRORS}
"""Key families whose members processes pick evenly at random (the notification log's mirrors: each process reads
one): at the target each member takes its even share, however few the simulation sampled."""

GET_STREAM = f"GET stream (per open stream-second, held {STREAM_SECONDS:.0f} s)"
TARGETS: dict[str, float] = {
    "initialize": 10_000,
    "notifications/initialized": 10_000,
    "tools/call (session)": 100_000,
    "tools/call (stateless)": 100_000,
    GET_STREAM: 100_000,
    "server-wide notification": 100,
    "tools/call as a task": 10_000,
    "tasks/get": 10_000,
    "DELETE": 10_000,
    "POST /session": 10_000,
    "REST call": 100_000,
    "DELETE /session/{id}": 10_000,
    "/health (fresh census)": HEALTH_PER_SECOND,
    "sweep_step (one run)": SWEEPER_RUNS_PER_SECOND,
}
"""Requests a second at the target load (an open stream: streams open). Tasks have no target: 10,000/s assumed;
server-wide notifications (a list change, a resource update) none: 100/s assumed."""
MIX = (
    "initialize",
    "notifications/initialized",
    "tools/call (session)",
    GET_STREAM,
    "server-wide notification",
    "DELETE",
    "/health (fresh census)",
    "sweep_step (one run)",
)
"""All at once: 10,000 sessions a second opened and ended, 100,000 calls a second in them, 100,000 open streams."""


def server() -> McpServer:
    built = McpServer("scale", breaker=BreakerPolicy())

    @built.tool(rate_limit=RateLimit(rate=1e6, burst=1e6))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @built.tool()
    async def announce(ctx: Context) -> str:
        """Tells every listening client the tools changed."""
        await ctx.notify_list_changed("tools")
        return "told"

    @built.tool(task="optional")
    def total(values: list[int]) -> int:
        """Sums the values."""
        return sum(values)

    return built


class Run:
    """One backend's app, the client that drives it, and the ledger its store requests go to."""

    def __init__(self, stores: Stores, ledger: Ledger, expired: Stores) -> None:
        self.ledger = ledger
        self.stores = stores
        self.expired = expired
        """The same store with its clock two TTLs behind: sessions it creates are already due."""
        self.ticks = 0.0
        settings = Settings(max_stream_seconds=STREAM_SECONDS, allowed_hosts=("localhost",))
        self.app = build_app(server(), settings, stores=stores, monotonic=self._monotonic)
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://localhost")
        self.counts: Counter[str] = Counter()
        self._id = 0

    def _monotonic(self) -> float:
        self.ticks += 10.0  # every /health finds its cached census expired
        return self.ticks

    async def post(self, body: Any, headers: dict[str, str] | None = None, path: str = "/mcp") -> httpx.Response:
        return await self.http.post(path, content=json.dumps(body), headers={**HEADERS, **(headers or {})})

    def rpc(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        return message if notify else {**message, "id": self._id}

    @contextmanager
    def kind(self, name: str, requests: int = 1) -> Iterator[None]:
        self.ledger.kind = name
        try:
            yield
        finally:
            self.counts[name] += requests
            self.ledger.kind = "setup"


def session_headers(session_id: str) -> dict[str, str]:
    return {"mcp-session-id": session_id, "mcp-protocol-version": HANDSHAKE}


async def drive(run: Run, requests: int) -> None:
    """Every request kind, `requests` of each (a few GET streams, a few `/health`)."""
    init = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "sim", "version": "1"}}
    sessions = []
    for _ in range(requests):
        with run.kind("initialize"):
            answer = await run.post(run.rpc("initialize", init))
        assert answer.status_code == 200, answer.text
        sessions.append(answer.headers["mcp-session-id"])
    for session_id in sessions:
        with run.kind("notifications/initialized"):
            answer = await run.post(run.rpc("notifications/initialized", notify=True), session_headers(session_id))
        assert answer.status_code == 202, answer.text
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    for session_id in sessions:
        with run.kind("tools/call (session)"):
            answer = await run.post(run.rpc("tools/call", call), session_headers(session_id))
        assert answer.json()["result"]["structuredContent"] == {"result": 3}, answer.text
    stateless = {**HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "add"}
    for _ in range(requests):
        with run.kind("tools/call (stateless)"):
            answer = await run.post(run.rpc("tools/call", {**call, "_meta": STATELESS_META}), stateless)
        assert answer.json()["result"]["structuredContent"] == {"result": 3}, answer.text
    await streams(run, sessions[: max(1, min(3, requests // 50))])
    for session_id in sessions[: max(2, requests // 50)]:
        with run.kind("server-wide notification"):
            answer = await run.post(
                run.rpc("tools/call", {"name": "announce", "arguments": {}}), session_headers(session_id)
            )
        assert answer.json().get("result", {}).get("content") == [{"type": "text", "text": "told"}], answer.text
    await tasks(run, sessions[: max(2, requests // 4)])
    for session_id in sessions:
        with run.kind("DELETE"):
            answer = await run.http.delete("/mcp", headers={**HEADERS, **session_headers(session_id)})
        assert answer.status_code in (200, 204), answer.text
    await rest(run, max(2, requests // 2))
    for _ in range(max(2, requests // 50)):
        with run.kind("/health (fresh census)"):
            answer = await run.http.get("/health", headers={"host": "localhost"})
        assert answer.status_code == 200, answer.text
    await sweeps(run, requests)


async def streams(run: Run, sessions: list[str]) -> None:
    """Each session's GET stream, held open until the stream's time limit ends it: operations per stream-second."""
    mirrors = getattr(run.stores.events, "mirrors", None)  # DynamoDB: each stream on a container of its own
    for index, session_id in enumerate(sessions):
        if mirrors is not None:
            mirrors.mine = index * MIRRORS // len(sessions)
        started = time.perf_counter()
        with run.kind(GET_STREAM, 0):
            answer = await run.http.get("/mcp", headers={**HEADERS, **session_headers(session_id)}, timeout=30)
        run.counts[GET_STREAM] += round(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text


async def tasks(run: Run, sessions: list[str]) -> None:
    for session_id in sessions:
        params = {"name": "total", "arguments": {"values": [1, 2]}, "task": {}}
        with run.kind("tools/call as a task"):
            answer = await run.post(run.rpc("tools/call", params), session_headers(session_id))
        task_id = answer.json()["result"]["task"]["taskId"]
        await asyncio.sleep(0)
        with run.kind("tasks/get"):
            answer = await run.post(run.rpc("tasks/get", {"taskId": task_id}), session_headers(session_id))
        assert answer.status_code == 200, answer.text


async def rest(run: Run, count: int) -> None:
    for _ in range(count):
        with run.kind("POST /session"):
            answer = await run.post({}, path="/session")
        session_id = answer.json()["sessionId"]
        with run.kind("REST call"):
            body = {"sessionId": session_id, "method": "tools/call", "params": {"name": "add", "arguments": {}}}
            await run.post({**body, "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
        with run.kind("DELETE /session/{id}"):
            answer = await run.http.delete(f"/session/{session_id}", headers=HEADERS)
        assert answer.status_code == 200, answer.text


async def sweeps(run: Run, count: int) -> None:
    """`count` sessions created already due, then sweeper runs until one removes nothing."""
    for _ in range(count):
        await run.expired.sessions.create(
            SessionRecord(session_id=secrets.token_urlsafe(16), protocol_version=HANDSHAKE)
        )
    removed = 0
    for _ in range(100):
        with run.kind("sweep_step (one run)"):
            swept = await run.stores.sessions.sweep_step()
        removed += swept
        if not swept and removed >= count:
            break
    assert removed == count, (removed, count)


def rows(backend: str, run: Run) -> list[dict[str, Any]]:
    """Per kind: round trips, read/write operations, and the busiest shared key at the target."""
    table = []
    for name, target in TARGETS.items():
        tally, requests = run.ledger.tallies.get(name), run.counts[name]
        if tally is None or not requests:
            continue
        shared = {key: count for key, count in _ops(backend, tally).items() if "<id>" not in family(key)}
        busiest = max(shared, key=shared.__getitem__, default=None)
        row: dict[str, Any] = {
            "kind": name,
            "target": target,
            "round trips": sum(tally.requests.values()) / requests,
            "reads": sum(tally.reads.values()) / requests,
            "writes": sum(tally.writes.values()) / requests,
            "busiest": busiest,
        }
        if busiest is not None:
            members = [key for key in shared if family(key) == family(busiest)]
            size = SPREAD.get(family(busiest), len(members))
            row["even"] = target * sum(shared[key] for key in members) / requests / size
            row["at target"] = row["even"] if family(busiest) in SPREAD else target * shared[busiest] / requests
            row["keys"] = size
        table.append(row)
    return table


def _ops(backend: str, tally: scale_ledger.Tally) -> Counter[str]:
    """Per key (Redis: per slot's key) the load that counts against its ceiling: DynamoDB, the share of a
    partition's limit used by its reads and writes (units / ceiling), scaled to write units; Redis, operations."""
    if backend == "redis":
        return Counter(tally.writes)
    wcu, rcu = CEILING["dynamodb"]  # type: ignore[misc]
    load: Counter[str] = Counter()
    for key, units in tally.writes.items():
        load[key] += units
    for key, units in tally.reads.items():
        load[key] += units * wcu / rcu  # a read unit is a third as costly against the partition's limits
    return load


def mixed(backend: str, run: Run) -> dict[str, float]:
    """Every kind of `MIX` at its target at once: the busiest key's load a second, by family."""
    load: Counter[str] = Counter()
    for name in MIX:
        tally, requests = run.ledger.tallies.get(name), run.counts[name]
        if tally is None or not requests:
            continue
        for key, ops in _ops(backend, tally).items():
            if "<id>" not in family(key):
                load[key] += TARGETS[name] * ops / requests
    families: dict[str, float] = {}
    spread: Counter[str] = Counter()
    for key, rate in load.items():
        if family(key) in SPREAD:
            spread[family(key)] += rate / SPREAD[family(key)]
        else:
            families[family(key)] = max(families.get(family(key), 0.0), rate)
    families.update(spread)
    return dict(sorted(families.items(), key=lambda item: -item[1])[:5])


def markdown(backend: str, run: Run) -> str:
    ceiling = CEILING["dynamodb"][0] if backend == "dynamodb" else CEILING["redis"]  # type: ignore[index]
    unit = "WCU-equivalent/s" if backend == "dynamodb" else "ops/s"
    reads, writes = ("Read units", "Write units") if backend == "dynamodb" else ("Keyless commands", "Key operations")
    lines = [
        f"### {backend}",
        "",
        f"| Request kind | Target /s | Round trips | {reads} | {writes} | Busiest shared key | It at target ({unit}) "
        f"| Even over its family | % of {ceiling:,.0f} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows(backend, run):
        busiest = row["busiest"]
        where = f"`{family(busiest)}` ({row['keys']} keys)" if busiest else "none (only its own keys)"
        at, even = row.get("at target", 0.0), row.get("even", 0.0)
        lines.append(
            f"| {row['kind']} | {row['target']:,.4g} | {row['round trips']:.2f} | {row['reads']:.2f} | "
            f"{row['writes']:.2f} | {where} | {at:,.0f} | {even:,.0f} | {100 * even / ceiling:.1f}% |"
        )
    lines += ["", f"All of {', '.join(MIX)} at their targets at once, the busiest key of each family ({unit}):", ""]
    lines += [f"- `{name}`: {rate:,.0f} ({100 * rate / ceiling:.1f}%)" for name, rate in mixed(backend, run).items()]
    return "\n".join(lines)


async def on_dynamodb(requests: int) -> str:
    from stratus.stores.base import StoreOptions
    from stratus.stores.dynamodb.builder import dynamodb_stores
    from stratus.stores.dynamodb.client import dynamodb_client
    from stratus.stores.dynamodb.schema import create_table

    os.environ.update(AWS_ACCESS_KEY_ID="sim", AWS_SECRET_ACCESS_KEY="sim", AWS_DEFAULT_REGION="us-east-1")
    with mock_aws():
        client = dynamodb_client(timeout=10.0)
        create_table(client, "sim")
        ledger = Ledger()
        DynamoWire(ledger).listen(client)
        stores = dynamodb_stores(client, "sim", StoreOptions(prefix="sim", session_ttl_seconds=TTL, timeout=10.0))
        late = dynamodb_stores(
            client,
            "sim",
            StoreOptions(prefix="sim", session_ttl_seconds=TTL, timeout=10.0, clock=lambda: time.time() - 2 * TTL),
        )
        run = Run(stores, ledger, late)
        await drive(run, requests)
        return markdown("dynamodb", run)


async def on_redis(requests: int, url: str) -> str:
    from redis.asyncio import Redis

    from stratus.stores.base import StoreOptions
    from stratus.stores.redis.builder import redis_stores

    client = Redis.from_url(url, connection_class=KeyedConnection)
    prefix = f"sim-{secrets.token_hex(4)}"
    RedisWire.ledger = Ledger()
    stores = redis_stores(client, StoreOptions(prefix=prefix, session_ttl_seconds=TTL, timeout=10.0))
    late = redis_stores(
        client, StoreOptions(prefix=prefix, session_ttl_seconds=TTL, timeout=10.0, clock=lambda: time.time() - 2 * TTL)
    )
    try:
        run = Run(stores, RedisWire.ledger, late)
        await drive(run, requests)
        return markdown("redis", run)
    finally:
        async for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            await client.delete(key)
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="requests of each kind (default 400)")
    parser.add_argument("--smoke", action="store_true", help="a few requests of each kind: keeps the script working")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--backend", choices=("dynamodb", "redis", "both"), default="both")
    arguments = parser.parse_args()
    requests = 8 if arguments.smoke else arguments.requests
    jobs: list[Callable[[], Awaitable[str]]] = []
    if arguments.backend in ("dynamodb", "both"):
        jobs.append(lambda: on_dynamodb(requests))
    if arguments.backend in ("redis", "both"):
        jobs.append(lambda: on_redis(requests, arguments.redis))
    print(f"`python bench/scale_sim.py --requests {requests}`\n")
    for job in jobs:
        print(asyncio.run(job()), end="\n\n", flush=True)


if __name__ == "__main__":
    sys.exit(main())
