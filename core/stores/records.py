"""The records the stores keep and answer with: sessions and their census, a call's checks and the gate's
answer, stream events and tasks; with the encoding a shared store keeps a session in."""

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.errors import StoreBusyError
from stratus.resilience.breaker import Admission, BreakerPolicy
from stratus.resilience.limiter import Decision, RateLimit

if TYPE_CHECKING:
    from stratus.stores.task_records import RelayedCall, TaskOutcome, TaskRequest


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
    opened_by: str | None = None
    """The `traceparent` of the `initialize` span that opened it (tracing on): its later requests' spans link to it."""
    log_head: int | None = None
    """The number of the last event of the session's own log, when the store read it with the record (DynamoDB
    keeps it on the session's item): a poll that is past it reads nothing more of that log. Never stored."""


def copy_session(record: SessionRecord) -> SessionRecord:
    """A shallow copy of a session, as `dataclasses.replace(record)` makes: the memory store hands one out, so that
    the caller's changes reach it only through `save`."""
    # Not `dataclasses.replace`, at several times the cost on every warm call (docs/benchmarks.md).
    return SessionRecord(
        session_id=record.session_id,
        protocol_version=record.protocol_version,
        client_capabilities=record.client_capabilities,
        client_info=record.client_info,
        principal=record.principal,
        log_level=record.log_level,
        subscriptions=record.subscriptions,
        initialized=record.initialized,
        created_at=record.created_at,
        last_active_at=record.last_active_at,
        opened_by=record.opened_by,
        expires_at=record.expires_at,
        log_head=record.log_head,
    )


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
        "trace": record.opened_by,
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
        opened_by=fields.get("trace"),
        created_at=created,
        last_active_at=active,
        expires_at=expires,
    )


SESSION_LOG_SUFFIX = "/session-log"
"""A session's own event log is `<session id>/session-log` (`stratus.protocol.notifications.session_log`)."""


def session_of_log(stream: str) -> str | None:
    """The session whose own log `stream` is, or None."""
    return stream.removesuffix(SESSION_LOG_SUFFIX) if stream.endswith(SESSION_LOG_SUFFIX) else None


class StreamEvent(NamedTuple):
    """One event of a stream: its sequence number within the stream, and its payload."""

    seq: int
    data: str


@dataclass(slots=True, kw_only=True)
class TaskRecord:
    """A long-running call (a task, or a relayed call): who owns it, where it stands, what it runs and where that
    came to. Its request and outcome are typed (`stratus.stores.task_records`, loaded with the first task); a shared
    store keeps them in that module's encoding."""

    task_id: str
    principal: str | None
    status: str
    request: "TaskRequest | RelayedCall"
    """What to run, stored with the record so any container can run it."""
    outcome: "TaskOutcome | None" = None
    created_at: float = 0.0
    updated_at: float = 0.0
    expires_at: float = 0.0


class TaskExistsError(StoreBusyError):
    """A live task already has the new task's id (another writer's: a create sent twice finds its own write and
    succeeds). The id was drawn at random, so asking again draws another: a 503 to retry, never a 500."""

    def __init__(self, task_id: str) -> None:
        super().__init__("A new task could not be stored; retry shortly")
        self.task_id = task_id
