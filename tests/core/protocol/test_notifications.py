"""Following the notification logs: the server-wide one and a session's own, in order, from a position, across a
gap only after its grace."""

from __future__ import annotations

import anyio
import pytest

from stratus.protocol.notifications import (
    NOTIFICATIONS,
    NotificationFollower,
    NotificationLog,
    Position,
    session_log,
)
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
        assert [(notice.position, notice.message["params"]) for notice in notices] == [
            (Position(2), {"uri": "note://a"})
        ]
        assert await follower.next(within=0.01) == []
    assert follower.last == Position(2)


async def test_events_trimmed_from_the_log_are_skipped_once_the_gap_outlives_its_grace_even_by_a_poll() -> None:
    """A poll (`within` 0) waits the gap out rather than end before it: the next poll's follower would start a fresh
    grace, and a number that never lands would hold every poll back for good."""
    events = MemoryEventLogStore(max_events=2)
    for number in range(5):
        await events.append(NOTIFICATIONS, f'{{"jsonrpc": "2.0", "method": "m", "params": {{"n": {number}}}}}')
    follower = NotificationFollower(events, after=Position(1), gap_grace=0.2)  # 2 and 3 were trimmed: they never come
    with anyio.fail_after(5):
        notices = await follower.next(within=0)
    assert [notice.position.shared for notice in notices] == [4, 5]


async def test_what_is_addressed_to_a_session_reaches_only_its_follower_and_never_the_shared_log() -> None:
    events = MemoryEventLogStore()
    board = NotificationLog(events)
    mine = await NotificationFollower.from_now(events, session_id="s1")
    theirs = await NotificationFollower.from_now(events, session_id="s2")
    await board.send_to("s1", {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})
    await board.publish("notifications/tools/list_changed", {})
    await board.end("s1")
    with anyio.fail_after(5):
        got = await mine.next(within=5)
        while len(got) < 3:
            got += await mine.next(within=5)
        seen_by_other = await theirs.next(within=5)
    assert [(notice.position, notice.session, notice.ended) for notice in got] == [
        (Position(1, 0), None, False),
        (Position(1, 1), "s1", False),
        (Position(1, 2), "s1", True),
    ]
    assert [notice.message["method"] for notice in seen_by_other] == ["notifications/tools/list_changed"]
    assert len(await events.read_after(NOTIFICATIONS, 0)) == 1  # ending a session wrote nothing every stream reads
    assert len(await events.read_after(session_log("s1"), 0)) == 2


async def test_a_follower_resumed_at_a_position_gets_exactly_what_came_after_it_in_both_logs() -> None:
    events = MemoryEventLogStore()
    board = NotificationLog(events)
    for n in range(3):
        await board.publish("notifications/resources/updated", {"uri": f"note://{n}"})
        await board.send_to("s1", {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
    follower = NotificationFollower(events, Position(2, 1), session_id="s1")
    with anyio.fail_after(5):
        got = await follower.next(within=5)
    assert [notice.message["params"] for notice in got] == [{"uri": "note://2"}, {"n": 1}, {"n": 2}]
    assert follower.last == Position(3, 3)


def test_positions_read_back_from_their_text_and_older_ids_still_parse() -> None:
    assert Position.parse(str(Position(12, 3))) == Position(12, 3)
    assert Position.parse("12") == Position(12, 0)  # a `g-<n>` id from before sessions had their own logs
    assert [Position.parse(text) for text in ("", "1.", ".1", "1.x", "-1", "1.2.3")] == [None] * 6
