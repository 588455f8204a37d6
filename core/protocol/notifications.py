"""Server-wide notifications: appended to one shared event log that every listening stream follows.

`ctx.notify_resource_updated` and `ctx.notify_list_changed` publish here from any container; a session's GET
stream (handshake era) and a `subscriptions/listen` stream (2026-07-28) each follow the log with a
`NotificationFollower` and relay what their client asked for.
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


class LoggedNotification(NamedTuple):
    """One published notification and its position in the log."""

    seq: int
    message: dict[str, Any]


class NotificationFollower:
    """Reads the notification log in order from a position, waiting for what is published next.

    Appends from several containers can land out of order on a backend without atomic numbering (DynamoDB: the
    number is taken, then the item written), so a missing number is waited for up to GAP_GRACE_SECONDS.
    """

    def __init__(self, events: EventLogStore, after: int, *, gap_grace: float = GAP_GRACE_SECONDS) -> None:
        self.events = events
        self.last = after
        self.gap_grace = gap_grace
        self._gap_since: float | None = None

    @classmethod
    async def from_now(cls, events: EventLogStore) -> NotificationFollower:
        """A follower of what is published from now on."""
        kept = await events.read_after(NOTIFICATIONS, 0)
        return cls(events, kept[-1].seq if kept else 0)

    async def next(self, within: float) -> list[LoggedNotification]:
        """The notices after the last one returned, waiting at most `within` seconds for one; [] if none came."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while (left := deadline - loop.time()) > 0:
            events = await self.events.wait_after(NOTIFICATIONS, self.last, left)
            ready = self._in_order(events, loop.time())
            if ready or not events:
                self.last = ready[-1].seq if ready else self.last
                return [LoggedNotification(event.seq, json.loads(event.data)) for event in ready]
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
