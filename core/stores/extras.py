"""Protocols and records of the stores streaming and long-running calls use: stream event logs, pending
server-to-client requests, tasks and caches. Kept apart from `core.stores.base` so a cold start that serves
plain calls does not define them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

from core.errors import StoreBusyError


class StreamEvent(NamedTuple):
    """One event of a stream: its sequence number within the stream, and its payload."""

    seq: int
    data: str


class EventLogStore(Protocol):
    """Per-stream event logs, so a client resuming with `Last-Event-ID` gets exactly the events it missed, on any
    container. Each stream keeps its newest `max_events` for a sliding `ttl_seconds`."""

    async def append(self, stream: str, data: str) -> int:
        """Add an event; its sequence number (1, 2, ... within the stream)."""

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        """The stream's events after `seq`, oldest first (those still kept)."""

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        """The stream's events after `seq` as soon as there are any, appended by any container; [] after
        `within` seconds without one. Waiting costs no store requests where the backend can push (Redis)."""


class PendingRequestStore(Protocol):
    """Server-to-client requests awaiting the client's reply, which may arrive at any container."""

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        """Start waiting for a reply to `request_key`."""

    async def deliver(self, request_key: str, reply: str) -> bool:
        """Hand over the client's reply; False when nothing waits for it (unknown, expired or already answered)."""

    async def wait(self, request_key: str, within: float) -> str | None:
        """The reply once it arrives, or None after `within` seconds."""


@dataclass(slots=True, kw_only=True)
class TaskRecord:
    """A long-running call: who owns it, where it stands, and its result once it has one."""

    task_id: str
    principal: str | None
    status: str
    request: str = ""
    """What to run, as the task's runner encodes it (JSON), stored with the task so any container can run it."""
    result: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    expires_at: float = 0.0


class TaskStore(Protocol):
    """Tasks that outlive the request that started them."""

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        """Store a new task; raises TaskExistsError when the id is taken."""

    async def get(self, task_id: str) -> TaskRecord | None:
        """The live task, or None when unknown or expired."""

    async def update(self, task_id: str, *, status: str, result: str | None, expect: tuple[str, ...]) -> bool:
        """Move a task to `status` only if it is in one of `expect` (one atomic step); whether it moved."""


class CacheStore(Protocol):
    """Small shared values with a time to live (e.g. the gateway's tools lists)."""

    async def get(self, key: str) -> str | None:
        """The value, or None when absent or expired."""

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        """Store or replace a value."""

    async def delete(self, key: str) -> None:
        """Forget a value."""

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        """Set `key` only if it is absent (or expired), in one atomic step; whether this call set it."""


class TaskExistsError(StoreBusyError):
    """A live task already has the new task's id (another writer's: a create sent twice finds its own write and
    succeeds). The id was drawn at random, so asking again draws another: a 503 to retry, never a 500."""

    def __init__(self, task_id: str) -> None:
        super().__init__("A new task could not be stored; retry shortly")
        self.task_id = task_id
