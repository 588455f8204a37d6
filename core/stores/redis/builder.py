"""The Redis backend's builder: every store over one client (and its connection pool), and a second client for
the long waits."""

from __future__ import annotations

from typing import Any

from stratus.stores.base import StoreOptions, Stores
from stratus.stores.lazy import LazyClient
from stratus.stores.redis.cache import RedisCacheStore
from stratus.stores.redis.client import closing, redis_calls_client, redis_waiting_client
from stratus.stores.redis.limits import RedisBreakerStore, RedisGate, RedisRateLimitStore
from stratus.stores.redis.scripts import RedisScripts
from stratus.stores.redis.sessions import RedisSessionStore
from stratus.stores.redis.streams import RedisEventLogStore, RedisPendingRequestStore
from stratus.stores.redis.tasks import RedisTaskStore
from stratus.stores.urls import StoreUrl


def build(store: StoreUrl, options: StoreOptions) -> Stores:
    """Every store over the Redis server or cluster `store` names (a `StoresBuilder`); redis-py is imported when the
    first request needs a client."""
    client = LazyClient(lambda: redis_calls_client(store, timeout=options.timeout))
    waiting = LazyClient(lambda: redis_waiting_client(store, timeout=options.timeout))
    return redis_stores(client, options, waiting_client=waiting, cluster=store.cluster)


def redis_stores(client: Any, options: StoreOptions, *, waiting_client: Any = None, cluster: bool = False) -> Stores:
    """Every store over one Redis client (and its connection pool). Long waits (a stream following its log, a call
    awaiting the client's reply) hold a connection each for as long as they last: `waiting_client`, a client of
    its own, keeps them from starving the calls of connections (by default they share `client`). `cluster`: the
    clients are Redis Cluster clients, so streams publish and follow on their shard's channels."""
    scripts = RedisScripts(client, options.prefix, timeout=options.timeout, cluster=cluster)
    waits = scripts
    if waiting_client is not None:
        waits = RedisScripts(waiting_client, options.prefix, timeout=options.timeout, cluster=cluster)
    clock, ttl = options.clock, options.session_ttl_seconds
    sessions = RedisSessionStore(
        scripts,
        ttl_seconds=ttl,
        max_sessions=options.max_sessions,
        max_per_principal=options.max_sessions_per_principal,
        clock=clock,
    )
    rate_limits = RedisRateLimitStore(scripts, clock=clock)
    breakers = RedisBreakerStore(scripts, clock=clock)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=RedisEventLogStore(scripts, ttl_seconds=ttl, clock=clock, waits=waits),
        pending=RedisPendingRequestStore(scripts, clock=clock, waits=waits),
        tasks=RedisTaskStore(scripts, clock=clock),
        cache=RedisCacheStore(scripts, clock=clock),
        gate=RedisGate(sessions, rate_limits, breakers),
        close=closing(client, waiting_client),
    )
