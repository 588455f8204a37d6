"""The contract of event logs (numbered events per stream, the newest kept, forgotten after their TTL, followers
woken by an append), for every backend."""

from __future__ import annotations

import anyio
import pytest

from tests.fixtures.store_backends import MAX_EVENTS, TTL, Backend

pytestmark = pytest.mark.anyio


async def test_events_are_numbered_per_stream_and_read_after_a_given_one(backend: Backend) -> None:
    events = backend.stores.events
    assert [await events.append("session-1/get", f"e{n}") for n in range(3)] == [1, 2, 3]
    assert await events.append("session-1/post-7", "other") == 1
    assert [(event.seq, event.data) for event in await events.read_after("session-1/get", 1)] == [(2, "e1"), (3, "e2")]
    assert await events.read_after("session-1/get", 3) == []
    assert [event.data for event in await events.read_after("session-1/post-7", 0)] == ["other"]


async def test_a_stream_keeps_its_newest_events(backend: Backend) -> None:
    for n in range(MAX_EVENTS + 3):
        await backend.stores.events.append("s", f"e{n}")
    kept = await backend.stores.events.read_after("s", 0)
    assert [event.seq for event in kept] == list(range(4, MAX_EVENTS + 4))


async def test_events_are_forgotten_after_the_ttl(backend: Backend) -> None:
    await backend.stores.events.append("s", "old")
    backend.clock.advance(TTL + 1)
    assert await backend.stores.events.read_after("s", 0) == []


async def test_a_follower_is_woken_by_an_event_appended_while_it_waits(backend: Backend) -> None:
    events = backend.stores.events
    await events.append("s", "seen")
    woken: list[list[tuple[int, str]]] = []

    async def follow() -> None:
        woken.append([(event.seq, event.data) for event in await events.wait_after("s", 1, within=30)])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            await events.append("other", "not this stream")
            await events.append("s", "new")
    assert woken == [[(2, "new")]]


async def test_following_a_quiet_stream_ends_empty_at_the_deadline(backend: Backend) -> None:
    await backend.stores.events.append("s", "old")
    with anyio.fail_after(5):
        assert await backend.stores.events.wait_after("s", 1, within=0.05) == []
        assert [event.data for event in await backend.stores.events.wait_after("s", 0, within=0.05)] == ["old"]


async def test_a_wait_on_several_streams_is_woken_by_an_append_to_any_of_them(backend: Backend) -> None:
    events = backend.stores.events
    await events.append("*/shared", "seen")
    woken: list[dict[str, list[tuple[int, str]]]] = []

    async def follow() -> None:
        found = await events.wait_any({"*/shared": 1, "session-1/own": 0}, within=30)
        woken.append({stream: [(event.seq, event.data) for event in got] for stream, got in found.items()})

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            await events.append("session-2/own", "not watched")
            await events.append("session-1/own", "new")
        assert woken == [{"session-1/own": [(1, "new")]}]  # only the streams with events
        assert await events.wait_any({"*/shared": 1, "session-1/own": 1}, within=0.05) == {}
        found = await events.wait_any({"*/shared": 0, "session-1/own": 0}, within=0.05)
    # As soon as any has events: each stream found carries all of its own (a polling backend may return the first).
    assert found
    assert {stream: [event.data for event in got] for stream, got in found.items()}.items() <= {
        "*/shared": ["seen"],
        "session-1/own": ["new"],
    }.items()
