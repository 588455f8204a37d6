"""Where the front lives and how long what it issues lasts, derived once from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from stratus.settings import Settings

AUTHORIZE_PATH = "/authorize"
TOKEN_PATH = "/token"  # noqa: S105 - a path, not a password
REGISTER_PATH = "/register"
REVOKE_PATH = "/revoke"
CALLBACK_PATH = "/oauth/callback"
CONSENT_PATH = "/oauth/consent"
JWKS_PATH = "/oauth/jwks"
AUTHORIZATION_SERVER_METADATA = "/.well-known/oauth-authorization-server"
OPENID_CONFIGURATION = "/.well-known/openid-configuration"

CODE_SECONDS = 300
"""An authorization code's life: RFC 6749 section 4.1.2 recommends at most 10 minutes."""
SIGN_IN_SECONDS = 600
"""How long a user has from the consent page to finishing the upstream sign-in."""
CONSENT_SECONDS = 30 * 86400
"""How long a browser's approval of one client is remembered."""


@dataclass(frozen=True, slots=True)
class FrontConfig:
    """The front's URLs (the issuer is the resource's origin and stage: RFC 8414 section 2) and lifetimes."""

    issuer: str
    resource: str
    scopes: tuple[str, ...]
    upstream_issuer: str
    upstream_client_id: str
    upstream_client_secret: str
    upstream_scopes: tuple[str, ...]
    token_seconds: int
    refresh_seconds: int
    registration_seconds: int
    registrations_per_hour: int

    @classmethod
    def from_settings(cls, settings: Settings) -> FrontConfig:
        resource = str(settings.auth_audience)
        scheme, _, rest = resource.partition("://")
        host = rest.partition("/")[0]
        upstream_scopes = tuple(dict.fromkeys(("openid", *settings.auth_upstream_scopes)))
        return cls(
            issuer=f"{scheme}://{host}{settings.auth_stage_path.rstrip('/')}",
            resource=resource,
            scopes=settings.auth_scopes,
            upstream_issuer=str(settings.auth_upstream_issuer),  # exactly: ID tokens' `iss` must equal it
            upstream_client_id=str(settings.auth_upstream_client_id),
            upstream_client_secret=str(settings.auth_upstream_client_secret),
            upstream_scopes=upstream_scopes,
            token_seconds=settings.auth_token_seconds,
            refresh_seconds=settings.auth_refresh_seconds,
            registration_seconds=settings.auth_registration_seconds,
            registrations_per_hour=settings.auth_registrations_per_hour,
        )

    def url(self, path: str) -> str:
        """The public URL of one of the front's paths."""
        return self.issuer + path

    @property
    def secure(self) -> bool:
        """Whether the front is served over HTTPS (its cookies are then `Secure`)."""
        return self.issuer.startswith("https://")
