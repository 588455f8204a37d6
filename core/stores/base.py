"""What the server keeps between requests, as protocols any backend can implement.

Every operation a caller needs to be atomic is one method, so a remote backend can make it one round trip.
"""

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from stratus.resilience.breaker import Admission, BreakerPolicy, CircuitState
from stratus.resilience.deadline import Clock
from stratus.resilience.limiter import Decision, RateLimit
from stratus.stores.records import CallAdmission, CallChecks, SessionCensus, SessionRecord, StreamEvent, TaskRecord
from stratus.stores.urls import StoreUrl

if TYPE_CHECKING:
    from stratus.stores.task_records import TaskOutcome


class SessionStore(Protocol):
    """Legacy sessions with a sliding expiry, at most `max_sessions` live at once (0: no limit) across every
    container, and at most a quota of them per principal (anonymous sessions have none: they cannot be told
    apart). Both are checked and counted in one atomic step, and freed together when a session ends or expires."""

    async def create(self, record: SessionRecord) -> None:
        """Store a new session; raises SessionExistsError when the id is taken, TooManySessionsError when the
        deployment already holds its maximum of live sessions, PrincipalSessionsFullError (a TooManySessionsError)
        when the session's principal holds its quota."""

    async def load(self, session_id: str, *, consistent: bool = True) -> SessionRecord | None:
        """The live session with this id, its expiry slid forward; None when unknown, ended or expired.

        `consistent=False` (a poll): the record may lag a write of the last second, for half the read's price on
        DynamoDB, which also fills in `log_head`; a session that reads as absent is read again consistently."""

    async def save(self, record: SessionRecord) -> None:
        """Replace a live session's record (log level, subscriptions, initialized flag)."""

    async def delete(self, session_id: str) -> bool:
        """End a session, freeing its place at once; whether it existed."""

    async def census(self) -> SessionCensus:
        """Count the live sessions, by reading a bounded number of items whatever their number (expired sessions
        not yet swept may still count: docs/scale.md)."""

    async def sweep(self) -> int:
        """Remove every expired session and free its places; how many were removed (work grows with the sessions:
        for tests and operators)."""

    async def sweep_step(self) -> int:
        """Remove expired sessions within a bounded amount of store work, resuming where the last step stopped, so
        that repeated steps remove every expired session; how many were removed (the scheduled sweeper)."""


class RateLimitStore(Protocol):
    """Token buckets shared by every container; one atomic step per request."""

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        """Take `cost` tokens from the bucket `key`, refilled to the store's now."""

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        """Give back `cost` tokens that a call took and was then refused for another reason (never past `burst`)."""


class BreakerStore(Protocol):
    """Circuit-breaker state shared by every container; each method is one atomic step."""

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        """Whether a call may start now (moves an open circuit past its cool-down to half-open)."""

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        """Record how an admitted call ended; the states before and after."""

    async def release(self, key: str, trial_at: float) -> None:
        """Give back the half-open trial taken at `trial_at` by a call that was refused before it ran."""


class CallGate(Protocol):
    """Answers a call's checks together (Redis: one pipelined round trip)."""

    async def admit(self, checks: CallChecks) -> CallAdmission:
        """Load the session, take from each bucket and ask the breaker, all or nothing: a call refused for any
        reason (no live session of `owner`: `NO_SESSION`; a bucket; the breaker) spends no token and no half-open
        trial, so refused requests cannot use up what real callers share."""


class EventLogStore(Protocol):
    """Per-stream event logs, so a client resuming with `Last-Event-ID` gets exactly the events it missed, on any
    container. Each stream keeps its newest `max_events` for a sliding `ttl_seconds`.

    A log named `*/<name>` is server-wide: every open stream follows it, so a backend may spread its reads (DynamoDB
    keeps copies of it under several keys, `stratus.stores.dynamodb.replicated_log`)."""

    async def append(self, stream: str, data: str) -> int:
        """Add an event; its sequence number (1, 2, ... within the stream)."""

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        """The stream's events after `seq`, oldest first (those still kept)."""

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        """The stream's events after `seq` as soon as there are any, appended by any container; [] after
        `within` seconds without one. Waiting costs no store requests where the backend can push (Redis)."""

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        """The events after each position of several streams (`{stream: seq}`) as soon as any has one, by stream
        (only those with events); {} after `within` seconds without one. As `wait_after`, one wait however many
        streams it watches (Redis: one subscription)."""


class PendingRequestStore(Protocol):
    """Server-to-client requests awaiting the client's reply, which may arrive at any container."""

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        """Start waiting for a reply to `request_key`."""

    async def deliver(self, request_key: str, reply: str) -> bool:
        """Hand over the client's reply; False when nothing waits for it (unknown, expired or already answered)."""

    async def wait(self, request_key: str, within: float) -> str | None:
        """The reply once it arrives, or None after `within` seconds."""


class TaskStore(Protocol):
    """Tasks that outlive the request that started them."""

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        """Store a new task; raises TaskExistsError when the id is taken."""

    async def get(self, task_id: str) -> TaskRecord | None:
        """The live task, or None when unknown or expired."""

    async def update(
        self, task_id: str, *, status: str, outcome: "TaskOutcome | None", expect: tuple[str, ...]
    ) -> bool:
        """Move a task to `status` only if it is in one of `expect` (one atomic step), with `outcome` (None keeps
        the stored one); whether it moved."""


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


class Stores:
    """Every store the server uses, built once per process (per Lambda cold start) by `stratus.stores.factory`.
    `gate` answers a call's store checks together, all or nothing; `close` releases the backend's connections (at
    shutdown; a Lambda container never needs to)."""

    # A plain class, not a dataclass: every cold start builds this module, and a dataclass costs about 4 M
    # instructions to build (docs/benchmarks.md).
    __slots__ = ("breakers", "cache", "close", "events", "gate", "pending", "rate_limits", "sessions", "tasks")

    def __init__(
        self,
        *,
        sessions: SessionStore,
        rate_limits: RateLimitStore,
        breakers: BreakerStore,
        events: EventLogStore,
        pending: PendingRequestStore,
        tasks: TaskStore,
        cache: CacheStore,
        gate: CallGate,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers
        self.events = events
        self.pending = pending
        self.tasks = tasks
        self.cache = cache
        self.gate = gate
        self.close = close

    def replace(self, **stores: Any) -> "Stores":
        """These stores with the ones named replaced (as `dataclasses.replace` would)."""
        kept = {name: getattr(self, name) for name in self.__slots__}
        return Stores(**{**kept, **stores})

    async def aclose(self) -> None:
        if self.close is not None:
            await self.close()


class StoreOptions(NamedTuple):
    """How every backend's stores are configured, whatever the backend (the store URL says which, and where)."""

    session_ttl_seconds: float
    prefix: str = "stratus"
    """Prefix of every key a shared store writes."""
    timeout: float = 2.0
    """How long one store operation may take before it fails with `StoreUnavailableError`."""
    max_sessions: int = 0
    """Live handshake-era sessions across every container sharing the store (0: no cap)."""
    max_sessions_per_principal: int = 0
    """Live sessions of one authenticated principal (0: no quota; anonymous sessions have none)."""
    clock: Clock = time.time


class StoresBuilder(Protocol):
    """A backend's builder (`build` in `stratus.stores.<backend>.builder`): every store over the backend `store`
    names, its client library imported only when the first request needs it (`stratus.stores.lazy`)."""

    def __call__(self, store: StoreUrl, options: StoreOptions) -> Stores: ...
