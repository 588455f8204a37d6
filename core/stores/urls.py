"""The store URL grammar (`memory://`, `redis://HOST`, `rediss://HOST`, `dynamodb://TABLE`) and what settings need to
know about a backend before one is built. A leaf: settings check a URL here without importing any backend."""

from __future__ import annotations

from urllib.parse import urlsplit

WAITING_CONNECTIONS = 1000
"""Connections one process's Redis pool for long waits opens at most: each open stream following its log, and each
call awaiting its client's reply, holds one while it waits (`STRATUS_MAX_STREAMS` stays below it)."""


class StoreConfigError(ValueError):
    """The store URL is malformed or names a backend this build cannot use."""


def validate_store_url(url: str) -> str:
    """The URL's scheme, after checking the URL is one Stratus understands.

    Raises:
        StoreConfigError: with a message that says what is accepted.
    """
    parts = urlsplit(url)
    if parts.scheme == "memory":
        return parts.scheme
    if parts.scheme in ("redis", "rediss"):
        if not parts.hostname:
            raise StoreConfigError(f"store {url!r}: a Redis URL needs a host, e.g. redis://127.0.0.1:6379/0")
        return parts.scheme
    if parts.scheme == "dynamodb":
        if not parts.netloc or parts.path not in ("", "/"):
            raise StoreConfigError(f"store {url!r}: name the table, e.g. dynamodb://stratus-state")
        return parts.scheme
    raise StoreConfigError(f"store {url!r}: expected memory://, redis://HOST, rediss://HOST or dynamodb://TABLE")


def is_shared(url: str) -> bool:
    """Whether the store is shared between processes (so every secret must be too)."""
    return urlsplit(url).scheme != "memory"
