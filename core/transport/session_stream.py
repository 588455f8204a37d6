"""A handshake-era session's standalone GET stream: server-wide notifications, from any container.

Notifications that are not part of a call (`notifications/resources/updated`, list changes) are appended to one
server-wide event log (`stratus.protocol.notifications`); every GET stream reads it, and its session's own log, and
relays what its session wants (resource updates only for URIs it subscribed to). Event ids are
`g-<position in the shared log>.<position in the session's log>`, so a client that comes back with `Last-Event-ID`
gets exactly what it missed, wherever it comes back.

From 2025-11-25 on, and on Lambda for every version (`Polling.every_stream`), a stream is a poll
(`stratus.transport.polling`): it relays what happened since the client's `Last-Event-ID`, holds for
`STRATUS_POLL_HOLD_SECONDS` (by default 0 on Lambda, up to `STRATUS_MAX_STREAM_SECONDS` in a long-lived process)
while nothing happens, and ends with an event carrying the id to come back with and a `retry:`. A stream that waits at
all is the session's only one: a newer one takes it over (a reconnect after a drop is served at once), and the older
stops before its next write, so no event goes out twice to one client.

Every stream served here (GET streams, their resumptions and a call stream's, `/events`) takes a place among the
process's open streams first (`stratus.resilience.stream_slots`), freed however it ends. Once its headers are sent a
stream always ends with a complete response: when the store fails under it (no connection to be had), it ends
cleanly and the client reconnects, as it would at the stream's time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from stratus.errors import McpError, StoreUnavailableError, TooManyStreamsError
from stratus.protocol import versions
from stratus.protocol.notifications import (
    LoggedNotification,
    NotificationFollower,
    NotificationLog,
    Position,
    ReadAhead,
)
from stratus.request.outbound import BUFFERED_HOLD_SECONDS
from stratus.resilience.stream_slots import StreamSlots
from stratus.stores.base import SessionStore
from stratus.stores.records import SessionRecord
from stratus.transport.asgi import until_disconnected
from stratus.transport.polling import Polling, call_event_id, call_retry_ms
from stratus.transport.sse import KEEPALIVE_SECONDS, SseWriter
from stratus.types import Receive, Send

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore, EventLogStore

GET_STREAM_PREFIX = "g"


def get_event_id(position: Position) -> str:
    """A session stream's event id: `g-<shared>.<own>` (`stratus.protocol.notifications.Position`)."""
    return f"{GET_STREAM_PREFIX}-{position}"


logger = logging.getLogger("stratus.transport")


class PollsOnlyError(McpError):
    """A buffered front door (API Gateway's HTTP API) sends an answer whole, once it ends: it can serve a stream only
    as a poll, which clients make from 2025-11-25 on."""

    code = -32600
    http_status = 405

    def __init__(self, version: str) -> None:
        super().__init__(
            "Method Not Allowed: this front door answers GET streams as polls, which clients make from protocol "
            f"version 2025-11-25 on (this session negotiated {version}); use a streaming front door"
        )
        self.headers = {"allow": "POST, DELETE"}


def wanted_by(session: SessionRecord, message: dict[str, Any]) -> bool:
    """Whether the session's GET stream carries this notification."""
    if message.get("method") == "notifications/resources/updated":
        return message.get("params", {}).get("uri") in session.subscriptions
    return True


class StreamFraming(Protocol):
    """How a session stream writes itself: the MCP GET stream, or the session REST API's `/events` stream."""

    idle_seconds: float
    """How long the stream may stay silent before `idle` writes something."""
    kind: str
    """What the session holds one of at a time, while it waits: a newer stream of the kind takes over."""

    def polls(self, session: SessionRecord) -> bool:
        """Whether the session's client comes back with `Last-Event-ID` once the stream ends: then it is a poll."""

    async def open(self, writer: SseWriter, session: SessionRecord) -> None: ...

    async def idle(self, writer: SseWriter) -> None: ...

    async def notice(self, writer: SseWriter, notice: LoggedNotification) -> None: ...

    async def pause(self, writer: SseWriter, position: Position, retry_ms: int) -> None:
        """End a poll: an event with the id to come back with, and `retry:`."""

    async def closing(self, writer: SseWriter, session: SessionRecord) -> None:
        """Write what a stream says as it ends because its session was ended."""


class McpGetStream:
    """The MCP GET stream: JSON-RPC notifications with `g-<n>.<m>` ids, keep-alive comments, one per session; a poll
    from 2025-11-25 on, ended by an event with an id and empty data (the priming event's form, which clients pass
    over)."""

    kind = "get-stream"

    def __init__(self, idle_seconds: float = KEEPALIVE_SECONDS) -> None:
        self.idle_seconds = idle_seconds

    def polls(self, session: SessionRecord) -> bool:
        # Clients of earlier revisions need not come back when a stream ends: their streams stay open, except on
        # Lambda (`Polling.every_stream`), where a stream its client left would be billed to its end.
        return versions.at_least(session.protocol_version, versions.PRIMING_SINCE)

    async def open(self, writer: SseWriter, session: SessionRecord) -> None:
        return None

    async def idle(self, writer: SseWriter) -> None:
        await writer.comment("keep-alive")

    async def notice(self, writer: SseWriter, notice: LoggedNotification) -> None:
        await writer.event(notice.message, event_id=get_event_id(notice.position))

    async def pause(self, writer: SseWriter, position: Position, retry_ms: int) -> None:
        await writer.prime(get_event_id(position), retry_ms)

    async def closing(self, writer: SseWriter, session: SessionRecord) -> None:
        return None  # the stream just ends


class _Claim:
    """A session's hold on its one waiting stream of a kind, in the shared cache: a newer stream takes it and marks
    the session's log, and the older one, wherever it runs, wakes on the mark and stops before its next write."""

    def __init__(self, cache: CacheStore, kind: str, key: str, token: str) -> None:
        self.cache = cache
        self.kind = kind
        self.key = key
        self.token = token

    @classmethod
    async def take(
        cls, cache: CacheStore, events: EventLogStore | None, session_id: str, kind: str, ttl_seconds: float
    ) -> _Claim:
        """Claim the session's stream of `kind`, and mark its log (when `events` is given) for the streams that
        follow it; a stream that follows another log checks its claim whenever it wakes."""
        claim = cls(cache, kind, f"{session_id}/{kind}", secrets.token_hex(8))
        await cache.set(claim.key, claim.token, ttl_seconds)
        if events is not None:
            await NotificationLog(events).supersede(session_id, kind)
        return claim

    async def held(self) -> bool:
        return await self.cache.get(self.key) == self.token


class SessionStreams:
    """Serves GET streams of sessions over the shared event log and cache, within the process's stream caps."""

    def __init__(
        self,
        sessions: SessionStore,
        events: EventLogStore,
        cache: CacheStore,
        slots: StreamSlots | None = None,
        *,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        polling: Polling | None = None,
    ) -> None:
        self.sessions = sessions
        self.events = events
        self.cache = cache
        self.slots = slots or StreamSlots()
        self.keepalive_seconds = keepalive_seconds
        """A stream with nothing to send for this long writes a keep-alive comment (STRATUS_KEEPALIVE_SECONDS)."""
        self.polling = polling or Polling()

    @contextlib.contextmanager
    def reading_ahead(self, after: Position | None) -> Iterator[ReadAhead | None]:
        """For a poll that comes back from `after` and holds for nothing (the default): its read of the server-wide
        log, started now, while its session is read (`serve(ahead=...)`), and cancelled at the block's end if no
        read took it; None for any other stream."""
        ahead = None if after is None or self.polling.hold_seconds > 0 else ReadAhead(self.events, after.shared)
        try:
            yield ahead
        finally:
            if ahead is not None:
                ahead.close()

    async def serve(
        self,
        session: SessionRecord,
        after: Position | None,
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
        framing: StreamFraming | None = None,
        buffered: bool = False,
        ahead: ReadAhead | None = None,
    ) -> McpError | None:
        """Stream the session's notifications after position `after` (from now when None): as a poll (until nothing
        happened for the hold) when its client comes back, else until the client leaves, the session ends or
        `max_seconds` pass; the error to answer instead when a stream cap is reached (`TooManyStreamsError`). The
        framing is the MCP GET stream's unless one is given."""
        framing = framing or McpGetStream(self.keepalive_seconds)
        resumes = framing.polls(session)
        if buffered and not resumes:
            return PollsOnlyError(session.protocol_version)
        polls = resumes or self.polling.every_stream
        hold = self._hold(buffered) if polls else max_seconds
        if buffered:
            max_seconds = min(max_seconds, BUFFERED_HOLD_SECONDS)
        try:
            slot = self.slots.take(session.session_id, session.principal)
        except TooManyStreamsError as full:
            return full
        with slot:
            claim = None
            if hold > 0:
                ttl = max_seconds + framing.idle_seconds
                claim = await _Claim.take(self.cache, self.events, session.session_id, framing.kind, ttl)
            start = after
            if start is None:
                start = (
                    await NotificationFollower.from_now(
                        self.events, session_id=session.session_id, own_head=session.log_head
                    )
                ).last

            async def relay(writer: SseWriter) -> None:
                await framing.open(writer, session)
                if polls and hold > 0:  # an id to come back with should the connection drop during the hold
                    await framing.pause(writer, start, self.polling.retry_ms)
                reached = await self._relay(
                    session, start, writer, framing, hold=hold, max_seconds=max_seconds, claim=claim, ahead=ahead
                )
                if polls and reached is not None:
                    await framing.pause(writer, reached, self.polling.retry_ms)

            await stream_until_gone(send, receive, relay)
            return None

    async def resume(
        self,
        session: SessionRecord,
        key: str,
        token: str,
        after: tuple[int, int],
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
        buffered: bool = False,
        until_asked: bool = False,
    ) -> McpError | None:
        """Replay a call's stream (kept in the event log under `key`) after event number `after[0]`, then follow it
        until its final response (the call may still run, on any container): from 2025-11-25 on as the poll-th
        (`after[1]` + 1) poll of the call, which ends after the hold with an event to come back from; the error to
        answer instead when a stream cap is reached. `until_asked`: the first answer to a call relayed from a buffered
        front door, which waits for the call's result as long as a buffered answer can, and ends after a question
        to the client, who must have it to answer."""
        resumes = versions.at_least(session.protocol_version, versions.PRIMING_SINCE)
        if buffered and not resumes:
            return PollsOnlyError(session.protocol_version)
        polls = resumes or self.polling.every_stream
        hold = self._hold(buffered) if polls else max_seconds
        if buffered:
            max_seconds = min(max_seconds, BUFFERED_HOLD_SECONDS)
            hold = max_seconds if until_asked else hold
        try:
            slot = self.slots.take(session.session_id, session.principal)
        except TooManyStreamsError as full:
            return full
        with slot:
            claim = None
            if hold > 0 and not until_asked:  # a resumption that waits is the call stream's only one
                claim = await _Claim.take(self.cache, None, session.session_id, f"call-{token}", max_seconds + hold)

            async def replay(writer: SseWriter) -> None:
                loop = asyncio.get_running_loop()
                (last, poll), end = after, loop.time() + max_seconds
                poll += polls
                quiet_end = loop.time() + hold
                while True:
                    within = max(0.0, min(self.keepalive_seconds, min(end, quiet_end) - loop.time()))
                    if within > 0:
                        events = await self.events.wait_after(key, last, within)
                        if claim is not None and not await claim.held():
                            return  # a newer resumption took over, from where its client left off
                    else:  # a plain read: no subscription to take for a wait of nothing
                        events = await self.events.read_after(key, last)
                    for event in events:
                        last = event.seq
                        if not event.data:  # the priming event, already seen by the client
                            continue
                        message = json.loads(event.data)
                        await writer.event(message, event_id=call_event_id(token, event.seq))
                        if "id" in message and "method" not in message:  # the call's response: the stream is done
                            return
                        if until_asked and "id" in message:  # a question: the client needs it now to answer
                            quiet_end = end = loop.time()
                    if loop.time() >= min(end, quiet_end):
                        break
                    if events:
                        quiet_end = loop.time() + hold
                    else:
                        await writer.comment("keep-alive")
                if polls:
                    await writer.prime(call_event_id(token, last, poll), call_retry_ms(poll))
                # Otherwise, at the time limit, the client reconnects again with the last id it got.

            await stream_until_gone(send, receive, replay)
            return None

    def _hold(self, buffered: bool) -> float:
        # A buffered answer is sent whole once the poll ends, within API Gateway's 30 s integration timeout.
        return min(self.polling.hold_seconds, BUFFERED_HOLD_SECONDS) if buffered else self.polling.hold_seconds

    async def _relay(
        self,
        session: SessionRecord,
        after: Position,
        writer: SseWriter,
        framing: StreamFraming,
        *,
        hold: float,
        max_seconds: float,
        claim: _Claim | None,
        ahead: ReadAhead | None = None,
    ) -> Position | None:
        """Relay the session's notifications after `after` until nothing happened for `hold` seconds or `max_seconds`
        passed (the position reached), or the session ended or a newer stream took over (None: nothing to resume)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + max_seconds
        quiet_end = loop.time() + hold
        follower = NotificationFollower(
            self.events, after, session_id=session.session_id, own_head=session.log_head, ahead=ahead
        )
        while True:
            within = max(0.0, min(framing.idle_seconds, min(end, quiet_end) - loop.time()))
            notices = await follower.next(within)
            if within > 0 and not any(notice.ended for notice in notices):
                current = await self.sessions.load(session.session_id)  # an open stream counts as activity
                if current is None:  # the session ended or expired: so does its stream
                    return None
                session = current  # its subscriptions may have changed
            for notice in notices:
                if notice.ended:  # the session was ended, on whichever container: the stream closes at once
                    await framing.closing(writer, session)
                    return None
                if notice.superseded is not None:
                    if claim is not None and notice.superseded == claim.kind and not await claim.held():
                        return None  # a newer stream of the session took over, from where its client left off
                    continue
                if notice.session is not None or wanted_by(session, notice.message):
                    await framing.notice(writer, notice)
            if loop.time() >= min(end, quiet_end):
                return follower.last
            if notices:
                quiet_end = loop.time() + hold
            else:
                await framing.idle(writer)


async def stream_until_gone(send: Send, receive: Receive, follow: Callable[[SseWriter], Awaitable[None]]) -> None:
    """Start an SSE response and run `follow` on it until it returns or the client leaves.

    Unless the client left, the response is then completed, also when `follow` failed: a store that cannot be
    reached (its connection pool empty, or down) ends the stream cleanly, and the client reconnects.
    """
    writer = await SseWriter.start(send)
    following = asyncio.ensure_future(follow(writer))
    gone = asyncio.ensure_future(until_disconnected(receive))
    try:
        await asyncio.wait({following, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        following.cancel()
        gone.cancel()
        await asyncio.gather(following, gone, return_exceptions=True)
    if gone.done() and not gone.cancelled():
        return  # the client left: there is no one to complete the response for
    error = following.exception() if not following.cancelled() else None
    if isinstance(error, StoreUnavailableError):
        logger.warning("the store is unavailable: a stream ended early; its client reconnects")
    elif error is not None:
        logger.error("a stream failed", exc_info=error, extra={"error_ref": secrets.token_hex(8)})
    with contextlib.suppress(OSError):  # the connection broke meanwhile
        await writer.close()
