"""The store backends the contract tests run against: in-memory, and the real redis-server on 127.0.0.1:6379."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from core.stores.factory import Stores, build_stores
from core.stores.memory import MemoryBreakerStore, MemoryRateLimitStore, MemorySessionStore
from tests.core.pipeline.conftest import FakeClock

REDIS_URL = "redis://127.0.0.1:6379/0"
TTL = 600.0


@dataclass
class Backend:
    name: str
    stores: Stores
    clock: FakeClock
    redis: Any = None
    prefix: str = ""


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    clock = FakeClock()
    if request.param == "memory":
        stores = Stores(
            sessions=MemorySessionStore(ttl_seconds=TTL, clock=clock),
            rate_limits=MemoryRateLimitStore(clock=clock),
            breakers=MemoryBreakerStore(clock=clock),
        )
        yield Backend("memory", stores, clock)
        return
    prefix = f"stratus-test-{secrets.token_hex(4)}"
    stores = build_stores(REDIS_URL, session_ttl_seconds=TTL, prefix=prefix, clock=clock)
    client = stores.sessions.scripts.client  # type: ignore[attr-defined]
    try:
        yield Backend("redis", stores, clock, client, prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
