"""The upstreams' tools lists cached in the shared store: for their TTL, until invalidated, per configuration."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import AsyncIterator

import pytest

from stratus.gateway.config import Upstream
from stratus.gateway.list_cache import ToolsCache
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from tests.fixtures.clocks import FakeClock

pytestmark = pytest.mark.anyio
TOOLS = [{"name": "search", "inputSchema": {"type": "object"}}]
GITHUB = Upstream(name="github", transport="http", url="https://api.example.com/mcp")


@pytest.fixture(params=["memory://", "redis://127.0.0.1:6379/0"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Stores, FakeClock]]:
    clock = FakeClock()
    built = build_stores(
        request.param, StoreOptions(session_ttl_seconds=600, prefix=f"gw-{secrets.token_hex(4)}", clock=clock)
    )
    yield built, clock
    await built.aclose()


async def test_a_cached_list_is_shared_until_its_ttl_passes(stores: tuple[Stores, FakeClock]) -> None:
    built, clock = stores
    one, other = ToolsCache(built.cache, ttl_seconds=300), ToolsCache(built.cache, ttl_seconds=300)  # two containers
    assert await one.get(GITHUB) is None
    await one.put(GITHUB, TOOLS)
    assert await other.get(GITHUB) == TOOLS
    clock.advance(301)
    assert await other.get(GITHUB) is None


async def test_a_list_changed_notification_or_a_new_configuration_misses_the_cache(
    stores: tuple[Stores, FakeClock],
) -> None:
    built, _ = stores
    cache = ToolsCache(built.cache)
    await cache.put(GITHUB, TOOLS)
    moved = dataclasses.replace(GITHUB, url="https://api2.example.com/mcp")
    assert await cache.get(moved) is None  # a changed configuration is another upstream
    hiding_a_tool = dataclasses.replace(GITHUB, disabled_tools=frozenset({"search"}))
    assert await cache.get(hiding_a_tool) == TOOLS  # what is exposed is filtered later, the list is the same
    await cache.invalidate(GITHUB)
    assert await cache.get(GITHUB) is None
