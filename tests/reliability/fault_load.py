"""Redis broken under bounded load: clients calling a rate-limited tool through uvicorn while a fault is done to
the test's own redis-server, and what they saw (statuses, recovery time, which sessions survived).

Each client opens a handshake-era session and calls the tool in it as fast as answers come: a lost session
(404) is opened again, a refused call (503) is tried again. Once every client has made `WARM_CALLS` calls the
fault begins; the run ends when every client has had a call that started after the fault ended answered 200,
or after `RUN_SECONDS` (a failure). Every wait is bounded; nothing sleeps.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import httpx

from core import McpServer, Settings, build_app
from core.resilience.limiter import RateLimit
from tests.redis_server import OwnRedis
from tests.servers import LoopWatch, uvicorn_serving
from tests.wire import McpHttp, initialize_message

logger = logging.getLogger("stratus.tests.faults")
STORE_TIMEOUT = 0.5
CLIENTS = 8
WARM_CALLS = 10
RUN_SECONDS = 30.0
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "limited"}}


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


def redis_settings(redis: OwnRedis) -> Settings:
    return Settings(store=redis.url, secret_key="k", store_timeout_seconds=STORE_TIMEOUT, max_sessions=0)


@dataclass(frozen=True, slots=True)
class Fault:
    """Something done to Redis: `begin`, then `end` (at once, or once the clients have seen a 503 when
    `end_after_refusal`); without an `end`, the fault is over `lasts` seconds after `begin` returned."""

    name: str
    begin: Callable[[OwnRedis], object]
    end: Callable[[OwnRedis], object] | None = None
    lasts: float = 0.0
    end_after_refusal: bool = False


@dataclass
class LoadClient:
    session: str | None = None
    session_at_fault: str | None = None
    recovered: bool = False


@dataclass
class FaultRun:
    """What the clients saw; times are `time.monotonic()` seconds."""

    fault: Fault
    until: float
    clients: list[LoadClient] = field(default_factory=lambda: [LoadClient() for _ in range(CLIENTS)])
    statuses: Counter[int] = field(default_factory=Counter)
    undocumented_refusals: int = 0
    """503s without `Retry-After: 1` and JSON-RPC -31502."""
    wrong_answers: int = 0
    """Calls answered 200 with anything but the tool's result."""
    slowest: float = 0.0
    warm_calls: Counter[int] = field(default_factory=Counter)
    began: float | None = None
    ended: float | None = None
    first_success: float | None = None
    """The first tools/call answered 200 after the fault ended (seconds after it ended)."""
    all_recovered: float | None = None
    """When the last client had a call started after the fault answered 200 (seconds after the fault ended)."""
    active_sessions: int | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    refused: anyio.Event = field(default_factory=anyio.Event)

    @property
    def sessions_kept(self) -> int:
        """Clients still in the session they had when the fault began."""
        return sum(1 for client in self.clients if client.session == client.session_at_fault)

    def note(self, me: int, response: httpx.Response, started: float, *, call: bool) -> None:
        finished = time.monotonic()
        self.statuses[response.status_code] += 1
        self.slowest = max(self.slowest, finished - started)
        if response.status_code == 503:
            self.refused.set()
            code = response.json().get("error", {}).get("code")
            if response.headers.get("retry-after") != "1" or code != -31502:
                self.undocumented_refusals += 1
        if not call or response.status_code != 200:
            return
        if response.json().get("result", {}).get("content") != [{"type": "text", "text": "ok"}]:
            self.wrong_answers += 1
        if self.began is None:
            self.warm_calls[me] += 1
            if len(self.warm_calls) == CLIENTS and min(self.warm_calls.values()) >= WARM_CALLS:
                self.ready.set()
        elif self.ended is not None and finished >= self.ended:
            if self.first_success is None:
                self.first_success = finished - self.ended
            if started >= self.ended and not self.clients[me].recovered:
                self.clients[me].recovered = True
                if all(client.recovered for client in self.clients):
                    self.all_recovered = finished - self.ended

    def figures(self) -> str:
        def ms(seconds: float | None) -> str:
            return "-" if seconds is None else f"{seconds * 1000:.0f} ms"

        return (
            f"{self.fault.name} under load: {dict(sorted(self.statuses.items()))}, slowest {ms(self.slowest)}, "
            f"fault lasted {ms(None if self.began is None or self.ended is None else self.ended - self.began)}, "
            f"first success {ms(self.first_success)} and every client served again {ms(self.all_recovered)} "
            f"after it ended, sessions kept {self.sessions_kept}/{CLIENTS}, active sessions {self.active_sessions}"
        )


async def load_client(mcp: McpHttp, run: FaultRun, me: int) -> None:
    """One client: a session, the tool called in it; a lost session opened again, a refused call tried again."""
    client = run.clients[me]
    while time.monotonic() < run.until and not client.recovered:
        started = time.monotonic()
        if client.session is None:
            response = await mcp.post(initialize_message())
            if response.status_code == 200:
                client.session = response.headers["mcp-session-id"]
            run.note(me, response, started, call=False)
            continue
        headers = {"mcp-session-id": client.session, "mcp-protocol-version": "2025-11-25"}
        response = await mcp.post(CALL, headers)
        if response.status_code == 404:
            client.session = None
        run.note(me, response, started, call=True)


async def run_fault_under_load(redis: OwnRedis, fault: Fault) -> FaultRun:
    """Serve the fault server over `redis` through uvicorn, load it, do `fault` once the load is warm, and
    return what the clients saw (also logged: run with `-o log_cli=true --log-cli-level=INFO`)."""
    app = build_app(fault_server(), redis_settings(redis))
    watched = LoopWatch(app)
    run = FaultRun(fault, until=time.monotonic() + RUN_SECONDS)
    with uvicorn_serving(watched) as url:
        with anyio.fail_after(RUN_SECONDS + 5):  # the clients stop by themselves at `run.until`
            async with httpx.AsyncClient(base_url=url, timeout=10) as http, anyio.create_task_group() as load:
                for me in range(CLIENTS):
                    load.start_soon(load_client, McpHttp(http), run, me)
                await run.ready.wait()
                for client in run.clients:
                    client.session_at_fault = client.session
                run.began = time.monotonic()
                await anyio.to_thread.run_sync(fault.begin, redis)
                if fault.end is not None:
                    if fault.end_after_refusal:
                        await run.refused.wait()
                    await anyio.to_thread.run_sync(fault.end, redis)
                    run.ended = time.monotonic()
                else:  # counted from when Redis surely had it: a call started later started after its end
                    run.ended = time.monotonic() + fault.lasts
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            run.active_sessions = (await http.get("/health")).json()["sessions"]["activeSessions"]
        watched.run(app.shutdown())  # the store's connections close on the loop that opened them
    logger.info(run.figures())
    return run
