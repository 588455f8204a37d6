"""Token buckets and breaker states in dicts, and the gate that answers a call's checks one after another."""

from __future__ import annotations

import time
from collections.abc import Callable

from stratus.resilience import breaker, limiter
from stratus.resilience.breaker import Admission, BreakerPolicy, BreakerState, CircuitState
from stratus.resilience.limiter import Bucket, Decision, RateLimit
from stratus.stores.base import BreakerStore, RateLimitStore, SessionStore
from stratus.stores.records import NO_SESSION, CallAdmission, CallChecks, owned


class SequentialGate:
    """A gate over any stores: one operation after another, giving back what a refused call took (the in-memory
    stores have no round trips to save, and nothing awaits inside them, so no other call sees the tokens gone)."""

    def __init__(self, sessions: SessionStore, rate_limits: RateLimitStore, breakers: BreakerStore) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers

    async def admit(self, checks: CallChecks) -> CallAdmission:
        session = None
        if checks.session_id is not None:
            session = await self.sessions.load(checks.session_id)
            if not owned(session, checks.owner):
                return NO_SESSION
        decisions = tuple([await self.rate_limits.acquire(key, limit) for key, limit in checks.limits])
        breaker = await self.breakers.admit(*checks.breaker) if checks.breaker else None
        admission = CallAdmission(session, decisions, breaker)
        if not admission.allowed:
            for (key, limit), decision in zip(checks.limits, decisions, strict=True):
                if decision.allowed:
                    await self.rate_limits.refund(key, limit)
            if checks.breaker and breaker is not None and breaker.trial_at is not None:
                await self.breakers.release(checks.breaker[0], breaker.trial_at)
        return admission


class MemoryRateLimitStore:
    """Token buckets in a dict. Atomic because nothing awaits between reading and writing a bucket."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._buckets: dict[str, Bucket] = {}
        self._clock = clock

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        decision, self._buckets[key] = limiter.take(self._buckets.get(key), limit, self._clock(), cost)
        return decision

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        self._buckets[key] = limiter.give_back(self._buckets.get(key), limit, self._clock(), cost)


class MemoryBreakerStore:
    """Breaker states in a dict. Atomic because nothing awaits between reading and writing a state."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._states: dict[str, BreakerState] = {}
        self._clock = clock

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        admission, self._states[key] = breaker.admit(self._states.get(key, BreakerState()), policy, self._clock())
        return admission

    async def release(self, key: str, trial_at: float) -> None:
        if key in self._states:
            self._states[key] = breaker.release(self._states[key], trial_at)

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        before = self._states.get(key, BreakerState())
        after = breaker.record(before, policy, self._clock(), success=success)
        self._states[key] = after
        return before.state, after.state
