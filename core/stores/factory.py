"""Build the stores a store URL names. Backends' client libraries are imported only when chosen."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from core.stores.base import BreakerStore, CallGate, RateLimitStore, SequentialGate, SessionStore
from core.stores.urls import validate_store_url

if TYPE_CHECKING:
    from core.stores.extras import CacheStore, EventLogStore, PendingRequestStore, TaskStore


def _memory_events() -> EventLogStore:
    from core.stores.memory_extra import MemoryEventLogStore

    return MemoryEventLogStore()


def _memory_pending() -> PendingRequestStore:
    from core.stores.memory_extra import MemoryPendingRequestStore

    return MemoryPendingRequestStore()


def _memory_tasks() -> TaskStore:
    from core.stores.memory_extra import MemoryTaskStore

    return MemoryTaskStore()


def _memory_cache() -> CacheStore:
    from core.stores.memory_extra import MemoryCacheStore

    return MemoryCacheStore()


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store the server uses, built once per process (per Lambda cold start)."""

    sessions: SessionStore
    rate_limits: RateLimitStore
    breakers: BreakerStore
    events: EventLogStore = field(default_factory=_memory_events)
    pending: PendingRequestStore = field(default_factory=_memory_pending)
    tasks: TaskStore = field(default_factory=_memory_tasks)
    cache: CacheStore = field(default_factory=_memory_cache)
    gate: CallGate | None = None
    """Answers a call's store checks together; without one they run one after another."""
    close: Callable[[], Awaitable[None]] | None = None
    """Releases the backend's connections (at shutdown; a Lambda container never needs to)."""

    async def aclose(self) -> None:
        if self.close is not None:
            await self.close()

    def call_gate(self) -> CallGate:
        return self.gate or SequentialGate(self.sessions, self.rate_limits, self.breakers)


def build_stores(
    url: str,
    *,
    session_ttl_seconds: float,
    prefix: str = "stratus",
    timeout: float = 2.0,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Callable[[], float] = time.time,
) -> Stores:
    """The stores for `url`; a backend's client library is imported only here, only when chosen.

    `max_sessions` caps the live handshake-era sessions across every container sharing the store (0: no cap), and
    `max_sessions_per_principal` those of one authenticated principal (0: no quota; anonymous sessions have none).

    Raises:
        StoreConfigError: the URL is not usable.
    """
    scheme = validate_store_url(url)
    if scheme in ("redis", "rediss"):
        from core.stores.lazy import LazyClient
        from core.stores.redis import redis_client, redis_stores, redis_waiting_client

        client = LazyClient(lambda: redis_client(url, timeout=timeout))
        waiting = LazyClient(lambda: redis_waiting_client(url, timeout=timeout))
        return redis_stores(
            client,
            waiting_client=waiting,
            prefix=prefix,
            session_ttl_seconds=session_ttl_seconds,
            timeout=timeout,
            max_sessions=max_sessions,
            max_sessions_per_principal=max_sessions_per_principal,
            clock=clock,
        )
    if scheme == "dynamodb":
        from core.stores.dynamodb import dynamodb_client, dynamodb_stores
        from core.stores.lazy import LazyClient

        return dynamodb_stores(
            LazyClient(lambda: dynamodb_client(timeout=timeout)),
            urlsplit(url).netloc,
            prefix=prefix,
            session_ttl_seconds=session_ttl_seconds,
            timeout=timeout,
            max_sessions=max_sessions,
            max_sessions_per_principal=max_sessions_per_principal,
            clock=clock,
        )
    from core.stores.memory import MemoryBreakerStore, MemoryRateLimitStore, MemorySessionStore
    from core.stores.memory_extra import (
        MemoryCacheStore,
        MemoryEventLogStore,
        MemoryPendingRequestStore,
        MemoryTaskStore,
    )

    return Stores(
        sessions=MemorySessionStore(
            ttl_seconds=session_ttl_seconds,
            max_sessions=max_sessions,
            max_per_principal=max_sessions_per_principal,
            clock=clock,
        ),
        rate_limits=MemoryRateLimitStore(clock=clock),
        breakers=MemoryBreakerStore(clock=clock),
        events=MemoryEventLogStore(ttl_seconds=session_ttl_seconds, clock=clock),
        pending=MemoryPendingRequestStore(clock=clock),
        tasks=MemoryTaskStore(clock=clock),
        cache=MemoryCacheStore(clock=clock),
    )
