"""Who is calling: the principal an authenticator or a guard established for a request."""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple


class Principal(NamedTuple):
    """An authenticated caller: a stable subject, what it may do, and the claims it was established from."""

    subject: str
    scopes: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = MappingProxyType({})

    @property
    def key(self) -> str:
        """The principal's identity for binding sessions and keying rate limits (issuer-qualified when known)."""
        issuer = self.claims.get("iss")
        return f"{issuer}|{self.subject}" if isinstance(issuer, str) else self.subject
