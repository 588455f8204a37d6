"""On DynamoDB (moto's server), the streams one process holds share one poll of the server-wide notification log:
many waiters cost the reads of one, and what another container (store view) publishes still reaches every one."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from stratus.protocol.notifications import NOTIFICATIONS
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.streams import DynamoEventLogStore
from stratus.stores.dynamodb.table import DynamoTable

pytestmark = pytest.mark.anyio
WAITERS = 50


@pytest.fixture
def table(server_table: str) -> str:
    """This module's containers meet on moto's server."""
    return server_table


def view(table: str, queries: Counter[str] | None = None, *, third: asyncio.Event | None = None) -> DynamoEventLogStore:
    """One container's event log store, its own client; its requests counted into `queries`, `third` set once it
    has sent three Queries."""
    client = dynamodb_client(timeout=30.0)
    loop = asyncio.get_running_loop()
    if queries is not None:

        def heard(model: Any, **_: Any) -> None:  # on botocore's thread
            queries[model.name] += 1
            if third is not None and queries["Query"] == 3:
                loop.call_soon_threadsafe(third.set)

        client.meta.events.register("before-parameter-build.dynamodb", heard)
    return DynamoEventLogStore(DynamoTable(client, table, "t", timeout=30.0))


async def test_fifty_streams_in_one_process_poll_the_log_as_one_and_all_get_a_notice_from_elsewhere(
    table: str,
) -> None:
    requests: Counter[str] = Counter()
    polling = asyncio.Event()
    here, elsewhere = view(table, requests, third=polling), view(table)
    seen = await elsewhere.append(NOTIFICATIONS, "before")
    waiting = [asyncio.ensure_future(here.wait_after(NOTIFICATIONS, seen, within=20.0)) for _ in range(WAITERS)]
    await asyncio.wait_for(polling.wait(), 20.0)  # every waiter has joined and the shared poll is under way
    loop_task = here.polls._polls[NOTIFICATIONS].task
    published = await elsewhere.append(NOTIFICATIONS, "after")
    results = await asyncio.wait_for(asyncio.gather(*waiting), 20.0)
    assert all([(event.seq, event.data) for event in events] == [(published, "after")] for events in results)
    # each polling on its own, the fifty made 73 Queries here; sharing one poll, 4 (one waiter's pace: 10-250 ms)
    assert requests["Query"] <= 40
    assert set(requests) == {"Query"}
    assert loop_task is not None
    await asyncio.wait_for(loop_task, 5.0)  # the loop ends with its last waiter
    assert here.polls._polls == {}


async def test_a_waiter_behind_the_shared_read_still_gets_everything_after_its_position(table: str) -> None:
    here, elsewhere = view(table), view(table)
    first = await elsewhere.append(NOTIFICATIONS, "one")
    await elsewhere.append(NOTIFICATIONS, "two")
    ahead = asyncio.ensure_future(here.wait_after(NOTIFICATIONS, first + 1, within=20.0))
    await asyncio.sleep(0)  # it joins (and starts the poll) before its first pause
    await asyncio.wait_for(here.polls._polls[NOTIFICATIONS].read.wait(), 20.0)  # the shared read, after "two"
    behind = await asyncio.wait_for(here.wait_after(NOTIFICATIONS, 0, within=20.0), 20.0)
    assert [event.data for event in behind] == ["one", "two"]
    third = await elsewhere.append(NOTIFICATIONS, "three")
    assert [(event.seq, event.data) for event in await asyncio.wait_for(ahead, 20.0)] == [(third, "three")]


async def test_a_failed_shared_read_fails_every_waiter_as_its_own_read_would_and_the_next_wait_reads_again(
    table: str,
) -> None:
    missing = view(f"{table}-missing")
    with pytest.raises(Exception) as alone:  # whatever a read of its own raises, the shared one does
        await missing.read_after(NOTIFICATIONS, 0)
    waiting = [missing.wait_after(NOTIFICATIONS, 0, within=5.0) for _ in range(3)]
    failures = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 20.0)
    assert [type(failure) for failure in failures] == [type(alone.value)] * 3
    with pytest.raises(type(alone.value)):  # a new wait starts a new poll, which reads again
        await asyncio.wait_for(missing.wait_after(NOTIFICATIONS, 0, within=5.0), 20.0)
