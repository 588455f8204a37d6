"""Stream event logs (a list per stream, appends published so followers wake at once) and pending
server-to-client requests (a reply list a waiting call blocks on)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from stratus.resilience.deadline import Clock
from stratus.stores.records import StreamEvent
from stratus.stores.redis.scripts import GRACE_SECONDS, RedisScripts, as_text, new_token


class RedisEventLogStore:
    """Event logs as capped lists with a counter, appended to in one script."""

    def __init__(
        self,
        scripts: RedisScripts,
        *,
        max_events: int = 1000,
        ttl_seconds: float = 3600.0,
        clock: Clock = time.time,
        waits: RedisScripts | None = None,
    ) -> None:
        self.scripts = scripts
        self.waits = waits or scripts
        """Where a follower's subscription waits (a pool apart from the calls', see `redis_stores`)."""
        self.max_events = max_events
        self.ttl = ttl_seconds
        self.clock = clock

    def _keys(self, stream: str) -> list[str]:
        return [self.scripts.key(f"ev:{stream}", "seq"), self.scripts.key(f"ev:{stream}", "events")]

    async def append(self, stream: str, data: str) -> int:
        keys = [*self._keys(stream), self.scripts.key(f"ev:{stream}", "tokens")]
        args = [data, self.max_events, self.ttl, repr(self.clock()), GRACE_SECONDS, new_token(), self.scripts.publish]
        return int(await self.scripts.run("event_append", keys, args))

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        return _after(await self.scripts.run("event_read", self._keys(stream), [repr(self.clock())]), seq)

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        return (await self.wait_any({stream: seq}, within)).get(stream, [])

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        channels = {self._keys(stream)[1]: stream for stream in after}
        if self.waits.cluster:
            # A cluster's pub/sub routes by the client's map of slots, which only its first command would load.
            await self.waits.command_on(self.waits.client, "initialize")
        subscription = self.waits.client.pubsub(ignore_subscribe_messages=True)
        # On a cluster: shard channels, each on the primary holding its stream's slot (see RedisScripts.publish).
        subscribe, receive = ("subscribe", "get_message")
        if self.waits.cluster:
            subscribe, receive = ("ssubscribe", "get_sharded_message")
        try:
            await self.waits.command_on(subscription, subscribe, *channels)
            # Read only once subscribed, so an event appended in between is either read here or published.
            found = await self._read_any(after)
            deadline = asyncio.get_running_loop().time() + within
            while not found:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    return {}
                slice_seconds = min(left, max(0.01, self.scripts.timeout / 2))
                message = await self.waits.command_on(subscription, receive, timeout=slice_seconds, blocking=True)
                if message is not None:
                    stream = channels.get(as_text(message.get("channel", b"")))
                    found = await self._read_any({stream: after[stream]} if stream is not None else after)
            return found
        finally:
            await subscription.aclose()

    async def _read_any(self, after: Mapping[str, int]) -> dict[str, list[StreamEvent]]:
        """Several streams read in one round trip (on a cluster, one per node), those with events after theirs."""
        now = repr(self.clock())
        rows = await self.scripts.run_many([("event_read", self._keys(stream), [now]) for stream in after])
        read = {stream: _after(kept, seq) for (stream, seq), kept in zip(after.items(), rows, strict=True)}
        return {stream: events for stream, events in read.items() if events}


def _after(rows: list[object], seq: int) -> list[StreamEvent]:
    """A stream's kept events (`<seq>|<data>` rows, oldest first) after `seq`."""
    events = []
    for row in rows:
        number, _, data = as_text(row).partition("|")
        if int(number) > seq:
            events.append(StreamEvent(int(number), data))
    return events


class RedisPendingRequestStore:
    """Awaited replies: a marker while open, a list the reply is pushed to, a blocking pop to wait."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time, waits: RedisScripts | None = None) -> None:
        self.scripts = scripts
        self.waits = waits or scripts
        """Where the blocking pops wait (a pool apart from the calls', see `redis_stores`)."""
        self.clock = clock

    def _keys(self, request_key: str) -> list[str]:
        return [self.scripts.key(f"pr:{request_key}", "open"), self.scripts.key(f"pr:{request_key}", "reply")]

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        await self.scripts.command("set", self._keys(request_key)[0], "1", px=int(ttl_seconds * 1000))

    async def deliver(self, request_key: str, reply: str) -> bool:
        return bool(int(await self.scripts.run("pending_deliver", self._keys(request_key), [reply, new_token()])))

    async def wait(self, request_key: str, within: float) -> str | None:
        marker, replies = self._keys(request_key)
        deadline = asyncio.get_running_loop().time() + within
        # Each blocking pop stays shorter than the socket timeout, so a slow reply never looks like a dead store.
        slice_seconds = max(0.01, min(1.0, self.scripts.timeout / 2))
        while True:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                await self.scripts.command("delete", marker, replies)
                return None
            popped = await self.waits.command("blpop", [replies], timeout=min(left, slice_seconds), blocking=True)
            if popped is not None:
                # The popped list is gone; the marker stays (answered, until it expires), so a resend of the
                # delivering script finds its token instead of reading as a reply nobody waits for.
                return as_text(popped[1])
