"""In-process event logs, pending requests, tasks and caches (the embedded default; one process only)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import Callable

from core.stores.extras import StreamEvent, TaskExistsError, TaskRecord

Clock = Callable[[], float]


class MemoryEventLogStore:
    """Per-stream deques of the newest events, forgotten `ttl_seconds` after the last append."""

    def __init__(self, *, max_events: int = 1000, ttl_seconds: float = 3600.0, clock: Clock = time.time) -> None:
        self._streams: dict[str, tuple[int, deque[StreamEvent], float]] = {}
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._max = max_events
        self._ttl = ttl_seconds
        self._clock = clock

    def _live(self, stream: str) -> tuple[int, deque[StreamEvent]]:
        seq, events, expires = self._streams.get(stream, (0, deque(), 0.0))
        if expires and expires <= self._clock():
            return 0, deque()
        return seq, events

    async def append(self, stream: str, data: str) -> int:
        seq, events = self._live(stream)
        seq += 1
        events.append(StreamEvent(seq, data))
        while len(events) > self._max:
            events.popleft()
        self._streams[stream] = (seq, events, self._clock() + self._ttl)
        for waiter in self._waiters.pop(stream, []):
            if not waiter.done():
                waiter.set_result(None)
        return seq

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        return [event for event in self._live(stream)[1] if event.seq > seq]

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        events = await self.read_after(stream, seq)
        if events or within <= 0:
            return events
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(stream, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, within)
        except TimeoutError:
            return []
        finally:
            waiting = self._waiters.get(stream, [])
            if waiter in waiting:
                waiting.remove(waiter)
        return await self.read_after(stream, seq)


class MemoryPendingRequestStore:
    """Replies handed to waiters through futures on the one event loop."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._pending: dict[str, tuple[asyncio.Future[str], float]] = {}
        self._clock = clock

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        self._pending[request_key] = (asyncio.get_running_loop().create_future(), self._clock() + ttl_seconds)

    async def deliver(self, request_key: str, reply: str) -> bool:
        entry = self._pending.get(request_key)
        if entry is None or entry[0].done() or entry[1] <= self._clock():
            return False
        entry[0].set_result(reply)
        return True

    async def wait(self, request_key: str, within: float) -> str | None:
        entry = self._pending.get(request_key)
        if entry is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(entry[0]), within)
        except TimeoutError:
            return None
        finally:
            if entry[0].done():
                self._pending.pop(request_key, None)


class MemoryTaskStore:
    """Tasks in a dict, expired lazily on read."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._clock = clock

    def _live(self, task_id: str) -> TaskRecord | None:
        task = self._tasks.get(task_id)
        return task if task is not None and task.expires_at > self._clock() else None

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        if self._live(record.task_id) is not None:
            raise TaskExistsError(record.task_id)
        now = self._clock()
        self._tasks[record.task_id] = dataclasses.replace(
            record, created_at=now, updated_at=now, expires_at=now + ttl_seconds
        )

    async def get(self, task_id: str) -> TaskRecord | None:
        task = self._live(task_id)
        return dataclasses.replace(task) if task else None

    async def update(self, task_id: str, *, status: str, result: str | None, expect: tuple[str, ...]) -> bool:
        task = self._live(task_id)
        if task is None or task.status not in expect:
            return False
        task.status, task.result, task.updated_at = status, result, self._clock()
        return True


class MemoryCacheStore:
    """Values in a dict with their expiry."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._values: dict[str, tuple[str, float]] = {}
        self._clock = clock

    async def get(self, key: str) -> str | None:
        entry = self._values.get(key)
        return entry[0] if entry is not None and entry[1] > self._clock() else None

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        self._values[key] = (value, self._clock() + ttl_seconds)

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        if await self.get(key) is not None:
            return False
        await self.set(key, "1", ttl_seconds)
        return True
