"""What a call run later, elsewhere (a task, a relayed call), keeps of its caller to run as it: identity, scopes, roles
and the issuer, never the token."""

from __future__ import annotations

from stratus.server.principal import Principal
from stratus.types import JsonObject


def principal_fields(principal: Principal | None) -> JsonObject | None:
    """What a task keeps of its caller to run as it: identity, scopes, roles and the issuer (no token)."""
    if principal is None:
        return None
    issuer = principal.claims.get("iss")
    return {
        "subject": principal.subject,
        "scopes": sorted(principal.scopes),
        "roles": sorted(principal.roles),
        "claims": {"iss": issuer} if isinstance(issuer, str) else {},
    }


def principal_from(fields: JsonObject | None) -> Principal | None:
    if fields is None:
        return None
    return Principal(
        subject=fields["subject"],
        scopes=frozenset(fields["scopes"]),
        roles=frozenset(fields["roles"]),
        claims=fields["claims"],
    )
