"""redis-py clients with bounded sockets and blocking connection pools: one for calls, one for long waits
(redis-py imported here only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from stratus.stores.urls import WAITING_CONNECTIONS

MAX_CONNECTIONS = 100
"""Connections one process's pool for calls opens at most (the store URL's `?max_connections=N` sets it)."""


def redis_waiting_client(url: str, *, timeout: float) -> Any:
    """A client for the long waits only, its pool apart from the calls' (the URL's `max_connections` sizes the
    calls' pool, not this one)."""
    parts = urlsplit(url)
    query = urlencode([(name, value) for name, value in parse_qsl(parts.query) if name != "max_connections"])
    return redis_client(parts._replace(query=query).geturl(), timeout=timeout, max_connections=WAITING_CONNECTIONS)


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


def closing(*clients: Any) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        for client in clients:
            if client is not None:
                await client.aclose()

    return close
