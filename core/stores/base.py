"""What the server keeps between requests, as protocols any backend can implement.

Every operation a caller needs to be atomic is one method, so a remote backend can make it one round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from core.resilience.breaker import Admission, BreakerPolicy, CircuitState
from core.resilience.limiter import Decision, RateLimit


@dataclass(slots=True, kw_only=True)
class SessionRecord:
    """A legacy (handshake-era) session: what `initialize` negotiated and who owns it."""

    session_id: str
    protocol_version: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    principal: str | None = None
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    initialized: bool = False
    created_at: float = 0.0
    last_active_at: float = 0.0
    expires_at: float = 0.0


class SessionExistsError(Exception):
    """A session with this id already exists."""


class SessionStore(Protocol):
    """Legacy sessions with a sliding expiry."""

    async def create(self, record: SessionRecord) -> None:
        """Store a new session; raises SessionExistsError when the id is taken."""

    async def load(self, session_id: str) -> SessionRecord | None:
        """The live session with this id, its expiry slid forward; None when unknown, ended or expired."""

    async def save(self, record: SessionRecord) -> None:
        """Replace a live session's record (log level, subscriptions, initialized flag)."""

    async def delete(self, session_id: str) -> bool:
        """End a session; whether it existed."""


class RateLimitStore(Protocol):
    """Token buckets shared by every container; one atomic step per request."""

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        """Take `cost` tokens from the bucket `key`, refilled to the store's now."""


class BreakerStore(Protocol):
    """Circuit-breaker state shared by every container; each method is one atomic step."""

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        """Whether a call may start now (moves an open circuit past its cool-down to half-open)."""

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        """Record how an admitted call ended; the states before and after."""


class CallChecks(NamedTuple):
    """Everything a tool call asks the store before it runs, so a backend can answer in one round trip."""

    session_id: str | None = None
    limits: tuple[tuple[str, RateLimit], ...] = ()
    """(bucket key, limit) pairs, in the order they are checked."""
    breaker: tuple[str, BreakerPolicy] | None = None


class CallAdmission(NamedTuple):
    """The store's answers: the session (loaded and touched), one decision per limit, the breaker's admission."""

    session: SessionRecord | None
    decisions: tuple[Decision, ...]
    breaker: Admission | None


class CallGate(Protocol):
    """Answers a call's checks together (Redis: one pipelined round trip)."""

    async def admit(self, checks: CallChecks) -> CallAdmission:
        """Load the session, take from each bucket and ask the breaker; every bucket is taken from even when an
        earlier one refuses, so a refused call may still spend tokens of the others."""


class SequentialGate:
    """A gate over any stores: one operation after another (the in-memory stores have no round trips to save)."""

    def __init__(self, sessions: SessionStore, rate_limits: RateLimitStore, breakers: BreakerStore) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers

    async def admit(self, checks: CallChecks) -> CallAdmission:
        session = await self.sessions.load(checks.session_id) if checks.session_id else None
        decisions = tuple([await self.rate_limits.acquire(key, limit) for key, limit in checks.limits])
        breaker = await self.breakers.admit(*checks.breaker) if checks.breaker else None
        return CallAdmission(session, decisions, breaker)


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


class TaskExistsError(Exception):
    """A task with this id already exists."""
