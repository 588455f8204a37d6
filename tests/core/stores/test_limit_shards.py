"""A limit every caller shares (a tool's, the overall one), spread over shard keys, on every backend: together the
shards never admit more than the limit, at twice the limit every shard fills, and at a demand equal to the limit
the shortfall stays within its stated bound (`stratus.resilience.limit_shards`: N * C / 2 for C containers)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from stratus.resilience.limit_shards import Rotation, shard_count, spread
from stratus.resilience.limiter import RateLimit
from stratus.stores.records import CallChecks
from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio

LIMIT = RateLimit(rate=400 / 3600, burst=400)  # 4 shards of 100; the frozen clock keeps one window / no refill
CONTAINERS = 8


async def _drive(backend: Backend, calls: int) -> tuple[Counter[str], list[float]]:
    """`calls` calls through the gate from CONTAINERS containers racing in turns; admitted calls per shard key and
    the refused calls' retry-after."""
    rotations = [Rotation() for _ in range(CONTAINERS)]
    admitted: Counter[str] = Counter()
    refused: list[float] = []

    async def one(rotation: Rotation) -> None:
        key, limit = spread("tool:hot", LIMIT, rotation)
        admission = await backend.stores.gate.admit(CallChecks(limits=((key, limit),)))
        decision = admission.decisions[0]
        if decision.allowed:
            admitted[key] += 1
        else:
            refused.append(decision.retry_after)

    # boto3 runs in worker threads and moto's in-process backend is not thread-safe (two conditional updates can
    # both pass), so there the containers take their turns one call at a time; the serialized moto server, like
    # DynamoDB, applies one request at a time and is raced.
    racing = backend.name != "dynamodb"
    for start in range(0, calls, CONTAINERS):
        turn = [one(rotation) for rotation in rotations[: calls - start]]
        if racing:
            await asyncio.gather(*turn)
        else:
            for call in turn:
                await call
    return admitted, refused


async def test_the_shards_together_never_admit_more_than_the_limit_and_each_fills(backend: Backend) -> None:
    shards = shard_count(LIMIT)
    assert shards == 4
    admitted, refused = await _drive(backend, 2 * int(LIMIT.burst))  # over LIMIT.burst + shards * CONTAINERS
    assert sum(admitted.values()) == LIMIT.burst
    assert sorted(admitted) == [f"tool:hot#{k}" for k in range(shards)]
    assert set(admitted.values()) == {LIMIT.burst / shards}  # no key takes more than its share
    assert len(refused) == LIMIT.burst and all(0 < after <= 3600 for after in refused)


async def test_at_a_demand_equal_to_the_limit_the_shortfall_is_within_its_bound(backend: Backend) -> None:
    admitted, _ = await _drive(backend, int(LIMIT.burst))
    assert LIMIT.burst - shard_count(LIMIT) * CONTAINERS / 2 <= sum(admitted.values()) <= LIMIT.burst
