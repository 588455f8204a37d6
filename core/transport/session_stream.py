"""A handshake-era session's standalone GET stream: server-wide notifications, from any container.

Notifications that are not part of a call (`notifications/resources/updated`, list changes) are appended to one
server-wide event log (`core.protocol.notices`); every open GET stream follows it and relays what its session wants
(resource updates only for URIs it subscribed to). Event ids are `g-<position in that log>`, so a client that
reconnects with `Last-Event-ID` gets exactly what it missed, wherever it reconnects. A session holds at most one
GET stream at a time, claimed in the shared cache: a second one is refused with 409.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import McpError
from core.protocol import versions
from core.protocol.notices import Notice, NoticeFollower
from core.stores.base import SessionRecord, SessionStore
from core.transport.asgi import Receive, Send, until_disconnected
from core.transport.sse import KEEPALIVE_SECONDS, RECONNECT_MS, SseWriter

if TYPE_CHECKING:
    from core.stores.extras import CacheStore, EventLogStore

GET_STREAM_PREFIX = "g"


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
    """How a session stream writes itself: the MCP GET stream, or the seed REST API's `/events` stream."""

    idle_seconds: float
    """How long the stream may stay silent before `idle` writes something."""
    exclusive: bool
    """Whether a session may hold only one such stream at a time."""

    async def open(self, writer: SseWriter, session: SessionRecord, after: int) -> None: ...

    async def idle(self, writer: SseWriter) -> None: ...

    async def notice(self, writer: SseWriter, notice: Notice) -> None: ...


class McpGetStream:
    """The MCP GET stream: JSON-RPC notifications with `g-<n>` ids, a priming event at 2025-11-25, keep-alive
    comments, one per session."""

    idle_seconds = KEEPALIVE_SECONDS
    exclusive = True

    async def open(self, writer: SseWriter, session: SessionRecord, after: int) -> None:
        if versions.at_least(session.protocol_version, versions.PRIMING_SINCE):
            await writer.prime(f"{GET_STREAM_PREFIX}-{after}", RECONNECT_MS)

    async def idle(self, writer: SseWriter) -> None:
        await writer.comment("keep-alive")

    async def notice(self, writer: SseWriter, notice: Notice) -> None:
        await writer.event(notice.message, event_id=f"{GET_STREAM_PREFIX}-{notice.seq}")


class SessionStreams:
    """Serves GET streams of sessions over the shared event log and cache."""

    def __init__(self, sessions: SessionStore, events: EventLogStore, cache: CacheStore) -> None:
        self.sessions = sessions
        self.events = events
        self.cache = cache

    async def serve(
        self,
        session: SessionRecord,
        after: int | None,
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
        framing: StreamFraming = McpGetStream(),  # noqa: B008 - stateless
    ) -> McpError | None:
        """Stream the session's notifications after position `after` (from now when None) until the client leaves,
        the session ends or `max_seconds` pass; the error to answer instead when the session's stream is already
        open (an exclusive framing)."""
        claim = f"{session.session_id}/get-stream"
        if framing.exclusive and not await self.cache.claim(claim, max_seconds + framing.idle_seconds):
            return StreamConflictError("Conflict: this session already has its GET stream open")
        try:
            if after is None:
                after = (await NoticeFollower.from_now(self.events)).last
            writer = await SseWriter.start(send)
            relay = asyncio.ensure_future(self._relay(session, after, writer, max_seconds, framing))
            gone = asyncio.ensure_future(until_disconnected(receive))
            try:
                await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                relay.cancel()
                gone.cancel()
                await asyncio.gather(relay, gone, return_exceptions=True)
            if relay.done() and not relay.cancelled() and relay.exception() is None:
                await writer.close()
            return None
        finally:
            if framing.exclusive:
                await self.cache.delete(claim)

    async def _relay(
        self, session: SessionRecord, after: int, writer: SseWriter, max_seconds: float, framing: StreamFraming
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        await framing.open(writer, session, after)
        follower = NoticeFollower(self.events, after)
        while (left := deadline - loop.time()) > 0:
            notices = await follower.next(min(framing.idle_seconds, left))
            current = await self.sessions.load(session.session_id)  # an open stream counts as activity
            if current is None:  # the session ended or expired: so does its stream
                return
            session = current  # its subscriptions may have changed
            if not notices:
                await framing.idle(writer)
            for notice in notices:
                if wanted_by(session, notice.message):
                    await framing.notice(writer, notice)
