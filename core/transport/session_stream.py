"""A handshake-era session's standalone GET stream: server-wide notifications, from any container.

Notifications that are not part of a call (`notifications/resources/updated`, list changes) are appended to one
server-wide event log (`core.protocol.notices`); every open GET stream follows it and relays what its session wants
(resource updates only for URIs it subscribed to). Event ids are `g-<position in that log>`, so a client that
reconnects with `Last-Event-ID` gets exactly what it missed, wherever it reconnects. A session holds at most one
GET stream at a time, claimed in the shared cache: a second one is refused with 409.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from core.errors import McpError
from core.protocol import versions
from core.protocol.notices import NoticeFollower
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


class SessionStreams:
    """Serves GET streams of sessions over the shared event log and cache."""

    def __init__(self, sessions: SessionStore, events: EventLogStore, cache: CacheStore) -> None:
        self.sessions = sessions
        self.events = events
        self.cache = cache

    async def serve(
        self, session: SessionRecord, after: int | None, send: Send, receive: Receive, *, max_seconds: float
    ) -> McpError | None:
        """Stream the session's notifications after position `after` (from now when None) until the client leaves
        or `max_seconds` pass; the error to answer instead when the session's stream is already open."""
        claim = f"{session.session_id}/get-stream"
        if not await self.cache.claim(claim, max_seconds + KEEPALIVE_SECONDS):
            return StreamConflictError("Conflict: this session already has its GET stream open")
        try:
            if after is None:
                after = (await NoticeFollower.from_now(self.events)).last
            writer = await SseWriter.start(send)
            relay = asyncio.ensure_future(self._relay(session, after, writer, max_seconds))
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
            await self.cache.delete(claim)

    async def _relay(self, session: SessionRecord, after: int, writer: SseWriter, max_seconds: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        if versions.at_least(session.protocol_version, versions.PRIMING_SINCE):
            await writer.prime(f"{GET_STREAM_PREFIX}-{after}", RECONNECT_MS)
        follower = NoticeFollower(self.events, after)
        while (left := deadline - loop.time()) > 0:
            notices = await follower.next(min(KEEPALIVE_SECONDS, left))
            if not notices:
                await writer.comment("keep-alive")
                continue
            current = await self.sessions.load(session.session_id)  # its subscriptions may have changed
            if current is None:  # the session ended
                return
            session = current
            for notice in notices:
                if wanted_by(session, notice.message):
                    await writer.event(notice.message, event_id=f"{GET_STREAM_PREFIX}-{notice.seq}")
