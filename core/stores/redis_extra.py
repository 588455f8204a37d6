"""Redis event logs, pending server-to-client requests, tasks and caches.

    {prefix}:{ev:<stream>}:seq / :events     hash (seq, expires), list of "seq|data" (newest `max_events`)
    {prefix}:{ev:<stream>}:tokens            sorted set: the newest appends' write tokens -> their seq
    {prefix}:{pr:<request>}:open / :reply    marker ('1' while a reply is awaited, then 'answered:<token>'), list
                                             the reply is pushed to
    {prefix}:{t:<task id>}                   hash: principal, status, result, created, updated, expires, w
    {prefix}:{c:<key>}                       string "expires|value" (a claim's value: its write token)

Each write a dropped connection may make redis-py send twice carries a write token (see
`core.stores.redis_scripts`), so the second run answers like the first and adds nothing.

A follower of an event log subscribes to the channel named like its events list, which every append publishes
to, so a new event wakes it at once and an idle follower sends nothing. A waiter blocks on its reply list
(BLPOP) in slices shorter than the socket timeout, so a reply posted to any container wakes it at once without
polling.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Any

from core.stores.extras import StreamEvent, TaskExistsError, TaskRecord
from core.stores.redis import GRACE_SECONDS, RedisScripts

Clock = Callable[[], float]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _token() -> str:
    """A write token: tells this write, sent twice, from another writer's."""
    return secrets.token_hex(8)


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
        args = [data, self.max_events, self.ttl, repr(self.clock()), GRACE_SECONDS, _token()]
        return int(await self.scripts.run("event_append", keys, args))

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        rows = await self.scripts.run("event_read", self._keys(stream), [repr(self.clock())])
        events = []
        for row in rows:
            number, _, data = _text(row).partition("|")
            if int(number) > seq:
                events.append(StreamEvent(int(number), data))
        return events

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        channel = self._keys(stream)[1]
        subscription = self.waits.client.pubsub(ignore_subscribe_messages=True)
        try:
            await self.waits.command_on(subscription, "subscribe", channel)
            # Read only once subscribed, so an event appended in between is either read here or published.
            events = await self.read_after(stream, seq)
            deadline = asyncio.get_running_loop().time() + within
            while not events:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    return []
                slice_seconds = min(left, max(0.01, self.scripts.timeout / 2))
                message = await self.waits.command_on(subscription, "get_message", timeout=slice_seconds, blocking=True)
                if message is not None:
                    events = await self.read_after(stream, seq)
            return events
        finally:
            await subscription.aclose()


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
        return bool(int(await self.scripts.run("pending_deliver", self._keys(request_key), [reply, _token()])))

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
                return _text(popped[1])


class RedisTaskStore:
    """Tasks as hashes; creation and status moves are one script each."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def _key(self, task_id: str) -> str:
        return self.scripts.key(f"t:{task_id}")

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        now = repr(self.clock())
        args = [now, ttl_seconds, GRACE_SECONDS, record.principal or "", record.status, record.request, _token()]
        if not int(await self.scripts.run("task_create", [self._key(record.task_id)], args)):
            raise TaskExistsError(record.task_id)

    async def get(self, task_id: str) -> TaskRecord | None:
        row = await self.scripts.command("hgetall", self._key(task_id))
        fields = {_text(key): _text(value) for key, value in row.items()}
        if not fields or float(fields["expires"]) <= self.clock():
            return None
        return TaskRecord(
            task_id=task_id,
            principal=fields["principal"] or None,
            status=fields["status"],
            request=fields.get("request", ""),
            result=fields.get("result"),
            created_at=float(fields["created"]),
            updated_at=float(fields["updated"]),
            expires_at=float(fields["expires"]),
        )

    async def update(self, task_id: str, *, status: str, result: str | None, expect: tuple[str, ...]) -> bool:
        args = [repr(self.clock()), status, "1" if result is not None else "0", result or "", _token(), *expect]
        return bool(int(await self.scripts.run("task_update", [self._key(task_id)], args)))


class RedisCacheStore:
    """Values stored with their expiry (compared on read); the key's TTL only collects garbage."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    async def get(self, key: str) -> str | None:
        stored = await self.scripts.command("get", self.scripts.key(f"c:{key}"))
        if stored is None:
            return None
        expires, _, value = _text(stored).partition("|")
        return value if float(expires) > self.clock() else None

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        stored = f"{self.clock() + ttl_seconds!r}|{value}"
        await self.scripts.command(
            "set", self.scripts.key(f"c:{key}"), stored, px=int((ttl_seconds + GRACE_SECONDS) * 1000)
        )

    async def delete(self, key: str) -> None:
        await self.scripts.command("delete", self.scripts.key(f"c:{key}"))

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        args = [repr(self.clock()), ttl_seconds, GRACE_SECONDS, _token()]
        return bool(int(await self.scripts.run("cache_claim", [self.scripts.key(f"c:{key}")], args)))
