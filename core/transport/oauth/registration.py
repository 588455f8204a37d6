"""Dynamic client registration (RFC 7591): any host may register, at most `STRATUS_AUTH_REGISTRATIONS_PER_HOUR`
from one source address (a token bucket in the store, shared by every container)."""

from __future__ import annotations

import json

from stratus.resilience.limiter import RateLimit
from stratus.stores.base import RateLimitStore
from stratus.transport.asgi import request_headers
from stratus.transport.oauth.clients import ClientRegistry
from stratus.transport.oauth.replies import (
    OAuthError,
    read_limited,
    send_error,
    send_json,
    send_preflight,
    source_address,
)
from stratus.types import Receive, Scope, Send


class Registration:
    def __init__(self, clients: ClientRegistry, limits: RateLimitStore, per_hour: int) -> None:
        self._clients = clients
        self._limits = limits
        self._limit = RateLimit(per_hour / 3600.0, float(per_hour))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "OPTIONS":
            await send_preflight(send)
            return
        try:
            await send_json(send, 201, await self._register(scope, receive))
        except OAuthError as error:
            await send_error(send, error)

    async def _register(self, scope: Scope, receive: Receive) -> dict[str, object]:
        if scope["method"] != "POST":
            raise OAuthError("invalid_request", "register with POST", 405, {"allow": "POST"})
        content_type = request_headers(scope).get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError("invalid_client_metadata", "the client metadata must be sent as application/json")
        body = await read_limited(receive)
        try:
            metadata = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
        decision = await self._limits.acquire(f"oauth-register:{source_address(scope)}", self._limit)
        if not decision.allowed:
            retry = max(1, round(decision.retry_after))
            raise OAuthError(
                "temporarily_unavailable",
                "too many clients registered from this address; try again later "
                "(STRATUS_AUTH_REGISTRATIONS_PER_HOUR sets how many an address may register)",
                429,
                {"retry-after": str(retry)},
            )
        _, answer = await self._clients.register(metadata)
        return answer
