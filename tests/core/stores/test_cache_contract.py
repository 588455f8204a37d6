"""The contract of the cache (values that live for their TTL, keys claimed once), for every backend."""

from __future__ import annotations

import pytest

from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio


async def test_cached_values_live_for_their_ttl(backend: Backend) -> None:
    cache = backend.stores.cache
    await cache.set("tools:upstream-a", '["x"]', ttl_seconds=300)
    assert await cache.get("tools:upstream-a") == '["x"]'
    backend.clock.advance(301)
    assert await cache.get("tools:upstream-a") is None
    await cache.set("k", "v", ttl_seconds=300)
    await cache.delete("k")
    assert await cache.get("k") is None


async def test_a_key_is_claimed_once_until_it_expires(backend: Backend) -> None:
    cache = backend.stores.cache
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is True
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is False
    backend.clock.advance(61)
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is True
