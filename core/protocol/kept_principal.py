"""What a call run later, elsewhere (a task, a relayed call), keeps of its caller to run as it: identity, scopes, roles
and the issuer, never the token (`stratus.stores.task_records.KeptPrincipal`)."""

from __future__ import annotations

from stratus.server.principal import Principal
from stratus.stores.task_records import KeptPrincipal


def kept_principal(principal: Principal | None) -> KeptPrincipal | None:
    """What a stored call keeps of its caller."""
    if principal is None:
        return None
    issuer = principal.claims.get("iss")
    return KeptPrincipal(
        subject=principal.subject,
        scopes=tuple(sorted(principal.scopes)),
        roles=tuple(sorted(principal.roles)),
        issuer=issuer if isinstance(issuer, str) else None,
    )


def principal_from(kept: KeptPrincipal | None) -> Principal | None:
    """The caller a stored call runs as."""
    if kept is None:
        return None
    return Principal(
        subject=kept.subject,
        scopes=frozenset(kept.scopes),
        roles=frozenset(kept.roles),
        claims={"iss": kept.issuer} if kept.issuer is not None else {},
    )
