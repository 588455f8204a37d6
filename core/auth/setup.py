"""Build the request authenticator the settings ask for; nothing is imported for `STRATUS_AUTH_MODE=off`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stratus.server.principal import Principal
from stratus.settings import Settings


class RequestAuthenticator(Protocol):
    """Establishes who sent an HTTP request, or raises UnauthorizedError."""

    async def authenticate(self, headers: Mapping[str, str], scope: Mapping[str, Any]) -> Principal | None: ...


def request_authenticator(settings: Settings) -> tuple[RequestAuthenticator | None, Any]:
    """The authenticator for `settings.auth_mode`, and the resource-server description (JWT mode only)."""
    if settings.auth_mode == "gateway":
        from stratus.auth.gateway import GatewayAuthenticator

        return GatewayAuthenticator(trust_request_context_header=settings.trust_request_context_header), None
    if settings.auth_mode == "jwt":
        from stratus.auth.bearer import JwtAuthenticator, ResourceServer
        from stratus.auth.jwks import KeySet

        resource = ResourceServer(
            str(settings.auth_issuer), str(settings.auth_audience), settings.auth_scopes, settings.auth_stage_path
        )
        return JwtAuthenticator(resource, KeySet(str(settings.auth_jwks_url))), resource
    return None, None
