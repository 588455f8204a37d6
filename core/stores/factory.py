"""Build the stores a store URL names: the one place stores are composed.

Each backend is a sub-package (`memory`, `redis`, `dynamodb`) whose `builder.build` (a `StoresBuilder`) is imported
here only once a URL names that backend, so a cold start imports only the backend its URL names, and redis-py or
boto3 only when that backend's first request needs its client (`stratus.stores.lazy`).
"""

from __future__ import annotations

from stratus.stores.base import StoreOptions, Stores, StoresBuilder
from stratus.stores.bounded import bounded
from stratus.stores.urls import Backend, parse_store_url


def build_stores(url: str, options: StoreOptions, *, max_record_bytes: int = 0) -> Stores:
    """The stores for `url`, configured by `options`; a backend's client library is imported only here, only when
    chosen.

    `max_record_bytes` bounds every record they keep, the same on every backend (0: no bound; see
    `stratus.stores.bounded`).

    Raises:
        StoreConfigError: the URL is not usable.
    """
    store = parse_store_url(url)
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
