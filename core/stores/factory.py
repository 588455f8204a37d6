"""Build the stores a store URL names: the one place stores are composed.

Each backend is a sub-package (`memory`, `redis`, `dynamodb`) whose `builder.build` (a `StoresBuilder`) is imported
here only once a URL names that backend, so a cold start imports only the backend its URL names, and redis-py or
boto3 only when that backend's first request needs its client (`stratus.stores.lazy`).
"""

from __future__ import annotations

import time

from stratus.resilience.deadline import Clock
from stratus.stores.base import StoreOptions, Stores, StoresBuilder
from stratus.stores.bounded import bounded
from stratus.stores.urls import Backend, parse_store_url


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
    store = parse_store_url(url)
    options = StoreOptions(session_ttl_seconds, prefix, timeout, max_sessions, max_sessions_per_principal, clock)
    return bounded(builder(store.backend)(store, options), max_record_bytes)


def builder(backend: Backend) -> StoresBuilder:
    """The builder of `backend`, its package imported now (and only now)."""
    if backend == "redis":
        from stratus.stores.redis.builder import build as redis_build

        return redis_build
    if backend == "dynamodb":
        from stratus.stores.dynamodb.builder import build as dynamodb_build

        return dynamodb_build
    from stratus.stores.memory.builder import build as memory_build

    return memory_build
