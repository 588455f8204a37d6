"""Health: `GET /health` reports the session statistics, counted across every container, with the store's
health; `GET /health/live` only says the process answers (the Lambda Web Adapter's readiness check, load
balancers) and touches no store.

`/health` is guarded like the MCP endpoint (Host and Origin: a rebound page must not read it), and its session
figures and uptime are for authenticated callers when authentication is on; anyone else gets only the status and
the store's health. A gateway's figures include its upstreams (`upstreams`: each one's `state`, `lastError` and
`tools` count, as this container knows them: read from memory, never by connecting). Its census is taken at most
once per `CENSUS_SECONDS` per process, however many requests ask. `/health/live` is not guarded: it reveals
nothing, and probes address it by IP (a load balancer's Host is the target's address).
"""

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.errors import HttpError, StoreUnavailableError, UnauthorizedError
from stratus.stores.base import SessionStore
from stratus.stores.records import SessionCensus
from stratus.transport.asgi import Headers, request_headers, send_response
from stratus.transport.http_guards import HostOriginGuard
from stratus.types import Receive, Scope, Send

if TYPE_CHECKING:
    from stratus.auth.setup import RequestAuthenticator

logger = logging.getLogger("stratus.transport")
_HEADERS = {"content-type": "application/json", "cache-control": "no-store"}
LIVE_PATH = "/health/live"
"""The readiness path (the Web Adapter's `AWS_LWA_READINESS_CHECK_PATH` in template.yaml)."""
CENSUS_SECONDS = 5.0
"""How long one census answers `/health`: a flood of requests costs the store one census per this long per
process (container), and the figures reported are at most this old."""


async def live(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_response(send, 405, b"", {"allow": "GET"})
        return
    await send_response(send, 200, b'{"status":"ok"}', _HEADERS)


class _Outcome(NamedTuple):
    """One census: its figures (None when the store failed), how long it took, when it ended, and why it failed."""

    census: SessionCensus | None
    latency_ms: float
    taken_at: float
    cause: str | None = None


class Health:
    """`GET /health`: 200 with the statistics, or 503 naming the check that failed (`failed: "store"`); why it
    failed and what fixes it (the store's endpoint, its error code) goes to the log, never to the caller."""

    def __init__(
        self,
        sessions: SessionStore,
        *,
        backend: str,
        max_sessions: int,
        session_ttl_seconds: float,
        guard: HostOriginGuard | None = None,
        authenticator: "RequestAuthenticator | None" = None,
        monotonic: Callable[[], float] = time.monotonic,
        details: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.sessions = sessions
        self.backend = backend
        self.max_sessions = max_sessions
        self.session_ttl_seconds = session_ttl_seconds
        self.guard = guard
        self.authenticator = authenticator
        self.monotonic = monotonic
        self.details = details
        """What the server adds for callers who may see figures (a gateway's upstreams), read from its memory."""
        self.started = monotonic()
        self._last: _Outcome | None = None
        self._taking: asyncio.Future[_Outcome] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = request_headers(scope)
        try:
            if self.guard is not None:
                self.guard.check(scope, headers)
        except HttpError as refused:
            body = json.dumps({"error": refused.message}).encode()
            await send_response(send, refused.http_status, body, {**_HEADERS, **refused.headers})
            return
        if scope["method"] not in ("GET", "HEAD"):
            await send_response(send, 405, b"", {"allow": "GET"})
            return
        status, report = await self.report(figures=await self._may_see_figures(headers, scope))
        await send_response(send, status, json.dumps(report, separators=(",", ":")).encode(), _HEADERS)

    async def _may_see_figures(self, headers: Headers, scope: Scope) -> bool:
        """Whether the caller may see session figures: anyone without authentication, else an authenticated one."""
        if self.authenticator is None:
            return True
        try:
            await self.authenticator.authenticate(headers, scope)
        except UnauthorizedError:
            return False
        return True

    async def report(self, *, figures: bool = True) -> tuple[int, dict[str, Any]]:
        """The status code and body: the session REST API's shape, plus `store`; only the status and `store` without
        `figures`."""
        outcome = await self._census()
        if outcome.census is None:
            store: dict[str, Any] = {"backend": self.backend, "healthy": False}
            report: dict[str, Any] = {"status": "unhealthy", "failed": "store", "transport": "http", "store": store}
            return 503, ({**report, "uptime": self._uptime()} if figures else report)
        store = {"backend": self.backend, "healthy": True, "latencyMs": outcome.latency_ms}
        if not figures:
            return 200, {"status": "healthy", "transport": "http", "store": store}
        census = outcome.census
        sessions = {
            "activeSessions": census.active,
            "maxSessions": self.max_sessions or None,
            "sessionTimeout": round(self.session_ttl_seconds * 1000),
            "oldestSession": _iso(census.oldest),
            "newestSession": _iso(census.newest),
        }
        return 200, {
            "status": "healthy",
            "transport": "http",
            "sessions": sessions,
            "store": store,
            "uptime": self._uptime(),
            **(self.details() if self.details is not None else {}),
        }

    async def _census(self) -> _Outcome:
        """The last census while it is younger than `CENSUS_SECONDS`; else a new one, which requests arriving
        meanwhile share (shielded: one caller leaving does not cancel it for the others)."""
        last = self._last
        if last is not None and self.monotonic() - last.taken_at < CENSUS_SECONDS:
            return last
        if self._taking is None:
            self._taking = asyncio.ensure_future(self._take_census())
        return await asyncio.shield(self._taking)

    async def _take_census(self) -> _Outcome:
        try:
            began = self.monotonic()
            cause = None
            try:
                census: SessionCensus | None = await self.sessions.census()
            except StoreUnavailableError as error:
                census, cause = None, error.cause  # cached too: an outage is not probed once per request either
                logger.warning("/health: the state store failed: %s (STRATUS_STORE)", cause or "it did not answer")
            ended = self.monotonic()
            self._last = _Outcome(census, round((ended - began) * 1000, 3), ended, cause)
            return self._last
        finally:
            self._taking = None

    def _uptime(self) -> int:
        return int(self.monotonic() - self.started)


def _iso(timestamp: float | None) -> str | None:
    from datetime import UTC, datetime  # only /health needs it: kept off the cold start

    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
