"""Rate limits (atomic counters per fixed window), circuit breakers (versioned items) and the call gate that
answers a tools/call's session, counters and breaker in at most two requests, all or nothing."""

from __future__ import annotations

import contextlib

from stratus.errors import StoreBusyError
from stratus.resilience import breaker as breaker_machine
from stratus.resilience import limiter
from stratus.resilience.breaker import Admission, BreakerPolicy, BreakerState, CircuitState
from stratus.resilience.limiter import Decision, RateLimit
from stratus.stores.dynamodb.sessions import DynamoSessionStore
from stratus.stores.dynamodb.table import (
    ATTEMPTS,
    GRACE_SECONDS,
    ConditionFailedError,
    DynamoTable,
    Item,
    back_off,
    number,
    number_of,
    version_of,
)
from stratus.stores.records import NO_SESSION, CallAdmission, CallChecks, owned


class DynamoRateLimitStore:
    """Rate limits as atomic counters per fixed window (`stratus.resilience.limiter.window`): one conditional
    `ADD` each, so racing containers never admit more than the limit and never have to retry."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def count(self, bucket_key: str, limit: RateLimit, cost: float, now: float) -> tuple[Item, float]:
        """The update counting one call in the current window, and when that window ends."""
        index, ends = limiter.window(limit, now)
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.table.key("window", f"{bucket_key}#{index}"),
                "UpdateExpression": "ADD #count :cost SET expires = :expires",
                "ConditionExpression": "attribute_not_exists(#count) OR #count <= :room",
                "ExpressionAttributeNames": {"#count": "count"},
                "ExpressionAttributeValues": {
                    ":cost": number(cost),
                    ":room": number(limit.burst - cost),
                    ":expires": number(ends + GRACE_SECONDS),
                },
            }
        }
        return update, ends

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        now = self.table.clock()
        update, ends = self.count(key, limit, cost, now)
        try:
            await self.table.write([update])
        except ConditionFailedError:
            return Decision(False, ends - now)
        return Decision(True)

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        """Uncount a call in the current window (a call counted in a window that has ended needs no refund)."""
        index, _ = limiter.window(limit, self.table.clock())
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.table.key("window", f"{key}#{index}"),
                "UpdateExpression": "ADD #count :minus",
                "ConditionExpression": "#count >= :cost",
                "ExpressionAttributeNames": {"#count": "count"},
                "ExpressionAttributeValues": {":minus": number(-cost), ":cost": number(cost)},
            }
        }
        with contextlib.suppress(ConditionFailedError):
            await self.table.write([update])


def breaker_state(item: Item | None, now: float) -> BreakerState:
    if item is None or number_of(item, "expires") <= now:
        return BreakerState()
    failures = tuple(float(value["N"]) for value in item.get("failures", {}).get("L", []))
    trial = item.get("trial_at")
    return BreakerState(
        CircuitState(item["state"]["S"]), failures, number_of(item, "opened_at"), float(trial["N"]) if trial else None
    )


class DynamoBreakerStore:
    """Circuit breakers: the state machine of `stratus.resilience.breaker`, written back on the version read."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def key(self, breaker_key: str) -> Item:
        return self.table.key("breaker", breaker_key)

    def put(self, breaker_key: str, item: Item | None, state: BreakerState, policy: BreakerPolicy, now: float) -> Item:
        fresh: Item = {
            **self.key(breaker_key),
            "state": {"S": state.state.value},
            "opened_at": number(state.opened_at),
            "failures": {"L": [number(at) for at in state.failures]},
            "expires": number(now + policy.window_seconds + policy.cooldown_seconds + GRACE_SECONDS),
        }
        if state.trial_started_at is not None:
            fresh["trial_at"] = number(state.trial_started_at)
        return self.table.versioned_put(fresh, version_of(item))

    def admit_from(
        self, breaker_key: str, item: Item | None, policy: BreakerPolicy, now: float
    ) -> tuple[Admission, Item | None]:
        current = breaker_state(item, now)
        admission, after = breaker_machine.admit(current, policy, now)
        return admission, (None if after == current else self.put(breaker_key, item, after, policy, now))

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        for attempt in range(ATTEMPTS):
            item = await self.table.get(self.key(key))
            admission, write = self.admit_from(key, item, policy, self.table.clock())
            if write is None:
                return admission
            try:
                await self.table.write([write])
                return admission
            except ConditionFailedError:
                await back_off(attempt)
        raise StoreBusyError("The circuit breaker is too contended to decide; retry shortly")

    async def release(self, key: str, trial_at: float) -> None:
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.key(key),
                "UpdateExpression": "REMOVE trial_at ADD v :one",
                "ConditionExpression": "#state = :half AND trial_at = :trial",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": {
                    ":one": number(1),
                    ":half": {"S": CircuitState.HALF_OPEN.value},
                    ":trial": number(trial_at),
                },
            }
        }
        with contextlib.suppress(ConditionFailedError):  # the trial is no longer ours to give back
            await self.table.write([update])

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        for attempt in range(ATTEMPTS):
            item = await self.table.get(self.key(key))
            now = self.table.clock()
            before = breaker_state(item, now)
            after = breaker_machine.record(before, policy, now, success=success)
            if after == before:
                return before.state, after.state
            try:
                await self.table.write([self.put(key, item, after, policy, now)])
                return before.state, after.state
            except ConditionFailedError:
                await back_off(attempt)
        raise StoreBusyError("The circuit breaker is too contended to record; retry shortly")


class DynamoGate:
    """A call's checks in at most two requests: a consistent BatchGetItem of the session and the breaker, then
    one write (a transaction when several) of the window counters and whatever else changed."""

    def __init__(
        self, sessions: DynamoSessionStore, rate_limits: DynamoRateLimitStore, breakers: DynamoBreakerStore
    ) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers
        self.table = sessions.table

    async def admit(self, checks: CallChecks) -> CallAdmission:
        for attempt in range(ATTEMPTS):
            keys: list[Item] = []
            if checks.session_id:
                keys.append(self.sessions.key(checks.session_id))
            if checks.breaker:
                keys.append(self.breakers.key(checks.breaker[0]))
            items = iter(await self.table.get_many(keys) if keys else [])
            now = self.table.clock()
            writes: list[Item] = []
            session = None
            if checks.session_id:
                session = self.sessions.live(checks.session_id, next(items), now)
                if not owned(session, checks.owner):
                    return NO_SESSION
                touch = self.sessions.touch(session, now) if session else None
                if touch:
                    writes.append(touch)
            admission = breaker_write = None
            if checks.breaker:
                admission, breaker_write = self.breakers.admit_from(
                    checks.breaker[0], next(items), checks.breaker[1], now
                )
            first_limit = len(writes)
            window_ends = []
            if admission is None or admission.allowed:  # an open circuit refuses the call: count nothing
                for key, limit in checks.limits:
                    update, ends = self.rate_limits.count(key, limit, 1.0, now)
                    writes.append(update)
                    window_ends.append(ends)
            if breaker_write:  # in the counters' transaction: a limit that refuses also keeps the trial unspent
                writes.append(breaker_write)
            try:
                if writes:
                    await self.table.write(writes)
            except ConditionFailedError as failure:
                refused = [
                    index - first_limit for index in failure.failed if 0 <= index - first_limit < len(window_ends)
                ]
                if refused:  # over a limit: the whole write was cancelled, nothing is counted or changed
                    decisions = tuple(
                        Decision(False, window_ends[i] - now) if i in refused else Decision(True)
                        for i in range(len(window_ends))
                    )
                    return CallAdmission(session, decisions, admission)
                await back_off(attempt)  # another container changed the session or breaker: decide again
                continue
            return CallAdmission(session, tuple(Decision(True) for _ in checks.limits), admission)
        raise StoreBusyError("The call's checks are too contended to decide; retry shortly")
