"""Handshake-era sessions and their roster (the global limit, the per-principal quota) in a dict."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
from stratus.stores.records import SessionCensus, SessionExistsError, SessionRecord, copy_session


class MemorySessionStore:
    """Sessions in a dict, expired lazily on read and by `sweep`; the live sessions of each principal counted beside
    them for its quota (anonymous sessions count only toward the global limit)."""

    def __init__(
        self,
        *,
        ttl_seconds: float = 3600.0,
        max_sessions: int = 0,
        max_per_principal: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._records: dict[str, SessionRecord] = {}
        self._owned: Counter[str] = Counter()
        self._ttl = ttl_seconds
        self._max = max_sessions
        self._max_per_principal = max_per_principal
        self._clock = clock

    async def create(self, record: SessionRecord) -> None:
        now = self._clock()
        existing = self._records.get(record.session_id)
        if existing is not None and existing.expires_at > now:
            raise SessionExistsError(record.session_id)
        self._drop(record.session_id)
        if self._refusal(record) is not None:
            await self.sweep()
            if (refusal := self._refusal(record)) is not None:
                raise refusal
        self._records[record.session_id] = dataclasses.replace(
            record, created_at=now, last_active_at=now, expires_at=now + self._ttl
        )
        if record.principal:
            self._owned[record.principal] += 1

    def _refusal(self, record: SessionRecord) -> TooManySessionsError | None:
        """Why the session cannot be admitted now: its principal's quota (told first: only the caller can free
        it), or the global limit."""
        quota = self._max_per_principal
        if quota and record.principal and self._owned[record.principal] >= quota:
            return PrincipalSessionsFullError(quota)
        if self._max and len(self._records) >= self._max:
            return TooManySessionsError(self._max)
        return None

    def _drop(self, session_id: str) -> SessionRecord | None:
        """Remove a session and free its places (global and its principal's)."""
        record = self._records.pop(session_id, None)
        if record is not None and record.principal:
            self._owned[record.principal] -= 1
            if self._owned[record.principal] <= 0:
                del self._owned[record.principal]
        return record

    async def load(self, session_id: str, *, consistent: bool = True) -> SessionRecord | None:
        record = self._records.get(session_id)
        if record is None:
            return None
        now = self._clock()
        if record.expires_at <= now:
            self._drop(session_id)
            return None
        record.last_active_at = now
        record.expires_at = now + self._ttl
        return copy_session(record)

    async def save(self, record: SessionRecord) -> None:
        existing = self._records.get(record.session_id)
        if existing is not None and existing.expires_at > self._clock():
            self._records[record.session_id] = dataclasses.replace(
                record,
                principal=existing.principal,  # the owner never changes: its count stays true
                created_at=existing.created_at,
                last_active_at=existing.last_active_at,
                expires_at=existing.expires_at,
            )

    async def delete(self, session_id: str) -> bool:
        return self._drop(session_id) is not None

    async def census(self) -> SessionCensus:
        await self.sweep()
        created = [record.created_at for record in self._records.values()]
        return SessionCensus(len(created), min(created, default=None), max(created, default=None))

    async def sweep_step(self) -> int:
        return await self.sweep()  # one process's dict: a full sweep is already cheap

    async def sweep(self) -> int:
        now = self._clock()
        expired = [key for key, record in self._records.items() if record.expires_at <= now]
        for key in expired:
            self._drop(key)
        return len(expired)

    def __len__(self) -> int:
        return len(self._records)
