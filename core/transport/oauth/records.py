"""What the front keeps in the stack's store: every code, sign-in, consent, client and refresh grant, under the hash
of its key (a copy of the store holds no usable code or token), with a time to live.

Single use (codes, sign-ins, refresh tokens: RFC 6749 sections 4.1.2 and 10.4) is a claim, the store's one atomic
first-writer-wins step: the first taker claims the key, every later one finds the claim and learns it is a replay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from stratus.stores.base import CacheStore

PREFIX = "oauth"


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class Taken(NamedTuple):
    """What taking a single-use record found: the record (None when unknown or expired), and whether it had been
    taken before (a replay: the record is then the one the first taker got)."""

    record: dict[str, Any] | None
    replayed: bool

    @property
    def fresh(self) -> dict[str, Any] | None:
        """The record, when this was its first taking."""
        return None if self.replayed else self.record


class FrontRecords:
    """The front's records, by kind and key."""

    def __init__(self, cache: CacheStore) -> None:
        self._cache = cache

    @staticmethod
    def _key(kind: str, key: str) -> str:
        return f"{PREFIX}:{kind}:{digest(key)}"

    async def put(self, kind: str, key: str, record: dict[str, Any], ttl_seconds: float) -> None:
        await self._cache.set(self._key(kind, key), json.dumps(record, separators=(",", ":")), ttl_seconds)

    async def get(self, kind: str, key: str) -> dict[str, Any] | None:
        stored = await self._cache.get(self._key(kind, key))
        if stored is None:
            return None
        record: dict[str, Any] = json.loads(stored)
        return record

    async def delete(self, kind: str, key: str) -> None:
        await self._cache.delete(self._key(kind, key))

    async def take(
        self, kind: str, key: str, ttl_seconds: float, check: Callable[[dict[str, Any]], None] | None = None
    ) -> Taken:
        """The record, at most once: `ttl_seconds` must outlive the record, so that a late replay is still seen.
        The record is read first, so a key that names nothing (a guess) writes nothing, and `check` (which raises to
        refuse the request) sees it before it is taken, so a refused request leaves it for the next honest one; a
        taken record stays until it expires, so that its replay is known as one."""
        record = await self.get(kind, key)
        if record is None:
            return Taken(None, replayed=False)
        if check is not None:
            check(record)
        replayed = not await self._cache.claim(self._key(f"{kind}-taken", key), ttl_seconds)
        return Taken(record, replayed)

    async def claim(self, kind: str, key: str, ttl_seconds: float) -> bool:
        """Whether this is the first claim of `key` (a single-use form's nonce) in `ttl_seconds`."""
        return await self._cache.claim(self._key(kind, key), ttl_seconds)

    async def mark(self, kind: str, key: str, ttl_seconds: float) -> None:
        """Note that `key` happened (a revoked grant), for `ttl_seconds`."""
        await self._cache.set(self._key(kind, key), "1", ttl_seconds)

    async def marked(self, kind: str, key: str) -> bool:
        return await self._cache.get(self._key(kind, key)) is not None
