"""Handshake-era sessions and their roster (two sorted sets, the per-principal counts) as Redis keys."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
from stratus.resilience.deadline import Clock
from stratus.stores.dynamodb.table import GRACE_SECONDS
from stratus.stores.records import (
    SessionCensus,
    SessionExistsError,
    SessionRecord,
    decode_session,
    encode_session,
)
from stratus.stores.redis.scripts import Command, RedisScripts, ScriptCall, as_float


def decode_row(session_id: str, row: Sequence[Any]) -> SessionRecord:
    data = row[0].decode() if isinstance(row[0], bytes) else row[0]
    return decode_session(session_id, data, created=as_float(row[1]), active=as_float(row[2]), expires=as_float(row[3]))


class RedisSessionStore:
    """Legacy sessions with a sliding expiry, one hash each, counted in the roster (and by principal)."""

    SWEEP_BATCH = 500
    SWEEP_BATCHES = 200

    def __init__(
        self,
        scripts: RedisScripts,
        *,
        ttl_seconds: float,
        max_sessions: int = 0,
        max_per_principal: int = 0,
        clock: Clock = time.time,
    ) -> None:
        self.scripts = scripts
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self.max_per_principal = max_per_principal
        self.clock = clock
        self.by_expiry = scripts.key("roster", "expires")
        self.by_creation = scripts.key("roster", "created")
        owners, counts = scripts.key("roster", "owners"), scripts.key("roster", "principals")
        self.roster = [self.by_expiry, self.by_creation, owners, counts]
        """The keys the admitting and forgetting scripts take, all in the roster's slot."""

    def load_call(self, session_id: str) -> ScriptCall:
        """The script call that loads and touches a session (for pipelining with other steps)."""
        return "session_load", [self.scripts.key(f"s:{session_id}")], [repr(self.clock()), self.ttl, GRACE_SECONDS]

    def loaded(self, session_id: str, row: Any) -> SessionRecord | None:
        return None if row is None else decode_row(session_id, row)

    async def create(self, record: SessionRecord) -> None:
        """Admit the session to the roster and write it in one round trip; when the roster (or the principal's
        quota) is full, undo the write, sweep, and try once more. With no quota the principal is not counted (the
        roster's owners name only counted sessions, so ending one gives back only a count it took)."""
        key = self.scripts.key(f"s:{record.session_id}")
        token = secrets.token_hex(4)  # tells this write from another create of the same id
        admitted = 0
        for attempt in range(2):
            now = self.clock()
            admit_args = [record.session_id, repr(now), repr(now + self.ttl), self.max_sessions]
            admit: ScriptCall = (
                "roster_admit",
                self.roster,
                [*admit_args, (record.principal or "") if self.max_per_principal else "", self.max_per_principal],
            )
            created_args = [encode_session(record), repr(now), self.ttl, GRACE_SECONDS, token]
            create: ScriptCall = ("session_create", [key], created_args)
            admitted, created = (int(result) for result in await self.scripts.run_many([admit, create]))
            if not created:
                raise SessionExistsError(record.session_id)
            if admitted == 1:
                return
            await self.scripts.delete(key)
            if attempt or not await self.sweep():
                break
        if admitted < 0:
            raise PrincipalSessionsFullError(self.max_per_principal)
        raise TooManySessionsError(self.max_sessions)

    async def load(self, session_id: str, *, consistent: bool = True) -> SessionRecord | None:
        return self.loaded(session_id, await self.scripts.run(*self.load_call(session_id)))

    async def save(self, record: SessionRecord) -> None:
        key = self.scripts.key(f"s:{record.session_id}")
        await self.scripts.run("session_save", [key], [encode_session(record), repr(self.clock())])

    async def delete(self, session_id: str) -> bool:
        """End the session (a tombstone naming this write, so a resend of it still reads as done) and free its
        places, in one round trip."""
        end: ScriptCall = ("session_end", [self.scripts.key(f"s:{session_id}")], [secrets.token_hex(4), GRACE_SECONDS])
        ended, _ = await self.scripts.run_many([end, self._free(session_id)])
        return bool(ended)

    def _forget(self, session_id: str) -> list[ScriptCall]:
        """Delete an expired session and free its places (the roster's and its principal's), in one round trip."""
        return [("key_delete", [self.scripts.key(f"s:{session_id}")], []), self._free(session_id)]

    def _free(self, session_id: str) -> ScriptCall:
        return "roster_forget", self.roster, [session_id]

    async def census(self) -> SessionCensus:
        """One bounded sweep step, then the roster's size and ends: O(log n) in the sessions, one round trip each."""
        await self.sweep_step()
        count, oldest, newest = await self.scripts.commands(
            [
                Command("zcard", [self.by_expiry]),
                Command("zrange", [self.by_creation, 0, 0], {"withscores": True}),
                Command("zrange", [self.by_creation, -1, -1], {"withscores": True}),
            ]
        )
        return SessionCensus(int(count), oldest[0][1] if oldest else None, newest[0][1] if newest else None)

    async def sweep(self) -> int:
        removed = 0
        for _ in range(self.SWEEP_BATCHES):
            swept = await self._sweep_batch()
            if swept is None:
                break
            removed += swept
        return removed

    async def sweep_step(self) -> int:
        """One batch of at most `SWEEP_BATCH` due sessions (the roster by expiry finds them without a scan)."""
        return await self._sweep_batch() or 0

    async def _sweep_batch(self) -> int | None:
        """Remove the due sessions of one batch, move the touched ones forward; None when none was due."""
        removed = 0
        now = self.clock()
        due = await self.scripts.command("zrangebyscore", self.by_expiry, "-inf", now, 0, self.SWEEP_BATCH)
        if not due:
            return None
        ids = [member.decode() for member in due]
        expiries = await self.scripts.commands(
            [Command("hget", [self.scripts.key(f"s:{session_id}"), "expires"]) for session_id in ids]
        )
        moves: list[Command] = []
        removals: list[ScriptCall] = []
        for session_id, expires in zip(ids, expiries, strict=True):
            if expires is not None and as_float(expires) > now:
                moves.append(Command("zadd", [self.by_expiry, {session_id: as_float(expires)}], {"xx": True}))
            else:
                removed += 1
                removals += self._forget(session_id)
        await self.scripts.commands(moves)
        if removals:
            await self.scripts.run_many(removals)
        return removed
