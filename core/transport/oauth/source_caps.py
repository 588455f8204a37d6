"""How many writes one source address may cause at the front, per hour: a token bucket per address in the store,
shared by every container (the registration cap's machinery). Registrations have theirs; sign-ins started and client
metadata documents fetched share another, ten times as large, so that a flood of anonymous `/authorize` requests
cannot fill the store that every user's session lives in."""

from __future__ import annotations

from stratus.resilience.limiter import RateLimit
from stratus.stores.base import RateLimitStore
from stratus.transport.oauth.replies import OAuthError, source_address
from stratus.types import Scope

SIGN_INS_PER_REGISTRATION = 10
"""Sign-ins an address may start (and documents it may have fetched) an hour, per registration it may make."""


class SourceCap:
    """At most `per_hour` of one kind of write per source address an hour."""

    def __init__(self, kind: str, limits: RateLimitStore, per_hour: int, *, trust_context_header: bool) -> None:
        self._kind = kind
        self._limits = limits
        self._limit = RateLimit(per_hour / 3600.0, float(per_hour))
        self._trust_header = trust_context_header

    async def take(self, scope: Scope, what: str) -> None:
        """One write for the request's source address.

        Raises:
            OAuthError: the address has used up its hour (429 `temporarily_unavailable`, with `Retry-After`, naming
            the setting that raises the cap).
        """
        address = source_address(scope, trust_header=self._trust_header)
        decision = await self._limits.acquire(f"oauth-{self._kind}:{address}", self._limit)
        if not decision.allowed:
            raise OAuthError(
                "temporarily_unavailable",
                f"too many {what} from this address; try again later (STRATUS_AUTH_REGISTRATIONS_PER_HOUR sets how "
                f"many clients an address may register an hour, and {SIGN_INS_PER_REGISTRATION} times as many "
                "sign-ins)",
                429,
                {"retry-after": str(max(1, round(decision.retry_after)))},
            )
