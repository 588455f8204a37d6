"""One bound on what a store keeps in one record, the same on every backend.

A DynamoDB item is at most 400 KB, attribute names and values together
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html); a larger write fails. Redis
and memory have no such small limit, but a deployment should not behave differently on each: every backend's
stores are wrapped here, and a value past the bound is refused with `RecordTooLargeError` before anything is
written. The caller decides what the client sees (a task fails, a logged final answer is replaced by the error,
an `initialize` or a reply is refused); nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from stratus.errors import RecordTooLargeError
from stratus.stores.base import EventLogStore, PendingRequestStore, SessionStore, Stores, TaskStore
from stratus.stores.records import SessionCensus, SessionRecord, StreamEvent, TaskRecord, encode_session

if TYPE_CHECKING:
    from stratus.stores.task_records import TaskOutcome

DYNAMODB_ITEM_BYTES = 400 * 1024
"""DynamoDB's item size limit (the ServiceQuotas page above)."""
RESERVED_BYTES = 16 * 1024
"""What an item holds besides its one or two large values: keys with their prefix, the principal's key, numbers,
the write token and the attribute names (under 1 KB in practice)."""
DYNAMODB_MAX_RECORD_BYTES = DYNAMODB_ITEM_BYTES - RESERVED_BYTES


def size_of(value: str) -> int:
    """A value's size as DynamoDB counts it: its UTF-8 bytes."""
    return len(value.encode("utf-8", "surrogatepass"))


class BoundedSessions:
    """Sessions whose encoded record (capabilities, client info, subscriptions) is at most `limit` bytes."""

    def __init__(self, inner: SessionStore, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    def _check(self, record: SessionRecord) -> None:
        size = size_of(encode_session(record))
        if size > self.limit:
            raise RecordTooLargeError("The session (its capabilities, client info and subscriptions)", size, self.limit)

    async def create(self, record: SessionRecord) -> None:
        self._check(record)
        await self.inner.create(record)

    async def load(self, session_id: str, *, consistent: bool = True) -> SessionRecord | None:
        return await self.inner.load(session_id, consistent=consistent)

    async def save(self, record: SessionRecord) -> None:
        self._check(record)
        await self.inner.save(record)

    async def delete(self, session_id: str) -> bool:
        return await self.inner.delete(session_id)

    async def census(self) -> SessionCensus:
        return await self.inner.census()

    async def sweep(self) -> int:
        return await self.inner.sweep()

    async def sweep_step(self) -> int:
        return await self.inner.sweep_step()


class BoundedEvents:
    """Event logs whose events are each at most `limit` bytes."""

    def __init__(self, inner: EventLogStore, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def append(self, stream: str, data: str) -> int:
        size = size_of(data)
        if size > self.limit:
            raise RecordTooLargeError("The stream event", size, self.limit)
        return await self.inner.append(stream, data)

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        return await self.inner.read_after(stream, seq)

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        return await self.inner.wait_after(stream, seq, within)

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        return await self.inner.wait_any(after, within)


class BoundedPending:
    """Pending requests whose replies are each at most `limit` bytes."""

    def __init__(self, inner: PendingRequestStore, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        await self.inner.open(request_key, ttl_seconds)

    async def deliver(self, request_key: str, reply: str) -> bool:
        size = size_of(reply)
        if size > self.limit:
            raise RecordTooLargeError("The reply", size, self.limit)
        return await self.inner.deliver(request_key, reply)

    async def wait(self, request_key: str, within: float) -> str | None:
        return await self.inner.wait(request_key, within)


class BoundedTasks:
    """Tasks whose request and result together are at most `limit` bytes (one item holds both)."""

    def __init__(self, inner: TaskStore, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        from stratus.stores.task_records import encode_request

        size = size_of(encode_request(record.request))
        if size > self.limit:
            raise RecordTooLargeError("The task's request (the tool's arguments)", size, self.limit)
        await self.inner.create(record, ttl_seconds)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await self.inner.get(task_id)

    async def update(self, task_id: str, *, status: str, outcome: TaskOutcome | None, expect: tuple[str, ...]) -> bool:
        from stratus.stores.task_records import encode_outcome, encode_request

        if outcome is not None:
            size = size_of(encode_outcome(outcome))
            if size > self.limit // 2:  # only then can request and result together pass: read the request's size
                stored = await self.inner.get(task_id)
                size += size_of(encode_request(stored.request)) if stored is not None else 0
            if size > self.limit:
                raise RecordTooLargeError("The task's result", size, self.limit)
        return await self.inner.update(task_id, status=status, outcome=outcome, expect=expect)


def bounded(stores: Stores, limit: int) -> Stores:
    """`stores` with every record they keep bounded to `limit` bytes (0: unbounded, `stores` itself)."""
    if limit <= 0:
        return stores
    return stores.replace(
        sessions=BoundedSessions(stores.sessions, limit),
        events=BoundedEvents(stores.events, limit),
        pending=BoundedPending(stores.pending, limit),
        tasks=BoundedTasks(stores.tasks, limit),
    )
