"""Health: `GET /health` reports the seed's session statistics, counted across every container, with the store's
health; `GET /health/live` only says the process answers (the Lambda Web Adapter's readiness check, load
balancers) and touches no store."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from core.errors import StoreUnavailableError
from core.stores.base import SessionStore
from core.transport.asgi import Receive, Scope, Send, send_response

_HEADERS = {"content-type": "application/json", "cache-control": "no-store"}


async def live(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_response(send, 405, b"", {"allow": "GET"})
        return
    await send_response(send, 200, b'{"status":"ok"}', _HEADERS)


class Health:
    """`GET /health`: 200 with the statistics, or 503 when the store does not answer."""

    def __init__(
        self,
        sessions: SessionStore,
        *,
        backend: str,
        max_sessions: int,
        session_ttl_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sessions = sessions
        self.backend = backend
        self.max_sessions = max_sessions
        self.session_ttl_seconds = session_ttl_seconds
        self.monotonic = monotonic
        self.started = monotonic()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_response(send, 405, b"", {"allow": "GET"})
            return
        status, report = await self.report()
        await send_response(send, status, json.dumps(report, separators=(",", ":")).encode(), _HEADERS)

    async def report(self) -> tuple[int, dict[str, Any]]:
        """The status code and body: the seed's shape, plus `store`."""
        began = self.monotonic()
        try:
            census = await self.sessions.census()
        except StoreUnavailableError:
            store = {"backend": self.backend, "healthy": False}
            return 503, {"status": "unhealthy", "transport": "http", "store": store, "uptime": self._uptime()}
        latency = round((self.monotonic() - began) * 1000, 3)
        sessions = {
            "activeSessions": census.active,
            "maxSessions": self.max_sessions or None,
            "sessionTimeout": round(self.session_ttl_seconds * 1000),
            "oldestSession": _iso(census.oldest),
            "newestSession": _iso(census.newest),
        }
        store = {"backend": self.backend, "healthy": True, "latencyMs": latency}
        return 200, {
            "status": "healthy",
            "transport": "http",
            "sessions": sessions,
            "store": store,
            "uptime": self._uptime(),
        }

    def _uptime(self) -> int:
        return int(self.monotonic() - self.started)


def _iso(timestamp: float | None) -> str | None:
    from datetime import UTC, datetime  # only /health needs it: kept off the cold start

    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
