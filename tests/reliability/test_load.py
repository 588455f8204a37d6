"""A bounded load on two processes behind a round-robin proxy, sharing Redis: nothing fails, and the processes
neither grow nor leak file descriptors. CI runs a few seconds; `STRATUS_LOAD_SECONDS=60` runs the long version
(`-o log_cli=true --log-cli-level=INFO` shows the figures)."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import RoundRobinProxy, ServerUrl, shared_store_environment, stratus_processes
from tests.fixtures.servers import LoopWatch, uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
LOAD_SECONDS = float(os.environ.get("STRATUS_LOAD_SECONDS", "4"))
WARM_UP_SECONDS = float(os.environ.get("STRATUS_LOAD_WARM_UP", min(2.0, LOAD_SECONDS)))
WORKERS = 8
MAX_REQUESTS_PER_WORKER = 100_000
logger = logging.getLogger("stratus.tests.load")


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def resident_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def worker(mcp: McpHttp, until: float, tally: Tally) -> None:
    """Legacy calls in a session (a new one every 50 calls, the old one ended), every fourth call modern. Answers
    are checked for their value, not schema-validated: the client must not be the bottleneck."""
    session = await mcp.initialize()
    stateless_headers = {
        **BASE_HEADERS,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "add",
    }
    for index in range(MAX_REQUESTS_PER_WORKER):
        if time.monotonic() >= until:
            break
        if index and index % 50 == 0:
            ended = await mcp.http.delete("/mcp", headers=session.headers)
            if ended.status_code != 200:
                tally.failures.append(f"DELETE {ended.status_code}")
            session = await mcp.initialize()
        params: dict[str, Any] = {"name": "add", "arguments": {"a": index, "b": 1}}
        if index % 4 == 3:
            headers = stateless_headers
            params["_meta"] = stateless_meta()
        else:
            headers = {**BASE_HEADERS, **session.headers}
        body = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
        started = time.perf_counter()
        response = await mcp.http.post("/mcp", json=body, headers=headers)
        tally.latencies_ms.append((time.perf_counter() - started) * 1000)
        answer = response.json() if response.status_code == 200 else {}
        if answer.get("result", {}).get("structuredContent") != {"result": index + 1}:
            tally.failures.append(f"{response.status_code} {response.text[:120]}")


async def run_load(front: str, seconds: float) -> Tally:
    tally = Tally()
    until = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=WORKERS * 2)
    async with httpx.AsyncClient(base_url=front, timeout=10, limits=limits) as http:
        await asyncio.gather(*(worker(McpHttp(http), until, tally) for _ in range(WORKERS)))
    return tally


async def test_a_bounded_load_on_two_processes_fails_nothing_and_leaks_nothing(request: pytest.FixtureRequest) -> None:
    environment = shared_store_environment("redis", request, f"load-{secrets.token_hex(4)}")
    settings = {"STRATUS_SECRET_KEY": SECRET_KEY, "STRATUS_MAX_SESSIONS": "0", **environment}
    with stratus_processes(2, "tests.fixtures.apps:shared", settings) as urls:
        pids = [url.pid for url in urls if isinstance(url, ServerUrl)]
        with uvicorn_serving(RoundRobinProxy(urls)) as front:
            warm = await run_load(front, WARM_UP_SECONDS)
            before = {pid: (resident_kib(pid), open_fds(pid)) for pid in pids}
            measured = await run_load(front, LOAD_SECONDS)
            after = {pid: (resident_kib(pid), open_fds(pid)) for pid in pids}

    latencies = sorted(measured.latencies_ms)
    p99 = latencies[int(len(latencies) * 0.99)]
    logger.info(
        f"load: {len(latencies)} calls in {LOAD_SECONDS:.0f} s ({len(latencies) / LOAD_SECONDS:.0f}/s), "
        f"median {statistics.median(latencies):.1f} ms, p99 {p99:.1f} ms; "
        + "; ".join(
            f"pid {pid}: RSS {before[pid][0]} -> {after[pid][0]} KiB, fds {before[pid][1]} -> {after[pid][1]}"
            for pid in pids
        )
    )
    assert warm.failures == [] and measured.failures == [], (warm.failures + measured.failures)[:5]
    assert len(latencies) > WORKERS  # the load ran
    for pid in pids:
        rss_before, fds_before = before[pid]
        rss_after, fds_after = after[pid]
        assert rss_after <= rss_before * 1.05 + 1024, (pid, rss_before, rss_after)  # flat: 5 % (+1 MiB of slack)
        assert fds_after <= fds_before + 4, (pid, fds_before, fds_after)  # no leaked sockets or files


async def test_a_load_leaves_no_tasks_behind_on_the_server_loop(request: pytest.FixtureRequest) -> None:
    environment = shared_store_environment("redis", request, f"load-{secrets.token_hex(4)}")
    settings = Settings(
        store=environment["STRATUS_STORE"],
        store_prefix=environment["STRATUS_STORE_PREFIX"],
        secret_key=SECRET_KEY,
        max_sessions=0,
    )
    app = build_app(shared, settings)
    watched = LoopWatch(app)
    with uvicorn_serving(watched) as url:
        await run_load(url, WARM_UP_SECONDS)
        before = watched.tasks()
        tally = await run_load(url, min(LOAD_SECONDS, 4.0))
        after = watched.tasks()
        watched.run(app.shutdown())  # the store's connections close on the loop that opened them
    assert tally.failures == [], tally.failures[:5]
    assert after <= before + 2, (before, after)  # only what a new connection may hold open for a moment
