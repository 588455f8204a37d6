"""A call's outgoing messages wait for a client that does not read its stream in a bounded queue: progress and log
notifications are dropped oldest first, a request to the client never is, and a call whose queue is full of
messages that cannot be dropped fails rather than grow the server's memory."""

from __future__ import annotations

import asyncio
import json

import pytest

from stratus.request.outbound import MAX_QUEUED, ClientNotReadingError, Outbound, StreamLog
from stratus.stores.memory.streams import MemoryEventLogStore, MemoryPendingRequestStore

pytestmark = pytest.mark.anyio
BOUND = 5.0


def unsent(outbound: Outbound) -> list[dict[str, object]]:
    messages = []
    while outbound.messages:
        messages.append(outbound.messages.popleft()[1])
    return messages


async def test_progress_for_a_client_that_does_not_read_is_bounded_dropping_the_oldest_first() -> None:
    outbound = Outbound()
    for step in range(MAX_QUEUED * 3):
        await outbound.notify("notifications/progress", {"progressToken": "t", "progress": step})
    waiting = unsent(outbound)
    assert len(waiting) == MAX_QUEUED
    assert [message["params"]["progress"] for message in waiting] == list(range(MAX_QUEUED * 2, MAX_QUEUED * 3))  # type: ignore[index]
    assert outbound.dropped == MAX_QUEUED * 2


async def test_a_request_to_the_client_is_kept_while_log_messages_around_it_are_dropped() -> None:
    pending = MemoryPendingRequestStore()
    outbound = Outbound(pending)
    asking = asyncio.ensure_future(outbound.request("roots/list", {}, within=BOUND))
    async with asyncio.timeout(BOUND):
        while not outbound.messages:
            await outbound.arrival()
    for n in range(MAX_QUEUED + 10):
        await outbound.notify("notifications/message", {"level": "info", "data": n})
    waiting = unsent(outbound)
    assert len(waiting) == MAX_QUEUED
    request = waiting[0]
    assert request["method"] == "roots/list"
    assert waiting[-1]["params"] == {"level": "info", "data": MAX_QUEUED + 9}
    await pending.deliver(str(request["id"]), json.dumps({"result": {"roots": []}}))
    async with asyncio.timeout(BOUND):
        assert await asking == {"roots": []}


async def test_a_call_whose_queue_is_full_of_undroppable_messages_fails_and_droppable_ones_are_left_out() -> None:
    events = MemoryEventLogStore(ttl_seconds=60)
    outbound = Outbound()
    outbound.log = StreamLog(events, "s1", priming=False)
    for _ in range(MAX_QUEUED):
        await outbound.notify("notifications/resources/list_changed", {})
    await outbound.notify("notifications/progress", {"progressToken": "t", "progress": 1})
    assert len(outbound.messages) == MAX_QUEUED and outbound.dropped == 1
    with pytest.raises(ClientNotReadingError) as refused:
        await outbound.notify("notifications/resources/list_changed", {})
    assert "not reading" in str(refused.value) and "MAX_QUEUED" in str(refused.value)
    assert len(outbound.messages) == MAX_QUEUED
    # The dropped progress notification is still in the log, for a client that resumes the stream.
    logged = await events.read_after(outbound.log.key, 0)
    assert any("notifications/progress" in event.data for event in logged)
