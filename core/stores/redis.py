"""Redis stores (redis-py asyncio): every atomic step is one Lua script, run by SHA.

Keys live under a prefix and carry a hash tag, so all keys of one session, bucket or breaker sit in one slot of a
Redis Cluster / ElastiCache Serverless:

    {prefix}:{s:<session id>}          hash: data (JSON), created, expires (slid by each load), w (write token);
                                       once ended, for GRACE_SECONDS: ended (the ending write's token) alone
    {prefix}:{roster}:expires          sorted set: session id -> its expiry when last looked at
    {prefix}:{roster}:created          sorted set: session id -> its creation time
    {prefix}:{roster}:owners           hash: session id -> its principal (anonymous sessions are not in it)
    {prefix}:{roster}:principals       hash: principal -> its live sessions (for its quota)
    {prefix}:{rl:<limit key>}          hash: tokens, ts
    {prefix}:{br:<breaker key>}        hash: state, opened_at, trial_at, seq
    {prefix}:{br:<breaker key>}:fails  sorted set of failure times

Expiry is a field compared on every read; Redis key TTLs (with a grace period) only collect garbage. The roster
counts live sessions for the session limit and `/health`: a request sliding a session's expiry does not touch it,
so `sweep` re-reads the sessions whose roster expiry has passed, moving the live ones forward and dropping the
rest. A session's principal is counted in the roster's slot too, so one script admits a session against the global
limit and its principal's quota together, and one frees both. One client,
with its connection pool, serves every warm invocation on the process's one event loop. Socket timeouts, a
single immediate retry and a bounded wait for a pooled connection bound every call; a store that does not answer
becomes `StoreUnavailableError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from core.errors import PrincipalSessionsFullError, StoreUnavailableError, TooManySessionsError
from core.resilience.breaker import Admission, BreakerPolicy, CircuitState
from core.resilience.limiter import Decision, RateLimit
from core.stores import redis_scripts
from core.stores.base import (
    NO_SESSION,
    CallAdmission,
    CallChecks,
    SessionCensus,
    SessionExistsError,
    SessionRecord,
    decode_session,
    encode_session,
    owned,
)
from core.stores.factory import Stores
from core.stores.urls import WAITING_CONNECTIONS

GRACE_SECONDS = 60.0
MAX_CONNECTIONS = 100
"""Connections one process's pool for calls opens at most (the store URL's `?max_connections=N` sets it)."""
Clock = Callable[[], float]
Call = tuple[str, Sequence[str], Sequence[Any]]


@dataclass(frozen=True, slots=True)
class Command:
    """One plain Redis command, by its redis-py method name."""

    name: str
    args: Sequence[Any]
    options: dict[str, Any] = field(default_factory=dict)


def _float(value: Any) -> float:
    return float(value.decode() if isinstance(value, bytes) else value)


class RedisScripts:
    """Runs the store's Lua scripts by SHA, alone or several in one round trip, loading them on NOSCRIPT."""

    def __init__(self, client: Any, prefix: str, *, timeout: float) -> None:
        self.client = client
        self.prefix = prefix
        self.timeout = timeout
        self._sha = {name: hashlib.sha1(source.encode()).hexdigest() for name, source in redis_scripts.ALL.items()}  # noqa: S324 - Redis names scripts by SHA-1

    @property
    def _errors(self) -> tuple[type[BaseException], ...]:
        from redis.exceptions import RedisError  # imported with the client, on first use (see core.stores.lazy)

        return (RedisError, OSError, TimeoutError)

    @property
    def _no_script(self) -> type[BaseException]:
        from redis.exceptions import NoScriptError

        return NoScriptError

    def key(self, tag: str, *suffix: str) -> str:
        return ":".join([self.prefix, "{" + tag + "}", *suffix])

    async def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """One script, one round trip."""
        return (await self.run_many([(name, keys, args)]))[0]

    async def run_many(self, calls: Sequence[Call]) -> list[Any]:
        """Several scripts pipelined in one round trip (on a cluster, one per node).

        Raises:
            StoreUnavailableError: Redis did not answer within the timeout or refused the connection.
        """
        try:
            async with asyncio.timeout(self.timeout):
                results = await self._pipeline(calls)
                if any(isinstance(result, self._no_script) for result in results):
                    await self._load()
                    results = await self._pipeline(calls)
        except self._errors as error:
            raise StoreUnavailableError("The state store is unavailable; retry shortly") from error
        for result in results:
            if isinstance(result, BaseException):
                raise StoreUnavailableError("The state store failed the request; retry shortly") from result
        return results

    async def command(self, name: str, *args: Any, blocking: bool = False, **kwargs: Any) -> Any:
        """One plain Redis command, bounded like the scripts (a blocking one by its own timeout argument).

        Raises:
            StoreUnavailableError: Redis did not answer within the timeout or refused the connection.
        """
        return await self.command_on(self.client, name, *args, blocking=blocking, **kwargs)

    async def command_on(self, target: Any, name: str, *args: Any, blocking: bool = False, **kwargs: Any) -> Any:
        """`command` on another connection of the client (e.g. a pub/sub subscription)."""
        limit = self.timeout + (float(kwargs.get("timeout", 0)) if blocking else 0)
        return await self._bounded(lambda: getattr(target, name)(*args, **kwargs), limit)

    async def commands(self, calls: Sequence[Command]) -> list[Any]:
        """Plain commands pipelined in one round trip, bounded like the scripts."""

        async def pipelined() -> list[Any]:
            async with self.client.pipeline(transaction=False) as pipe:
                for call in calls:
                    getattr(pipe, call.name)(*call.args, **call.options)
                results: list[Any] = await pipe.execute()
                return results

        return await self._bounded(pipelined, self.timeout) if calls else []

    async def _bounded(self, step: Callable[[], Awaitable[Any]], limit: float) -> Any:
        try:
            async with asyncio.timeout(limit):
                return await step()
        except self._errors as error:
            raise StoreUnavailableError("The state store is unavailable; retry shortly") from error

    async def delete(self, key: str) -> bool:
        """Delete one key; whether it existed."""
        return bool(await self.command("delete", key))

    async def _pipeline(self, calls: Sequence[Call]) -> list[Any]:
        async with self.client.pipeline(transaction=False) as pipe:
            for name, keys, args in calls:
                pipe.evalsha(self._sha[name], len(keys), *keys, *args)
            results: list[Any] = await pipe.execute(raise_on_error=False)
            return results

    async def _load(self) -> None:
        for source in redis_scripts.ALL.values():
            await self.client.script_load(source)


def _decode(session_id: str, row: Sequence[Any]) -> SessionRecord:
    data = row[0].decode() if isinstance(row[0], bytes) else row[0]
    return decode_session(session_id, data, created=_float(row[1]), active=_float(row[2]), expires=_float(row[3]))


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

    def load_call(self, session_id: str) -> Call:
        """The script call that loads and touches a session (for pipelining with other steps)."""
        return "session_load", [self.scripts.key(f"s:{session_id}")], [repr(self.clock()), self.ttl, GRACE_SECONDS]

    def loaded(self, session_id: str, row: Any) -> SessionRecord | None:
        return None if row is None else _decode(session_id, row)

    async def create(self, record: SessionRecord) -> None:
        """Admit the session to the roster and write it in one round trip; when the roster (or the principal's
        quota) is full, undo the write, sweep, and try once more."""
        key = self.scripts.key(f"s:{record.session_id}")
        token = secrets.token_hex(4)  # tells this write from another create of the same id
        admitted = 0
        for attempt in range(2):
            now = self.clock()
            admit_args = [record.session_id, repr(now), repr(now + self.ttl), self.max_sessions]
            admit: Call = ("roster_admit", self.roster, [*admit_args, record.principal or "", self.max_per_principal])
            created_args = [encode_session(record), repr(now), self.ttl, GRACE_SECONDS, token]
            create: Call = ("session_create", [key], created_args)
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

    async def load(self, session_id: str) -> SessionRecord | None:
        return self.loaded(session_id, await self.scripts.run(*self.load_call(session_id)))

    async def save(self, record: SessionRecord) -> None:
        key = self.scripts.key(f"s:{record.session_id}")
        await self.scripts.run("session_save", [key], [encode_session(record), repr(self.clock())])

    async def delete(self, session_id: str) -> bool:
        """End the session (a tombstone naming this write, so a resend of it still reads as done) and free its
        places, in one round trip."""
        end: Call = ("session_end", [self.scripts.key(f"s:{session_id}")], [secrets.token_hex(4), GRACE_SECONDS])
        ended, _ = await self.scripts.run_many([end, self._free(session_id)])
        return bool(ended)

    def _forget(self, session_id: str) -> list[Call]:
        """Delete an expired session and free its places (the roster's and its principal's), in one round trip."""
        return [("key_delete", [self.scripts.key(f"s:{session_id}")], []), self._free(session_id)]

    def _free(self, session_id: str) -> Call:
        return "roster_forget", self.roster, [session_id]

    async def census(self) -> SessionCensus:
        await self.sweep()
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
            now = self.clock()
            due = await self.scripts.command("zrangebyscore", self.by_expiry, "-inf", now, 0, self.SWEEP_BATCH)
            if not due:
                break
            ids = [member.decode() for member in due]
            expiries = await self.scripts.commands(
                [Command("hget", [self.scripts.key(f"s:{session_id}"), "expires"]) for session_id in ids]
            )
            moves: list[Command] = []
            removals: list[Call] = []
            for session_id, expires in zip(ids, expiries, strict=True):
                if expires is not None and _float(expires) > now:
                    moves.append(Command("zadd", [self.by_expiry, {session_id: _float(expires)}], {"xx": True}))
                else:
                    removed += 1
                    removals += self._forget(session_id)
            await self.scripts.commands(moves)
            if removals:
                await self.scripts.run_many(removals)
        return removed


class RedisRateLimitStore:
    """Token buckets, refilled and taken from in one script."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def acquire_call(self, key: str, limit: RateLimit, cost: float = 1.0) -> Call:
        return "bucket_take", [self.scripts.key(f"rl:{key}")], [repr(self.clock()), limit.rate, limit.burst, cost]

    @staticmethod
    def decided(row: Any) -> Decision:
        return Decision(bool(int(row[0])), _float(row[1]))

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        return self.decided(await self.scripts.run(*self.acquire_call(key, limit, cost)))

    def refund_call(self, key: str, limit: RateLimit, cost: float = 1.0) -> Call:
        return "bucket_give", [self.scripts.key(f"rl:{key}")], [repr(self.clock()), limit.rate, limit.burst, cost]

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        await self.scripts.run(*self.refund_call(key, limit, cost))


class RedisBreakerStore:
    """Circuit-breaker state machines (see core.resilience.breaker), one hash and one sorted set each."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def admit_call(self, key: str, policy: BreakerPolicy) -> Call:
        return "breaker_admit", [self.scripts.key(f"br:{key}")], [repr(self.clock()), policy.cooldown_seconds]

    @staticmethod
    def admitted(row: Any) -> Admission:
        trial = _float(row[3]) if row[3] else None
        return Admission(bool(int(row[0])), CircuitState(row[1].decode()), _float(row[2]), trial)

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        return self.admitted(await self.scripts.run(*self.admit_call(key, policy)))

    def release_call(self, key: str, trial_at: float) -> Call:
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


def redis_waiting_client(url: str, *, timeout: float) -> Any:
    """A client for the long waits only, its pool apart from the calls' (the URL's `max_connections` sizes the
    calls' pool, not this one)."""
    parts = urlsplit(url)
    query = urlencode([(name, value) for name, value in parse_qsl(parts.query) if name != "max_connections"])
    return redis_client(parts._replace(query=query).geturl(), timeout=timeout, max_connections=WAITING_CONNECTIONS)


def redis_client(url: str, *, timeout: float, max_connections: int = MAX_CONNECTIONS) -> Any:
    """A client for `url` (`redis://` or `rediss://`, password and database in the URL) with bounded sockets and a
    bounded pool.

    The pool opens at most `max_connections` (the URL's `?max_connections=N` wins). A call that finds them all
    busy waits for one to come back, at most `timeout` seconds, and then fails like a Redis that does not answer
    (`StoreUnavailableError`, 503); a burst of concurrent calls therefore queues instead of being refused.
    """
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        # One immediate retry replaces a pooled connection that died (e.g. Redis restarted); more would only wait.
        retry=Retry(NoBackoff(), 1),
        health_check_interval=30,
    )
    return Redis.from_pool(pool)


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
        calls: list[Call] = []
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


def redis_stores(
    client: Any,
    *,
    prefix: str,
    session_ttl_seconds: float,
    timeout: float,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Clock = time.time,
    waiting_client: Any = None,
) -> Stores:
    """Every store over one Redis client (and its connection pool). Long waits (a stream following its log, a call
    awaiting the client's reply) hold a connection each for as long as they last: `waiting_client`, a client of
    its own, keeps them from starving the calls of connections (by default they share `client`)."""
    scripts = RedisScripts(client, prefix, timeout=timeout)
    waits = RedisScripts(waiting_client, prefix, timeout=timeout) if waiting_client is not None else scripts
    sessions = RedisSessionStore(
        scripts,
        ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_per_principal=max_sessions_per_principal,
        clock=clock,
    )
    rate_limits = RedisRateLimitStore(scripts, clock=clock)
    breakers = RedisBreakerStore(scripts, clock=clock)
    from core.stores.redis_extra import RedisCacheStore, RedisEventLogStore, RedisPendingRequestStore, RedisTaskStore

    return Stores(
        sessions,
        rate_limits,
        breakers,
        events=RedisEventLogStore(scripts, ttl_seconds=session_ttl_seconds, clock=clock, waits=waits),
        pending=RedisPendingRequestStore(scripts, clock=clock, waits=waits),
        tasks=RedisTaskStore(scripts, clock=clock),
        cache=RedisCacheStore(scripts, clock=clock),
        gate=RedisGate(sessions, rate_limits, breakers),
        close=_closing(client, waiting_client),
    )


def _closing(*clients: Any) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        for client in clients:
            if client is not None:
                await client.aclose()

    return close
