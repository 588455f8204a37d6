"""The scheduled sweeper's bounded step: one run removes only a slice of the expired sessions, and repeated runs,
each resuming where the last stopped, remove every one of them while the live sessions stay. The slice is made
smaller than the sessions here (DynamoDB: roster pages of 5 entries, 2 pages a run, where a deployment reads 64
pages of 1 MB; Redis: batches of 10 due sessions, where a deployment takes 500). Time is the injected clock."""

from __future__ import annotations

import pytest

from stratus.stores.base import SessionStore
from stratus.stores.dynamodb.sessions import DynamoSessionStore
from stratus.stores.dynamodb.shards import SHARDS
from stratus.stores.records import SessionRecord
from stratus.stores.redis.sessions import RedisSessionStore
from tests.fixtures.store_backends import TTL, Backend

pytestmark = pytest.mark.anyio
EXPIRED = 150
LIVE = 5
PAGE_ENTRIES, STEP_PAGES = 5, 2
REDIS_BATCH = 10
RUNS = 2 * SHARDS // STEP_PAGES
"""Two full cycles over DynamoDB's shards (a run reads one page of each of at most `STEP_PAGES` shards here)."""


def stepped(backend: Backend) -> SessionStore:
    """Another container's view of the sessions, sweeping in small steps."""
    sessions = backend.stores.sessions
    if isinstance(sessions, DynamoSessionStore):
        return DynamoSessionStore(sessions.table, ttl_seconds=TTL, step_pages=STEP_PAGES, page_entries=PAGE_ENTRIES)
    if isinstance(sessions, RedisSessionStore):
        view = RedisSessionStore(sessions.scripts, ttl_seconds=TTL, clock=backend.clock)
        view.SWEEP_BATCH = REDIS_BATCH
        return view
    pytest.skip("the in-memory store sweeps all of one process's sessions at once: it has no slice")


def record(session_id: str) -> SessionRecord:
    return SessionRecord(session_id=session_id, protocol_version="2025-11-25")


async def test_repeated_sweep_steps_remove_every_expired_session_and_keep_the_live_ones(backend: Backend) -> None:
    if backend.name == "dynamodb-server":
        pytest.skip("moto in process shows the same; its server would only make the 150 creates slower")
    sessions = stepped(backend)
    for index in range(EXPIRED):
        await sessions.create(record(f"due-{index}"))
    backend.clock.advance(TTL + 1)
    for index in range(LIVE):
        await sessions.create(record(f"live-{index}"))

    removed = [await sessions.sweep_step()]
    assert 0 < removed[0] < EXPIRED  # one run is a slice, not the whole roster
    while sum(removed) < EXPIRED and len(removed) < RUNS:
        removed.append(await sessions.sweep_step())

    assert sum(removed) == EXPIRED, removed
    assert max(removed) <= (PAGE_ENTRIES * STEP_PAGES if isinstance(sessions, DynamoSessionStore) else REDIS_BATCH)
    for index in range(LIVE):
        assert await sessions.load(f"live-{index}") is not None
    assert (await sessions.census()).active == LIVE
