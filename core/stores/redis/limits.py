"""Token buckets and circuit breakers as Lua scripts, and the call gate that answers a tools/call's session,
buckets and breaker in one pipelined round trip, all or nothing."""

from __future__ import annotations

import time
from typing import Any

from stratus.resilience.breaker import Admission, BreakerPolicy, CircuitState
from stratus.resilience.deadline import Clock
from stratus.resilience.limiter import Decision, RateLimit
from stratus.stores.records import (
    NO_SESSION,
    CallAdmission,
    CallChecks,
    owned,
)
from stratus.stores.redis.scripts import RedisScripts, ScriptCall, as_float
from stratus.stores.redis.sessions import RedisSessionStore


class RedisRateLimitStore:
    """Token buckets, refilled and taken from in one script."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def acquire_call(self, key: str, limit: RateLimit, cost: float = 1.0) -> ScriptCall:
        return "bucket_take", [self.scripts.key(f"rl:{key}")], [repr(self.clock()), limit.rate, limit.burst, cost]

    @staticmethod
    def decided(row: Any) -> Decision:
        return Decision(bool(int(row[0])), as_float(row[1]))

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        return self.decided(await self.scripts.run(*self.acquire_call(key, limit, cost)))

    def refund_call(self, key: str, limit: RateLimit, cost: float = 1.0) -> ScriptCall:
        return "bucket_give", [self.scripts.key(f"rl:{key}")], [repr(self.clock()), limit.rate, limit.burst, cost]

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        await self.scripts.run(*self.refund_call(key, limit, cost))


class RedisBreakerStore:
    """Circuit-breaker state machines (see stratus.resilience.breaker), one hash and one sorted set each."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def admit_call(self, key: str, policy: BreakerPolicy) -> ScriptCall:
        return "breaker_admit", [self.scripts.key(f"br:{key}")], [repr(self.clock()), policy.cooldown_seconds]

    @staticmethod
    def admitted(row: Any) -> Admission:
        trial = as_float(row[3]) if row[3] else None
        return Admission(bool(int(row[0])), CircuitState(row[1].decode()), as_float(row[2]), trial)

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        return self.admitted(await self.scripts.run(*self.admit_call(key, policy)))

    def release_call(self, key: str, trial_at: float) -> ScriptCall:
        return "breaker_release", [self.scripts.key(f"br:{key}")], [repr(trial_at)]

    async def release(self, key: str, trial_at: float) -> None:
        await self.scripts.run(*self.release_call(key, trial_at))

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        keys = [self.scripts.key(f"br:{key}"), self.scripts.key(f"br:{key}", "fails")]
        args = [
            repr(self.clock()),
            "1" if success else "0",
            policy.failure_threshold,
            policy.window_seconds,
            policy.cooldown_seconds,
        ]
        before, after = await self.scripts.run("breaker_record", keys, args)
        return CircuitState(before.decode()), CircuitState(after.decode())


class RedisGate:
    """A call's session, buckets and breaker answered in one pipelined round trip; a refused call gives back what
    it took in a second one. The keys sit in different slots (a script cannot span them on a cluster), so the
    tokens a refused call took are held for that one round trip, never kept."""

    def __init__(
        self, sessions: RedisSessionStore, rate_limits: RedisRateLimitStore, breakers: RedisBreakerStore
    ) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers

    async def admit(self, checks: CallChecks) -> CallAdmission:
        calls: list[ScriptCall] = []
        if checks.session_id:
            calls.append(self.sessions.load_call(checks.session_id))
        calls += [self.rate_limits.acquire_call(key, limit) for key, limit in checks.limits]
        if checks.breaker:
            calls.append(self.breakers.admit_call(*checks.breaker))
        results = iter(await self.scripts.run_many(calls)) if calls else iter(())
        session = self.sessions.loaded(checks.session_id, next(results)) if checks.session_id else None
        decisions = tuple(self.rate_limits.decided(next(results)) for _ in checks.limits)
        breaker = self.breakers.admitted(next(results)) if checks.breaker else None
        admission = CallAdmission(session, decisions, breaker)
        session_refused = checks.session_id is not None and not owned(session, checks.owner)
        if session_refused or not admission.allowed:
            await self._give_back(checks, admission)
        return NO_SESSION if session_refused else admission

    async def _give_back(self, checks: CallChecks, admission: CallAdmission) -> None:
        calls = [
            self.rate_limits.refund_call(key, limit)
            for (key, limit), decision in zip(checks.limits, admission.decisions, strict=True)
            if decision.allowed
        ]
        if checks.breaker and admission.breaker is not None and admission.breaker.trial_at is not None:
            calls.append(self.breakers.release_call(checks.breaker[0], admission.breaker.trial_at))
        if calls:
            await self.scripts.run_many(calls)

    @property
    def scripts(self) -> RedisScripts:
        return self.sessions.scripts
