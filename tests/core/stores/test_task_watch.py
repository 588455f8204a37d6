"""On every backend: one watch hears the cancellation of any of the tasks running in a process (one store wait for
all of them), and a principal's places for live tasks are counted in the store, freed when a task ends or expires."""

from __future__ import annotations

import asyncio

import pytest

from stratus.errors import TooManyTasksError
from stratus.protocol.task_quota import PrincipalTaskQuota
from stratus.protocol.task_watch import CancellationWatch, task_stream
from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio
BOUND = 10.0


async def test_one_watch_hears_which_of_several_running_tasks_is_cancelled(backend: Backend) -> None:
    events = backend.stores.events
    watch = CancellationWatch(events)
    try:
        first, second = watch.watch("t-first"), watch.watch("t-second")
        await events.append(task_stream("t-first"), "input_required")  # another change of state: not a cancellation
        await events.append(task_stream("t-second"), "cancelled")
        async with asyncio.timeout(BOUND):
            await second
        assert not first.done()
        await events.append(task_stream("t-late"), "cancelled")  # cancelled before its run started watching
        async with asyncio.timeout(BOUND):
            await watch.watch("t-late")
        watch.forget("t-second")
        watch.forget("t-late")
        assert watch.watching == 1 and not first.done()
    finally:
        await watch.aclose()
    assert watch.watching == 0 and first.cancelled()


async def test_a_principal_holds_at_most_its_quota_of_places_freed_when_a_task_ends_or_expires(
    backend: Backend,
) -> None:
    quota = PrincipalTaskQuota(backend.stores.cache, 2)
    held = [await quota.take("ana", ttl_seconds=60), await quota.take("ana", ttl_seconds=600)]
    with pytest.raises(TooManyTasksError) as refused:
        await quota.take("ana", ttl_seconds=60)
    assert refused.value.http_status == 429
    assert refused.value.data["setting"] == "STRATUS_MAX_TASKS_PER_PRINCIPAL"
    assert await quota.take("bob", ttl_seconds=60) is not None  # another principal has its own places
    await quota.give_back(held[1])  # the task ended
    again = await quota.take("ana", ttl_seconds=600)
    backend.clock.advance(120)  # the first task expired: its place with it
    assert await quota.take("ana", ttl_seconds=60) not in (None, again)
    assert await PrincipalTaskQuota(backend.stores.cache, 0).take("ana", ttl_seconds=60) is None  # no quota
