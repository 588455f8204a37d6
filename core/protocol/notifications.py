"""Server-wide notifications: appended to one shared event log that every listening stream follows.

`ctx.notify_resource_updated` and `ctx.notify_list_changed` publish here from any container; a session's GET
stream (handshake era) and a `subscriptions/listen` stream (2026-07-28) each follow the log with a
`NotificationFollower` and relay what their client asked for.

Entries may also be addressed to one session: what a session REST call sends its client (progress, log messages,
elicitation and sampling requests) and the mark that the session ended. Only that session's followers return them,
in the log's order, so its `/events` stream (on any container) relays them with the server-wide notifications on
one subscription. The price: every open stream wakes for an addressed entry and skips it unless it is its own.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from stratus.stores.base import EventLogStore
    from stratus.stores.records import StreamEvent

NOTIFICATIONS = "*/notifications"
"""The server-wide notification log (session streams are named `<session id>/<token>`, so never `*`)."""
GAP_GRACE_SECONDS = 1.0
"""How long a follower waits for a missing event number (an append still landing elsewhere) before skipping it."""
GAP_POLL_SECONDS = 0.05


class NotificationLog:
    """Publishes notifications that are not part of a call, for every listening stream on any container."""

    def __init__(self, events: EventLogStore) -> None:
        self.events = events

    async def publish(self, method: str, params: dict[str, Any]) -> None:
        await self.events.append(NOTIFICATIONS, json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def send_to(self, session_id: str, message: dict[str, Any]) -> None:
        """Append a message for one session's streams only (a notification or a request to its client)."""
        entry = {"session": session_id, "message": message}
        await self.events.append(NOTIFICATIONS, json.dumps(entry, separators=(",", ":"), ensure_ascii=False))

    async def end(self, session_id: str) -> None:
        """Tell the session's open streams, wherever they are, that it ended."""
        await self.events.append(NOTIFICATIONS, json.dumps({"session": session_id, "ended": True}))


class LoggedNotification(NamedTuple):
    """One published notification and its position in the log."""

    seq: int
    message: dict[str, Any]
    session: str | None = None
    """The session it is addressed to; None for a server-wide notification."""
    ended: bool = False
    """The session ended: its streams close."""


def _logged(seq: int, data: str) -> LoggedNotification:
    entry = json.loads(data)
    session = entry.get("session")
    if not isinstance(session, str) or "jsonrpc" in entry:
        return LoggedNotification(seq, entry)
    message = entry.get("message")
    return LoggedNotification(seq, message if isinstance(message, dict) else {}, session, entry.get("ended") is True)


class NotificationFollower:
    """Reads the notification log in order from a position, waiting for what is published next.

    Appends from several containers can land out of order on a backend without atomic numbering (DynamoDB: the
    number is taken, then the item written), so a missing number is waited for up to GAP_GRACE_SECONDS.
    """

    def __init__(
        self, events: EventLogStore, after: int, *, gap_grace: float = GAP_GRACE_SECONDS, session_id: str | None = None
    ) -> None:
        self.events = events
        self.session_id = session_id
        """Whose addressed entries to return besides the server-wide ones (None: none)."""
        self.last = after
        self.gap_grace = gap_grace
        self._gap_since: float | None = None

    @classmethod
    async def from_now(cls, events: EventLogStore, *, session_id: str | None = None) -> NotificationFollower:
        """A follower of what is published from now on."""
        kept = await events.read_after(NOTIFICATIONS, 0)
        return cls(events, kept[-1].seq if kept else 0, session_id=session_id)

    async def next(self, within: float) -> list[LoggedNotification]:
        """The notices after the last one returned, waiting at most `within` seconds for one; [] if none came
        (entries addressed to other sessions are passed over)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while (left := deadline - loop.time()) > 0:
            events = await self.events.wait_after(NOTIFICATIONS, self.last, left)
            ready = self._in_order(events, loop.time())
            if ready or not events:
                self.last = ready[-1].seq if ready else self.last
                notices = [_logged(event.seq, event.data) for event in ready]
                mine = [notice for notice in notices if notice.session in (None, self.session_id)]
                if mine or not ready:
                    return mine
                continue  # only other sessions' entries: keep waiting
            await asyncio.sleep(min(GAP_POLL_SECONDS, max(0.0, deadline - loop.time())))
        return []

    def _in_order(self, events: list[StreamEvent], now: float) -> list[StreamEvent]:
        """The events that follow the last one without a missing number; all of them once a gap outlived its
        grace (an event that never landed, or one trimmed from the log)."""
        run: list[StreamEvent] = []
        for event in events:
            if event.seq != self.last + len(run) + 1:
                break
            run.append(event)
        if len(run) == len(events):
            self._gap_since = None
            return run
        self._gap_since = self._gap_since if self._gap_since is not None else now
        if now - self._gap_since >= self.gap_grace:
            self._gap_since = None
            return events
        return run
