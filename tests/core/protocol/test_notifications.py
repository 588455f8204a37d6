"""Following the server-wide notification log: in order, from a position, across a gap only after its grace."""

from __future__ import annotations

import anyio
import pytest

from stratus.protocol.notifications import NOTIFICATIONS, NotificationFollower, NotificationLog
from stratus.stores.memory.streams import MemoryEventLogStore

pytestmark = pytest.mark.anyio


async def test_a_follower_from_now_gets_only_what_is_published_after_it_started() -> None:
    events = MemoryEventLogStore()
    board = NotificationLog(events)
    await board.publish("notifications/tools/list_changed", {})
    follower = await NotificationFollower.from_now(events)
    await board.publish("notifications/resources/updated", {"uri": "note://a"})
    with anyio.fail_after(5):
        notices = await follower.next(within=5)
        assert [(notice.seq, notice.message["params"]) for notice in notices] == [(2, {"uri": "note://a"})]
        assert await follower.next(within=0.01) == []
    assert follower.last == 2


async def test_events_trimmed_from_the_log_are_skipped_once_the_gap_outlives_its_grace() -> None:
    events = MemoryEventLogStore(max_events=2)
    for number in range(5):
        await events.append(NOTIFICATIONS, f'{{"jsonrpc": "2.0", "method": "m", "params": {{"n": {number}}}}}')
    follower = NotificationFollower(events, after=1, gap_grace=0.5)  # 2 and 3 were trimmed: they never come
    with anyio.fail_after(5):
        assert await follower.next(within=0.01) == []  # still within the grace
        notices = await follower.next(within=5)
    assert [notice.seq for notice in notices] == [4, 5]
