"""Build the stores a store URL names. Backends' client libraries are imported only when chosen."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from core.stores.base import BreakerStore, RateLimitStore, SessionStore


class StoreConfigError(ValueError):
    """The store URL is malformed or names a backend this build cannot use."""


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store the server uses, built once per process (per Lambda cold start)."""

    sessions: SessionStore
    rate_limits: RateLimitStore
    breakers: BreakerStore


def validate_store_url(url: str) -> str:
    """The URL's scheme, after checking the URL is one Stratus understands.

    Raises:
        StoreConfigError: with a message that says what is accepted.
    """
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return scheme
    if scheme in ("redis", "rediss", "dynamodb"):
        raise StoreConfigError(f"store {url!r}: the {scheme} backend is not part of this build yet; use memory://")
    raise StoreConfigError(f"store {url!r}: expected memory://, redis://HOST, rediss://HOST or dynamodb://TABLE")


def build_stores(url: str, *, session_ttl_seconds: float) -> Stores:
    """The stores for `url`.

    Raises:
        StoreConfigError: the URL is not usable.
    """
    validate_store_url(url)
    from core.stores.memory import MemoryBreakerStore, MemoryRateLimitStore, MemorySessionStore

    return Stores(
        sessions=MemorySessionStore(ttl_seconds=session_ttl_seconds),
        rate_limits=MemoryRateLimitStore(),
        breakers=MemoryBreakerStore(),
    )
