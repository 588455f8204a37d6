"""Build the stores a store URL names: the one place stores are composed.

Each backend is a sub-package (`memory`, `redis`, `dynamodb`) imported here only inside the function that builds
it, so a cold start imports only the backend its URL names, and redis-py or boto3 only when that backend's first
request needs its client (`stratus.stores.lazy`).
"""

from __future__ import annotations

import time
from typing import Any

from stratus.resilience.deadline import Clock
from stratus.stores.base import Stores
from stratus.stores.bounded import bounded
from stratus.stores.urls import parse_store_url


def build_stores(
    url: str,
    *,
    session_ttl_seconds: float,
    prefix: str = "stratus",
    timeout: float = 2.0,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    max_record_bytes: int = 0,
    clock: Clock = time.time,
) -> Stores:
    """The stores for `url`; a backend's client library is imported only here, only when chosen.

    `max_record_bytes` bounds every record they keep, the same on every backend (0: no bound; see
    `stratus.stores.bounded`).

    `max_sessions` caps the live handshake-era sessions across every container sharing the store (0: no cap), and
    `max_sessions_per_principal` those of one authenticated principal (0: no quota; anonymous sessions have none).

    Raises:
        StoreConfigError: the URL is not usable.
    """
    return bounded(
        _backend_stores(url, session_ttl_seconds, prefix, timeout, max_sessions, max_sessions_per_principal, clock),
        max_record_bytes,
    )


def _backend_stores(
    url: str,
    session_ttl_seconds: float,
    prefix: str,
    timeout: float,
    max_sessions: int,
    max_sessions_per_principal: int,
    clock: Clock,
) -> Stores:
    store = parse_store_url(url)
    limits = {"max_sessions": max_sessions, "max_sessions_per_principal": max_sessions_per_principal}
    if store.backend == "redis":
        from stratus.stores.lazy import LazyClient
        from stratus.stores.redis.client import redis_calls_client, redis_waiting_client

        client = LazyClient(lambda: redis_calls_client(store, timeout=timeout))
        waiting = LazyClient(lambda: redis_waiting_client(store, timeout=timeout))
        return redis_stores(
            client,
            waiting_client=waiting,
            prefix=prefix,
            session_ttl_seconds=session_ttl_seconds,
            timeout=timeout,
            clock=clock,
            cluster=store.cluster,
            **limits,
        )
    if store.backend == "dynamodb":
        from stratus.stores.dynamodb.client import dynamodb_client
        from stratus.stores.lazy import LazyClient

        return dynamodb_stores(
            LazyClient(lambda: dynamodb_client(timeout=timeout)),
            store.table,
            prefix=prefix,
            session_ttl_seconds=session_ttl_seconds,
            timeout=timeout,
            clock=clock,
            **limits,
        )
    return memory_stores(session_ttl_seconds=session_ttl_seconds, clock=clock, **limits)


def memory_stores(
    *,
    session_ttl_seconds: float,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Clock = time.time,
) -> Stores:
    """Every store in this process's memory (one process only)."""
    from stratus.stores.memory.cache import MemoryCacheStore
    from stratus.stores.memory.limits import MemoryBreakerStore, MemoryRateLimitStore, SequentialGate
    from stratus.stores.memory.sessions import MemorySessionStore
    from stratus.stores.memory.streams import MemoryEventLogStore, MemoryPendingRequestStore
    from stratus.stores.memory.tasks import MemoryTaskStore

    sessions = MemorySessionStore(
        ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_per_principal=max_sessions_per_principal,
        clock=clock,
    )
    rate_limits = MemoryRateLimitStore(clock=clock)
    breakers = MemoryBreakerStore(clock=clock)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=MemoryEventLogStore(ttl_seconds=session_ttl_seconds, clock=clock),
        pending=MemoryPendingRequestStore(clock=clock),
        tasks=MemoryTaskStore(clock=clock),
        cache=MemoryCacheStore(clock=clock),
        gate=SequentialGate(sessions, rate_limits, breakers),
    )


def redis_stores(
    client: Any,
    *,
    prefix: str,
    session_ttl_seconds: float,
    timeout: float,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Clock = time.time,
    waiting_client: Any = None,
    cluster: bool = False,
) -> Stores:
    """Every store over one Redis client (and its connection pool). Long waits (a stream following its log, a call
    awaiting the client's reply) hold a connection each for as long as they last: `waiting_client`, a client of
    its own, keeps them from starving the calls of connections (by default they share `client`). `cluster`: the
    clients are Redis Cluster clients, so streams publish and follow on their shard's channels."""
    from stratus.stores.redis.cache import RedisCacheStore
    from stratus.stores.redis.client import closing
    from stratus.stores.redis.limits import RedisBreakerStore, RedisGate, RedisRateLimitStore
    from stratus.stores.redis.scripts import RedisScripts
    from stratus.stores.redis.sessions import RedisSessionStore
    from stratus.stores.redis.streams import RedisEventLogStore, RedisPendingRequestStore
    from stratus.stores.redis.tasks import RedisTaskStore

    scripts = RedisScripts(client, prefix, timeout=timeout, cluster=cluster)
    waits = scripts
    if waiting_client is not None:
        waits = RedisScripts(waiting_client, prefix, timeout=timeout, cluster=cluster)
    sessions = RedisSessionStore(
        scripts,
        ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_per_principal=max_sessions_per_principal,
        clock=clock,
    )
    rate_limits = RedisRateLimitStore(scripts, clock=clock)
    breakers = RedisBreakerStore(scripts, clock=clock)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=RedisEventLogStore(scripts, ttl_seconds=session_ttl_seconds, clock=clock, waits=waits),
        pending=RedisPendingRequestStore(scripts, clock=clock, waits=waits),
        tasks=RedisTaskStore(scripts, clock=clock),
        cache=RedisCacheStore(scripts, clock=clock),
        gate=RedisGate(sessions, rate_limits, breakers),
        close=closing(client, waiting_client),
    )


def dynamodb_stores(
    client: Any,
    table: str,
    *,
    prefix: str,
    session_ttl_seconds: float,
    timeout: float,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Clock = time.time,
) -> Stores:
    """Every store over one table."""
    from stratus.stores.dynamodb.cache import DynamoCacheStore
    from stratus.stores.dynamodb.limits import DynamoBreakerStore, DynamoGate, DynamoRateLimitStore
    from stratus.stores.dynamodb.sessions import DynamoSessionStore
    from stratus.stores.dynamodb.streams import DynamoEventLogStore, DynamoPendingRequestStore
    from stratus.stores.dynamodb.table import DynamoTable
    from stratus.stores.dynamodb.tasks import DynamoTaskStore

    dynamo = DynamoTable(client, table, prefix, timeout=timeout, clock=clock)
    sessions = DynamoSessionStore(
        dynamo,
        ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_per_principal=max_sessions_per_principal,
    )
    rate_limits = DynamoRateLimitStore(dynamo)
    breakers = DynamoBreakerStore(dynamo)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=DynamoEventLogStore(dynamo, ttl_seconds=session_ttl_seconds),
        pending=DynamoPendingRequestStore(dynamo),
        tasks=DynamoTaskStore(dynamo),
        cache=DynamoCacheStore(dynamo),
        gate=DynamoGate(sessions, rate_limits, breakers),
        close=dynamo.close,
    )
