"""A handshake-era session's standalone GET stream: server-wide notifications, from any container.

Notifications that are not part of a call (`notifications/resources/updated`, list changes) are appended to one
server-wide event log (`stratus.protocol.notifications`); every open GET stream follows it, and its session's own
log, and relays what its session wants (resource updates only for URIs it subscribed to). Event ids are
`g-<position in the shared log>.<position in the session's log>`, so a client that reconnects with `Last-Event-ID`
gets exactly what it missed, wherever it reconnects. A session holds at
most one GET stream at a time, claimed in the shared cache: a second one is refused with 409.

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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from stratus.errors import McpError, StoreUnavailableError, TooManyStreamsError
from stratus.protocol import versions
from stratus.protocol.notifications import LoggedNotification, NotificationFollower, Position
from stratus.resilience.stream_slots import StreamSlots
from stratus.stores.base import SessionStore
from stratus.stores.records import SessionRecord
from stratus.transport.asgi import until_disconnected
from stratus.transport.sse import KEEPALIVE_SECONDS, RECONNECT_MS, SseWriter
from stratus.types import Receive, Send

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore, EventLogStore

GET_STREAM_PREFIX = "g"


def get_event_id(position: Position) -> str:
    """A session stream's event id: `g-<shared>.<own>` (`stratus.protocol.notifications.Position`)."""
    return f"{GET_STREAM_PREFIX}-{position}"


logger = logging.getLogger("stratus.transport")


class StreamConflictError(McpError):
    """The session already has its GET stream open."""

    code = -32600
    http_status = 409


def wanted_by(session: SessionRecord, message: dict[str, Any]) -> bool:
    """Whether the session's GET stream carries this notification."""
    if message.get("method") == "notifications/resources/updated":
        return message.get("params", {}).get("uri") in session.subscriptions
    return True


class StreamFraming(Protocol):
    """How a session stream writes itself: the MCP GET stream, or the session REST API's `/events` stream."""

    idle_seconds: float
    """How long the stream may stay silent before `idle` writes something."""
    exclusive: bool
    """Whether a session may hold only one such stream at a time."""

    async def open(self, writer: SseWriter, session: SessionRecord, after: Position) -> None: ...

    async def idle(self, writer: SseWriter) -> None: ...

    async def notice(self, writer: SseWriter, notice: LoggedNotification) -> None: ...

    async def closing(self, writer: SseWriter, session: SessionRecord) -> None:
        """Write what a stream says as it ends because its session was ended."""


class McpGetStream:
    """The MCP GET stream: JSON-RPC notifications with `g-<n>.<m>` ids, a priming event at 2025-11-25, keep-alive
    comments, one per session."""

    exclusive = True

    def __init__(self, idle_seconds: float = KEEPALIVE_SECONDS) -> None:
        self.idle_seconds = idle_seconds

    async def open(self, writer: SseWriter, session: SessionRecord, after: Position) -> None:
        if versions.at_least(session.protocol_version, versions.PRIMING_SINCE):
            await writer.prime(get_event_id(after), RECONNECT_MS)

    async def idle(self, writer: SseWriter) -> None:
        await writer.comment("keep-alive")

    async def notice(self, writer: SseWriter, notice: LoggedNotification) -> None:
        await writer.event(notice.message, event_id=get_event_id(notice.position))

    async def closing(self, writer: SseWriter, session: SessionRecord) -> None:
        return None  # the stream just ends


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
    ) -> None:
        self.sessions = sessions
        self.events = events
        self.cache = cache
        self.slots = slots or StreamSlots()
        self.keepalive_seconds = keepalive_seconds
        """A stream with nothing to send for this long writes a keep-alive comment (STRATUS_KEEPALIVE_SECONDS)."""

    async def serve(
        self,
        session: SessionRecord,
        after: Position | None,
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
        framing: StreamFraming | None = None,
    ) -> McpError | None:
        """Stream the session's notifications after position `after` (from now when None) until the client leaves,
        the session ends or `max_seconds` pass; the error to answer instead when a stream cap is reached
        (`TooManyStreamsError`) or the session's stream is already open (an exclusive framing). The framing is the
        MCP GET stream's unless one is given."""
        framing = framing or McpGetStream(self.keepalive_seconds)
        try:
            slot = self.slots.take(session.session_id, session.principal)
        except TooManyStreamsError as full:
            return full
        with slot:
            claim = f"{session.session_id}/get-stream"
            if framing.exclusive and not await self.cache.claim(claim, max_seconds + framing.idle_seconds):
                return StreamConflictError("Conflict: this session already has its GET stream open")
            try:
                start = after
                if start is None:
                    start = (await NotificationFollower.from_now(self.events, session_id=session.session_id)).last

                async def relay(writer: SseWriter) -> None:
                    await self._relay(session, start, writer, max_seconds, framing)

                await stream_until_gone(send, receive, relay)
                return None
            finally:
                if framing.exclusive:
                    with contextlib.suppress(StoreUnavailableError):  # the claim then expires on its own
                        await self.cache.delete(claim)

    async def resume(
        self,
        session: SessionRecord,
        key: str,
        token: str,
        seq: int,
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
    ) -> McpError | None:
        """Replay a call's stream (kept in the event log under `key`) after event `seq`, then follow it until its
        final response (the call may still run, on any container); the error to answer instead when a stream cap
        is reached."""
        try:
            slot = self.slots.take(session.session_id, session.principal)
        except TooManyStreamsError as full:
            return full
        with slot:

            async def replay(writer: SseWriter) -> None:
                loop = asyncio.get_running_loop()
                last, deadline = seq, loop.time() + max_seconds
                while (left := deadline - loop.time()) > 0:
                    events = await self.events.wait_after(key, last, min(self.keepalive_seconds, left))
                    if not events:
                        await writer.comment("keep-alive")
                    for event in events:
                        last = event.seq
                        if not event.data:  # the priming event, already seen by the client
                            continue
                        message = json.loads(event.data)
                        await writer.event(message, event_id=f"{token}-{event.seq}")
                        if "id" in message and "method" not in message:  # the call's response: the stream is done
                            return
                # At the time limit the client reconnects again with the last id it got.

            await stream_until_gone(send, receive, replay)
            return None

    async def _relay(
        self, session: SessionRecord, after: Position, writer: SseWriter, max_seconds: float, framing: StreamFraming
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        await framing.open(writer, session, after)
        follower = NotificationFollower(self.events, after, session_id=session.session_id)
        while (left := deadline - loop.time()) > 0:
            notices = await follower.next(min(framing.idle_seconds, left))
            if not any(notice.ended for notice in notices):
                current = await self.sessions.load(session.session_id)  # an open stream counts as activity
                if current is None:  # the session ended or expired: so does its stream
                    return
                session = current  # its subscriptions may have changed
            if not notices:
                await framing.idle(writer)
            for notice in notices:
                if notice.ended:  # the session was ended, on whichever container: the stream closes at once
                    await framing.closing(writer, session)
                    return
                if notice.session is not None or wanted_by(session, notice.message):
                    await framing.notice(writer, notice)


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
