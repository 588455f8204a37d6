"""Running tasks are bounded: per principal across containers (in the store), per process, and their cancellation
is heard through one store wait per process, which a failing store never turns into a cancellation.

The tools wait on events the tests set; every wait is bounded in time: nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import pytest
import redis.asyncio

from stratus import McpServer, Settings
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from stratus.stores.records import StreamEvent
from stratus.stores.redis.builder import redis_stores
from stratus.stores.redis.client import redis_client
from stratus.transport.app import build_app
from tests.fixtures.processes import free_port
from tests.fixtures.wire import HandshakeSession, McpHttp

pytestmark = pytest.mark.anyio
REDIS = "redis://127.0.0.1:6379/0"
BOUND = 5.0


@dataclasses.dataclass
class Gates:
    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    started: int = 0
    all_started: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    expected: int = 1


def held_server(gates: Gates) -> McpServer:
    server = McpServer("held", "1.0.0")

    @server.tool(task="optional")
    async def held() -> str:
        """Runs until the test releases it."""
        gates.started += 1
        if gates.started >= gates.expected:
            gates.all_started.set()
        await gates.release.wait()
        return "done"

    return server


async def session_over(stores: Stores, gates: Gates, settings: Settings | None = None) -> AsyncIterator[Any]:
    app = build_app(held_server(gates), settings or Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield await McpHttp(http).initialize("2025-11-25")
    await app.shutdown()  # stops the tasks' cancellation watch, closes the stores


async def start_task(session: HandshakeSession) -> httpx.Response:
    return await session.request("tools/call", {"name": "held", "arguments": {}, "task": {}})


def task_id_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    task_id: str = response.json()["result"]["task"]["taskId"]
    return task_id


async def status_after_end(stores: Stores, task_id: str) -> str:
    async with asyncio.timeout(BOUND):
        events = await stores.events.wait_after(f"task:{task_id}", 0, within=BOUND)
    assert events, f"task {task_id} did not end"
    task = await stores.tasks.get(task_id)
    assert task is not None
    return task.status


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    prefix = f"task-caps-{secrets.token_hex(4)}"
    yield prefix
    client = redis.asyncio.Redis.from_url(REDIS)
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def refusal(response: httpx.Response, status: int, setting: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["retry-after"] == "5"
    error = response.json()["error"]
    assert setting in error["message"] and error["data"]["setting"] == setting, error


async def test_a_principal_past_its_quota_is_refused_on_every_container_until_one_of_its_tasks_ends(
    redis_prefix: str,
) -> None:
    """Two containers share the store: the quota counts the principal's live tasks on both; a cancelled task (and a
    completed one) frees its place. Anonymous callers from one address share one quota."""
    options = StoreOptions(session_ttl_seconds=600, prefix=redis_prefix)
    one, other = build_stores(REDIS, options), build_stores(REDIS, options)
    settings = Settings(max_tasks_per_principal=1)
    gates = Gates()
    try:
        async for first in session_over(one, gates, settings):
            async for second in session_over(other, gates, settings):
                held = task_id_of(await start_task(first))
                refusal(await start_task(second), 429, "STRATUS_MAX_TASKS_PER_PRINCIPAL")
                assert (await first.request("tasks/cancel", {"taskId": held})).status_code == 200
                again = task_id_of(await start_task(second))
                refusal(await start_task(first), 429, "STRATUS_MAX_TASKS_PER_PRINCIPAL")
                gates.release.set()
                assert await status_after_end(other, again) == "completed"
                assert await status_after_end(one, task_id_of(await start_task(first))) == "completed"
    finally:
        await one.aclose()
        await other.aclose()


async def test_a_process_running_its_maximum_of_tasks_refuses_one_more_with_503_until_one_ends() -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    gates = Gates()
    async for session in session_over(stores, gates, Settings(max_tasks=1, max_tasks_per_principal=0)):
        running = task_id_of(await start_task(session))
        refusal(await start_task(session), 503, "STRATUS_MAX_TASKS")
        gates.release.set()
        assert await status_after_end(stores, running) == "completed"
        async with asyncio.timeout(BOUND):
            while True:  # the run's own end comes just after its outcome is recorded: bounded in time, no sleep
                response = await start_task(session)
                if response.status_code == 200:  # each try is a request, which lets the run finish
                    break
        assert await status_after_end(stores, task_id_of(response)) == "completed"


async def test_many_running_tasks_share_one_store_wait_for_their_cancellation(redis_prefix: str) -> None:
    """Ten tasks on a process whose pool for long waits has two connections leave room for another long wait, all
    run to their end, and one of them is still stopped by tasks/cancel: they do not hold a store connection each."""
    options = StoreOptions(session_ttl_seconds=600, prefix=redis_prefix, timeout=0.5)
    calls = redis_client(REDIS, timeout=0.5)
    stores = redis_stores(calls, options, waiting_client=redis_client(REDIS, timeout=0.5, max_connections=2))
    gates = Gates(expected=10)
    try:
        async for session in session_over(stores, gates):
            ids = [task_id_of(await start_task(session)) for _ in range(10)]
            async with asyncio.timeout(BOUND):
                await gates.all_started.wait()
            # Another long wait (a client's stream, a call awaiting its client) still finds a connection, for longer
            # than the pool lets a wait queue for one (0.5 s), while the ten tasks run.
            assert await stores.pending.wait(f"probe-{secrets.token_hex(4)}", within=0.6) is None
            cancelled = await session.request("tasks/cancel", {"taskId": ids[0]})
            assert cancelled.json()["result"]["status"] == "cancelled", cancelled.text
            gates.release.set()
            assert [await status_after_end(stores, task_id) for task_id in ids[1:]] == ["completed"] * 9
    finally:
        await stores.aclose()


class Heard(logging.Handler):
    """Sets an event when the task cancellation watch reports a store failure."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.failed = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "cancellation watch failed" in record.getMessage():
            self.failed.set()


async def test_a_store_failure_while_watching_for_cancellation_never_cancels_a_task() -> None:
    """The store's waits fail (here: a Redis nobody listens on); the running task is not cancelled by it and
    completes once its tool returns."""
    memory = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    down = build_stores(f"redis://127.0.0.1:{free_port()}/0", StoreOptions(session_ttl_seconds=600, timeout=0.5))
    failing_waits = memory.replace(
        events=_FailingWaits(memory, down),
        pending=down.pending,
    )
    heard = Heard()
    logger = logging.getLogger("stratus.tasks")
    logger.addHandler(heard)
    gates = Gates()
    try:
        async for session in session_over(failing_waits, gates):
            task_id = task_id_of(await start_task(session))
            async with asyncio.timeout(BOUND):
                await heard.failed.wait()  # the watch failed at least once while the task runs
            gates.release.set()
            assert await status_after_end(memory, task_id) == "completed"
    finally:
        logger.removeHandler(heard)
        await down.aclose()


class _FailingWaits:
    """An event log whose appends and reads work (memory) and whose waits go to an unreachable Redis."""

    def __init__(self, working: Stores, down: Stores) -> None:
        self.working = working.events
        self.down = down.events

    async def append(self, stream: str, data: str) -> int:
        return await self.working.append(stream, data)

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        return await self.working.read_after(stream, seq)

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        return await self.working.wait_after(stream, seq, within)

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        return await self.down.wait_any(after, within)


@contextlib.asynccontextmanager
async def anonymous_callers(app: Any, *addresses: str) -> AsyncIterator[list[HandshakeSession]]:
    """A session for each source address (the connection's peer, as uvicorn would report it) on one app."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for address in addresses:
            transport = httpx.ASGITransport(app=app, client=(address, 50000))
            http = await stack.enter_async_context(httpx.AsyncClient(transport=transport, base_url="http://localhost"))
            sessions.append(await McpHttp(http).initialize("2025-11-25"))
        yield sessions


async def test_one_anonymous_caller_cannot_take_every_anonymous_task_place() -> None:
    """Auth off: each source address has a quota of its own; a forged X-Forwarded-For moves nobody to another's
    quota, and an IPv6 caller's whole /64 counts as one."""
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    app = build_app(held_server(Gates()), Settings(max_tasks_per_principal=1), stores=stores)
    try:
        async with anonymous_callers(app, "198.51.100.1", "198.51.100.2", "2001:db8::1", "2001:db8::2") as sessions:
            flooder, other, six, six_neighbour = sessions
            task_id_of(await start_task(flooder))
            refused = await flooder.request(
                "tools/call",
                {"name": "held", "arguments": {}, "task": {}},
                headers={"x-forwarded-for": "198.51.100.9"},
            )
            refusal(refused, 429, "STRATUS_MAX_TASKS_PER_PRINCIPAL")
            assert "this address" in refused.json()["error"]["message"]
            task_id_of(await start_task(other))  # the flooder's tasks leave the others' places free
            task_id_of(await start_task(six))
            refusal(await start_task(six_neighbour), 429, "STRATUS_MAX_TASKS_PER_PRINCIPAL")
    finally:
        await app.shutdown()


async def test_behind_the_web_adapter_anonymous_quotas_count_the_request_contexts_source_address() -> None:
    """Every request reaches uvicorn from the adapter on 127.0.0.1; the caller's address is the request context's
    `sourceIp`, which the adapter writes."""
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    settings = Settings(max_tasks_per_principal=1, trust_request_context_header=True)
    app = build_app(held_server(Gates()), settings, stores=stores)

    def context(address: str) -> dict[str, str]:
        return {"x-amzn-request-context": json.dumps({"domainName": "localhost", "http": {"sourceIp": address}})}

    try:
        async with anonymous_callers(app, "127.0.0.1") as (session,):
            call = {"name": "held", "arguments": {}, "task": {}}
            task_id_of(await session.request("tools/call", call, headers=context("203.0.113.1")))
            refusal(
                await session.request("tools/call", call, headers=context("203.0.113.1")),
                429,
                "STRATUS_MAX_TASKS_PER_PRINCIPAL",
            )
            task_id_of(await session.request("tools/call", call, headers=context("203.0.113.2")))
    finally:
        await app.shutdown()


async def test_an_anonymous_callers_task_lives_at_most_the_anonymous_ttl_whatever_it_asks() -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    app = build_app(held_server(Gates()), Settings(anonymous_task_ttl_seconds=600), stores=stores)
    try:
        async with anonymous_callers(app, "198.51.100.1") as (session,):
            day = {"name": "held", "arguments": {}, "task": {"ttl": 86_400_000}}
            created = (await session.request("tools/call", day)).json()["result"]["task"]
            assert created["ttl"] == 600_000
            task = await stores.tasks.get(created["taskId"])
            assert task is not None and task.expires_at - task.created_at <= 600
            short = {"name": "held", "arguments": {}, "task": {"ttl": 60_000}}
            assert (await session.request("tools/call", short)).json()["result"]["task"]["ttl"] == 60_000
    finally:
        await app.shutdown()
