"""Stream event logs and pending server-to-client requests in this process, woken by futures."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping

from stratus.resilience.deadline import Clock
from stratus.stores.records import StreamEvent


class MemoryEventLogStore:
    """Per-stream deques of the newest events, forgotten `ttl_seconds` after the last append."""

    def __init__(self, *, max_events: int = 1000, ttl_seconds: float = 3600.0, clock: Clock = time.time) -> None:
        self._streams: dict[str, tuple[int, deque[StreamEvent], float]] = {}
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self.max_events = max_events
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
        while len(events) > self.max_events:
            events.popleft()
        self._streams[stream] = (seq, events, self._clock() + self._ttl)
        for waiter in self._waiters.pop(stream, []):
            if not waiter.done():
                waiter.set_result(None)
        return seq

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        return [event for event in self._live(stream)[1] if event.seq > seq]

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        return (await self.wait_any({stream: seq}, within)).get(stream, [])

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        found = await self._read_any(after)
        if found or within <= 0:
            return found
        waiter = asyncio.get_running_loop().create_future()
        for stream in after:
            self._waiters.setdefault(stream, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, within)
        except TimeoutError:
            return {}
        finally:
            for stream in after:
                waiting = self._waiters.get(stream, [])
                if waiter in waiting:
                    waiting.remove(waiter)
        return await self._read_any(after)

    async def _read_any(self, after: Mapping[str, int]) -> dict[str, list[StreamEvent]]:
        read = {stream: await self.read_after(stream, seq) for stream, seq in after.items()}
        return {stream: events for stream, events in read.items() if events}


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
