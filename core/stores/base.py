"""What the server keeps between requests, as protocols any backend can implement.

Every operation a caller needs to be atomic is one method, so a remote backend can make it one round trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from core.errors import StoreBusyError
from core.resilience.breaker import Admission, BreakerPolicy, CircuitState
from core.resilience.limiter import Decision, RateLimit


@dataclass(slots=True, kw_only=True)
class SessionRecord:
    """A handshake-era session: what `initialize` negotiated and who owns it."""

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


class SessionExistsError(StoreBusyError):
    """A live session already has the new session's id (another writer's: a create sent twice finds its own write
    and succeeds). The id was drawn at random, so asking again draws another: a 503 to retry, never a 500."""

    def __init__(self, session_id: str) -> None:
        super().__init__("A new session could not be stored; retry shortly")
        self.session_id = session_id


class SessionCensus(NamedTuple):
    """The live sessions of the whole deployment: how many, and when the oldest and newest were created."""

    active: int
    oldest: float | None
    newest: float | None


class SessionStore(Protocol):
    """Legacy sessions with a sliding expiry, at most `max_sessions` live at once (0: no limit) across every
    container, and at most a quota of them per principal (anonymous sessions have none: they cannot be told
    apart). Both are checked and counted in one atomic step, and freed together when a session ends or expires."""

    async def create(self, record: SessionRecord) -> None:
        """Store a new session; raises SessionExistsError when the id is taken, TooManySessionsError when the
        deployment already holds its maximum of live sessions, PrincipalSessionsFullError (a TooManySessionsError)
        when the session's principal holds its quota."""

    async def load(self, session_id: str) -> SessionRecord | None:
        """The live session with this id, its expiry slid forward; None when unknown, ended or expired."""

    async def save(self, record: SessionRecord) -> None:
        """Replace a live session's record (log level, subscriptions, initialized flag)."""

    async def delete(self, session_id: str) -> bool:
        """End a session, freeing its place at once; whether it existed."""

    async def census(self) -> SessionCensus:
        """Count the live sessions (sweeping expired ones first)."""

    async def sweep(self) -> int:
        """Remove expired sessions and their places; how many were removed."""


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


class CallChecks(NamedTuple):
    """Everything a tool call asks the store before it runs, so a backend can answer in one round trip."""

    session_id: str | None = None
    owner: str | None = None
    """The principal key the session must belong to (None: a session opened without authentication)."""
    limits: tuple[tuple[str, RateLimit], ...] = ()
    """(bucket key, limit) pairs, in the order they are checked."""
    breaker: tuple[str, BreakerPolicy] | None = None


class CallAdmission(NamedTuple):
    """The store's answers: the session (loaded and touched), one decision per limit, the breaker's admission."""

    session: SessionRecord | None
    decisions: tuple[Decision, ...]
    breaker: Admission | None

    @property
    def allowed(self) -> bool:
        """Whether every bucket and the breaker let the call through."""
        return all(decision.allowed for decision in self.decisions) and (self.breaker is None or self.breaker.allowed)


NO_SESSION = CallAdmission(None, (), None)
"""The gate's answer when the checks name no live session of the caller: nothing was asked or taken."""


def owned(session: SessionRecord | None, owner: str | None) -> bool:
    """Whether a loaded session is live and belongs to `owner`."""
    return session is not None and session.principal == owner


class CallGate(Protocol):
    """Answers a call's checks together (Redis: one pipelined round trip)."""

    async def admit(self, checks: CallChecks) -> CallAdmission:
        """Load the session, take from each bucket and ask the breaker, all or nothing: a call refused for any
        reason (no live session of `owner`: `NO_SESSION`; a bucket; the breaker) spends no token and no half-open
        trial, so refused requests cannot use up what real callers share."""


class SequentialGate:
    """A gate over any stores: one operation after another, giving back what a refused call took (the in-memory
    stores have no round trips to save, and nothing awaits inside them, so no other call sees the tokens gone)."""

    def __init__(self, sessions: SessionStore, rate_limits: RateLimitStore, breakers: BreakerStore) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers

    async def admit(self, checks: CallChecks) -> CallAdmission:
        session = None
        if checks.session_id is not None:
            session = await self.sessions.load(checks.session_id)
            if not owned(session, checks.owner):
                return NO_SESSION
        decisions = tuple([await self.rate_limits.acquire(key, limit) for key, limit in checks.limits])
        breaker = await self.breakers.admit(*checks.breaker) if checks.breaker else None
        admission = CallAdmission(session, decisions, breaker)
        if not admission.allowed:
            for (key, limit), decision in zip(checks.limits, decisions, strict=True):
                if decision.allowed:
                    await self.rate_limits.refund(key, limit)
            if checks.breaker and breaker is not None and breaker.trial_at is not None:
                await self.breakers.release(checks.breaker[0], breaker.trial_at)
        return admission


def encode_session(record: SessionRecord) -> str:
    """What a shared store keeps of a session besides its times, as compact JSON (fields at their defaults are
    left out: most sessions never set a log level or subscribe)."""
    fields: dict[str, Any] = {"version": record.protocol_version}
    optional = {
        "capabilities": record.client_capabilities,
        "client": record.client_info,
        "principal": record.principal,
        "log_level": record.log_level,
        "subscriptions": record.subscriptions,
        "initialized": record.initialized,
    }
    fields.update({key: value for key, value in optional.items() if value})
    return json.dumps(fields, separators=(",", ":"))


def decode_session(session_id: str, data: str, *, created: float, active: float, expires: float) -> SessionRecord:
    """The session `encode_session` wrote, with the times the store keeps beside it."""
    fields = json.loads(data)
    return SessionRecord(
        session_id=session_id,
        protocol_version=fields["version"],
        client_capabilities=fields.get("capabilities") or {},
        client_info=fields.get("client") or {},
        principal=fields.get("principal"),
        log_level=fields.get("log_level"),
        subscriptions=fields.get("subscriptions") or [],
        initialized=bool(fields.get("initialized")),
        created_at=created,
        last_active_at=active,
        expires_at=expires,
    )
