"""redis-py clients with bounded sockets and bounded connection pools: one for calls, one for long waits; of one
Redis server (or ElastiCache Serverless) or of a Redis Cluster (redis-py imported here only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from stratus.stores.urls import WAITING_CONNECTIONS, StoreUrl

MAX_CONNECTIONS = 100
"""Connections one process's pool for calls opens at most (the store URL's `?max_connections=N` sets it)."""


def redis_waiting_client(store: StoreUrl, *, timeout: float) -> Any:
    """A client for the long waits only, its pool apart from the calls' (the URL's `max_connections` sizes the
    calls' pool, not this one)."""
    return _store_client(store, timeout, WAITING_CONNECTIONS)


def redis_calls_client(store: StoreUrl, *, timeout: float) -> Any:
    """The client for calls: of a cluster for `redis+cluster://` and `rediss+cluster://`, else of one server."""
    return _store_client(store, timeout, store.max_connections or MAX_CONNECTIONS)


def _store_client(store: StoreUrl, timeout: float, max_connections: int) -> Any:
    if store.cluster:
        return redis_cluster_client(store, timeout=timeout, max_connections=max_connections)
    return redis_client(store.redis_url, timeout=timeout, max_connections=max_connections)


def redis_client(url: str, *, timeout: float, max_connections: int = MAX_CONNECTIONS) -> Any:
    """A client for `url` (`redis://` or `rediss://`, password and database in the URL) with bounded sockets and a
    bounded pool.

    The pool opens at most `max_connections` (the URL's `?max_connections=N` wins). A call that finds them all
    busy waits for one to come back, at most `timeout` seconds, and then fails like a Redis that does not answer
    (`StoreUnavailableError`, 503); a burst of concurrent calls therefore queues instead of being refused.
    """
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        # One immediate retry replaces a pooled connection that died (e.g. Redis restarted); more would only wait.
        retry=Retry(NoBackoff(), 1),
        health_check_interval=30,
    )
    return Redis.from_pool(pool)


def redis_cluster_client(store: StoreUrl, *, timeout: float, max_connections: int = MAX_CONNECTIONS) -> Any:
    """A Redis Cluster client for `redis+cluster://` (`rediss+cluster://`: TLS): it learns the slots from any node
    named, sends each command to the primary holding its key's slot, follows MOVED and ASK redirections (during a
    resharding) and, after a failover, finds the new primary.

    Each node's pool opens at most `max_connections` (the calls': the URL's `?max_connections=N`). Unlike one
    server's pool, a node's pool that has them all busy refuses at once (`StoreUnavailableError`, 503) instead of
    waiting.
    """
    from redis.asyncio.cluster import ClusterNode, RedisCluster
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.connection import parse_url

    options: dict[str, Any] = {
        "max_connections": max_connections,
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
        "health_check_interval": 30,
        # On a connection error the client asks the cluster for its slots again and retries: a primary that
        # failed over answers again from its replica. Every call stays bounded by `timeout` (RedisScripts).
        "retry": Retry(ExponentialBackoff(cap=0.25, base=0.025), 3),
        **parse_url(store.redis_url),  # type: ignore[no-untyped-call]
    }
    if options.pop("connection_class", None) is not None:
        options["ssl"] = True  # parse_url names the TLS connection class for rediss://
    options.pop("db", None)
    seeds = [ClusterNode(host, port) for host, port in store.cluster_nodes[1:]]
    return RedisCluster(startup_nodes=seeds, **options)


def closing(*clients: Any) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        for client in clients:
            if client is not None:
                await client.aclose()

    return close
