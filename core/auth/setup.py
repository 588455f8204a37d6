"""Build the request authenticator the settings ask for; nothing is imported for `STRATUS_AUTH_MODE=off`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stratus.server.principal import Principal
from stratus.settings import Settings
from stratus.types import JsonObject


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
    if settings.auth_mode == "front":
        return _front_authenticator(settings)
    return None, None


def _front_authenticator(settings: Settings) -> tuple[RequestAuthenticator, Any]:
    """The resource server of the authorization front: its own issuer, its own key (no JWKS fetched)."""
    from stratus.auth.bearer import JwtAuthenticator, ResourceServer
    from stratus.auth.front_config import JWKS_PATH, FrontConfig
    from stratus.auth.front_key import signing_key
    from stratus.auth.jwks import KeySet

    front = FrontConfig.from_settings(settings)
    key = signing_key(settings.secret_key)

    async def own_keys(url: str) -> JsonObject:
        return key.jwks()

    resource = ResourceServer(front.issuer, front.resource, settings.auth_scopes, settings.auth_stage_path)
    return JwtAuthenticator(resource, KeySet(front.url(JWKS_PATH), fetch=own_keys)), resource
