"""The Redis stores on a Redis Cluster whose topology changes while calls run.

What Redis promises (https://redis.io/docs/latest/operate/oss_and_stack/management/scaling/): replication is
asynchronous, so when a primary fails and its replica takes over, writes the primary acknowledged but had not yet
passed on can be lost; a manual failover (`CLUSTER FAILOVER` on a replica) loses none, because the replica takes
over only once it has processed the primary's whole replication stream. Here a primary fails over by hand while
sessions are created and events appended: calls caught in the switch may fail with `StoreUnavailableError` (a 503
that says to retry), and every write that was acknowledged is still there afterwards. A primary killed outright
makes calls on its slots fail with that same 503 until its replica takes over, and then they succeed again.
"""

from __future__ import annotations

import secrets

import anyio
import pytest

from stratus.errors import StoreUnavailableError
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from stratus.stores.records import SessionRecord
from stratus.stores.urls import WAITING_CONNECTIONS, parse_store_url
from tests.fixtures.clocks import FakeClock
from tests.fixtures.redis_cluster import OwnRedisCluster
from tests.fixtures.store_backends import TTL

CALLS_AFTER_FAILOVER = 20
MAX_CALLS = 2000
TAKEOVER_SECONDS = 20.0
"""How long a killed primary's slots may stay unserved: `cluster-node-timeout` (1 s here) before the replica is
elected, the election, and the client finding the new primary."""


@pytest.mark.anyio
async def test_a_manual_failover_while_calls_run_loses_no_acknowledged_write(redis_cluster: OwnRedisCluster) -> None:
    prefix = f"failover-{secrets.token_hex(4)}"
    stores = build_stores(redis_cluster.url, StoreOptions(session_ttl_seconds=TTL, prefix=prefix, clock=FakeClock()))
    roster_primary = redis_cluster.primary_of(f"{prefix}:{{roster}}:expires")
    sessions: list[str] = []
    events: list[tuple[int, str]] = []
    refused = 0  # calls caught in the switch: a 503 that says to retry
    before_the_switch = 0
    running, failed_over = anyio.Event(), anyio.Event()

    async def calls() -> None:
        nonlocal refused
        after = 0
        for n in range(MAX_CALLS):
            try:
                await stores.sessions.create(SessionRecord(session_id=f"s-{n}", protocol_version="2025-11-25"))
                sessions.append(f"s-{n}")
                running.set()
                events.append((await stores.events.append("stream", f"e{n}"), f"e{n}"))
            except StoreUnavailableError:
                refused += 1
            after += failed_over.is_set()
            if after >= CALLS_AFTER_FAILOVER:
                return

    async def fail_over() -> None:
        nonlocal before_the_switch
        await running.wait()
        await anyio.to_thread.run_sync(redis_cluster.fail_over, roster_primary)
        before_the_switch = len(sessions)
        failed_over.set()

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(calls)
                group.start_soon(fail_over)
        assert redis_cluster.primary_of(f"{prefix}:{{roster}}:expires") != roster_primary
        assert 0 < before_the_switch < len(sessions)  # calls were acknowledged both before the switch and after it
        for session_id in sessions:
            assert await stores.sessions.load(session_id) is not None, session_id
        census = await stores.sessions.census()
        assert census.active >= len(sessions)
        stored = {(event.seq, event.data) for event in await stores.events.read_after("stream", 0)}
        assert set(events) <= stored
        # A follower after the switch subscribes on the stream's new primary and is woken there.
        last = max(seq for seq, _ in stored)
        woken: list[str] = []

        async def follow() -> None:
            woken.extend(event.data for event in await stores.events.wait_after("stream", last, within=30))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(follow)
                await anyio.wait_all_tasks_blocked()
                await stores.events.append("stream", "after")
        assert woken == ["after"]
    finally:
        await stores.aclose()


@pytest.mark.anyio
async def test_calls_on_a_killed_primarys_slots_answer_503_until_its_replica_takes_over(
    redis_cluster: OwnRedisCluster,
) -> None:
    prefix = f"takeover-{secrets.token_hex(4)}"
    stores = build_stores(redis_cluster.url, StoreOptions(session_ttl_seconds=TTL, prefix=prefix, clock=FakeClock()))
    roster_primary = redis_cluster.primary_of(f"{prefix}:{{roster}}:expires")
    refused = 0
    try:
        await stores.sessions.create(SessionRecord(session_id="before", protocol_version="2025-11-25"))
        redis_cluster.kill(roster_primary)
        with anyio.fail_after(TAKEOVER_SECONDS):
            for n in range(MAX_CALLS):
                try:
                    await stores.sessions.create(SessionRecord(session_id=f"s-{n}", protocol_version="2025-11-25"))
                    break
                except StoreUnavailableError:
                    refused += 1
        assert refused > 0  # the slots were unserved for a while, and said so with the retryable 503
        assert await stores.sessions.load(f"s-{n}") is not None
        assert redis_cluster.primary_of(f"{prefix}:{{roster}}:expires") != roster_primary
    finally:
        await stores.aclose()
        await anyio.to_thread.run_sync(redis_cluster.restart, roster_primary)


def test_each_node_is_reached_with_the_urls_credentials_tls_and_pool_size() -> None:
    from redis.asyncio.connection import SSLConnection

    from stratus.stores.redis.client import redis_calls_client, redis_waiting_client

    url = "rediss+cluster://app:secret@127.0.0.1:7000,127.0.0.1:7001?max_connections=7"
    store = parse_store_url(url)
    calls, waits = redis_calls_client(store, timeout=1.5), redis_waiting_client(store, timeout=1.5)
    assert sorted(calls.nodes_manager.startup_nodes) == ["127.0.0.1:7000", "127.0.0.1:7001"]
    options = calls.connection_kwargs
    assert (options["connection_class"], options["username"], options["password"]) == (SSLConnection, "app", "secret")
    assert (options["max_connections"], options["socket_timeout"]) == (7, 1.5)
    assert waits.connection_kwargs["max_connections"] == WAITING_CONNECTIONS  # the waits' pool is sized apart
