"""Server-wide notifications: appended to one shared event log that every session's GET stream follows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.stores.extras import EventLogStore

NOTIFICATIONS = "*/notifications"
"""The server-wide notification log (session streams are named `<session id>/<token>`, so never `*`)."""


class NoticeBoard:
    """Publishes notifications that are not part of a call, for every listening stream on any container."""

    def __init__(self, events: EventLogStore) -> None:
        self.events = events

    async def publish(self, method: str, params: dict[str, Any]) -> None:
        await self.events.append(NOTIFICATIONS, json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))
