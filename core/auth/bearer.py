"""OAuth 2.1 resource server: verify the bearer JWT of each request and turn its claims into a `Principal`.

Tokens are read from the Authorization header only (never the query string). The signature must come from a key
in the issuer's JWKS and an asymmetric algorithm (`none` and HMAC are refused); `iss`, `aud` (this server's
canonical URL), `exp` and `nbf` are checked. A token is never passed on to anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stratus.auth.jwks import JwksUnavailableError, KeySet
from stratus.errors import UnauthorizedError
from stratus.server.principal import Principal

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
LEEWAY_SECONDS = 30


@dataclass(frozen=True, slots=True)
class ResourceServer:
    """This server as an OAuth protected resource: who issues its tokens, its canonical URL, its scopes."""

    issuer: str
    audience: str
    scopes: tuple[str, ...] = ()
    stage: str = ""
    """The path prefix of an API Gateway REST stage the audience URL carries (e.g. `/v1`), or empty."""

    @property
    def metadata_url(self) -> str:
        """Where RFC 9728 metadata for the resource lives: the well-known path inserted before the resource path
        (RFC 9728 section 3.1), after the stage where one prefixes every path the front door routes."""
        scheme, _, rest = self.audience.partition("://")
        host, slash, path = rest.partition("/")
        suffix = f"/{path}".rstrip("/") if slash else ""
        stage = self.stage.rstrip("/")
        if stage and suffix.startswith(stage):
            suffix = suffix[len(stage) :]
        return f"{scheme}://{host}{stage}/.well-known/oauth-protected-resource{suffix}"

    def metadata(self) -> dict[str, Any]:
        """The protected-resource metadata document (RFC 9728)."""
        document: dict[str, Any] = {
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    def discovery(self) -> dict[str, str]:
        """What a 401's body repeats of the challenge: some front doors rename `WWW-Authenticate` (API Gateway REST
        proxy integrations answer it as `x-amzn-Remapped-WWW-Authenticate`), and a client reading the body can
        still find the metadata."""
        return {"resource_metadata": self.metadata_url}

    def challenge(self, error: str | None = None) -> str:
        """A `WWW-Authenticate` value pointing the client at the metadata."""
        parts = [f'resource_metadata="{self.metadata_url}"']
        if self.scopes:
            parts.append(f'scope="{" ".join(self.scopes)}"')
        if error:
            parts.append(f'error="{error}"')
        return "Bearer " + ", ".join(parts)


class JwtAuthenticator:
    """Verifies bearer JWTs against the issuer's JWKS."""

    def __init__(self, resource: ResourceServer, keys: KeySet) -> None:
        try:
            import jwt  # imported only when JWT auth is configured: it pulls in cryptography
        except ImportError as error:
            raise ImportError("STRATUS_AUTH_MODE=jwt needs PyJWT: pip install 'stratus-mcp[jwt]'") from error

        self._jwt = jwt
        self.resource = resource
        self._keys = keys

    async def authenticate(self, headers: Mapping[str, str], scope: Mapping[str, Any]) -> Principal:
        """The principal of the request's bearer token.

        Raises:
            UnauthorizedError: no token, or one that fails any check (the challenge says where to get one).
        """
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise UnauthorizedError(
                "Authentication required", challenge=self.resource.challenge(), data=self.resource.discovery()
            )
        claims = await self._verify(token.strip())
        return principal_from_claims(claims)

    async def _verify(self, token: str) -> dict[str, Any]:
        jwt = self._jwt
        refuse = UnauthorizedError(
            "Invalid token", challenge=self.resource.challenge("invalid_token"), data=self.resource.discovery()
        )
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise refuse from None
        if header.get("alg") not in ALGORITHMS:
            raise refuse
        try:
            jwk = await self._keys.key(header.get("kid"))
        except JwksUnavailableError:
            raise UnauthorizedError(
                "Token keys are unavailable; try again (they are fetched from STRATUS_AUTH_JWKS_URL)",
                challenge=self.resource.challenge("invalid_token"),
                data=self.resource.discovery(),
            ) from None
        if jwk is None:
            raise refuse
        try:
            key = jwt.PyJWK(jwk).key
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[header["alg"]],
                audience=self.resource.audience,
                issuer=self.resource.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"], "verify_iat": False},
            )
        except (jwt.PyJWTError, ValueError, TypeError):
            raise refuse from None
        return claims


def principal_from_claims(claims: Mapping[str, Any]) -> Principal:
    """A principal from verified claims: `sub`, scopes from `scope` / `scp`, roles from `roles` / groups."""
    scope = claims.get("scope") or claims.get("scp") or ""
    scopes = scope.split() if isinstance(scope, str) else [str(item) for item in scope]
    roles = claims.get("roles") or claims.get("cognito:groups") or []
    if isinstance(roles, str):
        roles = roles.split()
    return Principal(
        str(claims.get("sub", "")), frozenset(scopes), frozenset(str(role) for role in roles), dict(claims)
    )
