"""A 2026-07-28 upstream's listen streams as the gateway keeps them, against a scripted upstream: the filter asks
for every URI subscribed through this container (counted per subscription); a changed filter opens a new request
and the old one is closed only once the new one is acknowledged; a request the upstream ends gracefully is asked
again, and one it refuses ends the watch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stratus.gateway.connectors.contract import UpstreamError
from stratus.gateway.listening import ACKNOWLEDGED, LIST_FLAGS, ResourceInterest, listen

pytestmark = pytest.mark.anyio
JsonObject = dict[str, Any]
UPDATED = "notifications/resources/updated"


class _Request:
    """One listen request as the scripted upstream holds it."""

    def __init__(self, params: JsonObject, peer: Any) -> None:
        self.uris = params["notifications"].get("resourceSubscriptions", [])
        self.flags = {flag for flag in LIST_FLAGS if params["notifications"].get(flag)}
        self.peer = peer
        self.ending: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self.closed = asyncio.Event()

    async def acknowledge(self) -> None:
        await self.peer.notify(ACKNOWLEDGED, {"notifications": {"resourceSubscriptions": self.uris}})

    async def updated(self, uri: str) -> None:
        await self.peer.notify(UPDATED, {"uri": uri})


class _Upstream:
    """Holds each listen request open until the test ends it; a cancelled one counts as closed by the gateway."""

    def __init__(self) -> None:
        self.requests: list[_Request] = []
        self.opened = asyncio.Event()

    async def request(self, method: str, params: JsonObject, *, peer: Any = None, within: float | None = None) -> Any:
        assert method == "subscriptions/listen"
        held = _Request(params, peer)
        self.requests.append(held)
        self.opened.set()
        try:
            return await held.ending
        finally:
            held.closed.set()

    async def next_request(self, count: int) -> _Request:
        """The `count`-th request (1-based), once opened."""
        async with asyncio.timeout(5):
            while len(self.requests) < count:
                self.opened.clear()
                await self.opened.wait()
        return self.requests[count - 1]


async def _collect(stream: AsyncIterator[JsonObject], into: list[JsonObject]) -> None:
    async for message in stream:
        into.append(message)  # noqa: PERF401 - the test reads them as they arrive


async def _until(condition: Any) -> None:
    """Let the watcher run until `condition` holds (bounded: 1,000 turns of the loop)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the watcher did not get there")


def test_each_uri_is_asked_for_while_one_subscription_to_it_is_left() -> None:
    interest = ResourceInterest()
    assert interest.filter() == dict.fromkeys(LIST_FLAGS, True)
    first = interest.add("note://a")
    assert interest.add("note://a") == first  # the same set of URIs: no new request needed
    interest.add("note://b")
    interest.remove("note://a")
    assert interest.uris == ["note://a", "note://b"]
    interest.remove("note://a")
    interest.remove("note://unknown")
    assert interest.filter() == {**dict.fromkeys(LIST_FLAGS, True), "resourceSubscriptions": ["note://b"]}
    assert interest.version == 3


async def test_a_new_filter_replaces_the_old_request_only_once_acknowledged_and_an_ended_one_is_asked_again() -> None:
    upstream, interest, heard = _Upstream(), ResourceInterest(), list[JsonObject]()
    watching = asyncio.ensure_future(_collect(listen(upstream, interest), heard))
    try:
        first = await upstream.next_request(1)
        assert first.uris == [] and first.flags == set(LIST_FLAGS)
        await first.acknowledge()
        version = interest.add("note://board")
        second = await upstream.next_request(2)
        assert second.uris == ["note://board"]
        await first.updated("note://elsewhere")  # still heard: the new request is not acknowledged yet
        await _until(lambda: len(heard) == 1)
        assert not first.closed.is_set()
        await second.acknowledge()
        async with asyncio.timeout(5):
            await interest.settled(version)
            await first.closed.wait()
        await second.updated("note://board")
        await _until(lambda: len(heard) == 2)
        assert [message["params"]["uri"] for message in heard] == ["note://elsewhere", "note://board"]
        assert all(message["method"] == UPDATED for message in heard)  # acknowledgments are not passed on

        second.ending.set_result({"resultType": "complete"})  # the upstream's stream limit
        third = await upstream.next_request(3)
        assert third.uris == ["note://board"]
        third.ending.set_exception(UpstreamError({"code": -32601, "message": "Method not found"}))
        async with asyncio.timeout(5):
            with pytest.raises(UpstreamError):
                await watching
        assert interest.ended
        await interest.settled(interest.add("note://other"))  # nothing listens: a subscriber does not wait
    finally:
        watching.cancel()
