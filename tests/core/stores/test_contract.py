"""One contract every store backend passes: sessions, rate-limit buckets and circuit breakers.

Time is the injected clock (backends take `now` from it), so nothing here sleeps.
"""

from __future__ import annotations

import pytest

from stratus.resilience.breaker import BreakerPolicy, CircuitState
from stratus.resilience.limiter import RateLimit
from stratus.stores.records import SessionExistsError, SessionRecord
from tests.fixtures.store_backends import TTL, Backend

pytestmark = pytest.mark.anyio


def record(session_id: str = "s-1") -> SessionRecord:
    return SessionRecord(
        session_id=session_id,
        protocol_version="2025-11-25",
        client_capabilities={"sampling": {}},
        client_info={"name": "client", "version": "1"},
        principal="issuer|alice",
    )


async def test_a_created_session_loads_back_with_every_field(backend: Backend) -> None:
    await backend.stores.sessions.create(record())
    loaded = await backend.stores.sessions.load("s-1")
    assert loaded is not None
    assert (loaded.protocol_version, loaded.client_capabilities, loaded.client_info, loaded.principal) == (
        "2025-11-25",
        {"sampling": {}},
        {"name": "client", "version": "1"},
        "issuer|alice",
    )
    assert loaded.created_at == backend.clock.now and loaded.expires_at == backend.clock.now + TTL


async def test_a_session_id_cannot_be_created_twice(backend: Backend) -> None:
    await backend.stores.sessions.create(record())
    with pytest.raises(SessionExistsError):
        await backend.stores.sessions.create(record())


async def test_unknown_sessions_load_as_none(backend: Backend) -> None:
    assert await backend.stores.sessions.load("never") is None


async def test_each_load_slides_the_expiry(backend: Backend) -> None:
    await backend.stores.sessions.create(record())
    for _ in range(3):
        backend.clock.advance(TTL - 1)
        loaded = await backend.stores.sessions.load("s-1")
        assert loaded is not None and loaded.last_active_at == backend.clock.now


async def test_a_session_lives_at_least_its_timeout_past_its_last_load(backend: Backend) -> None:
    """However its backend spaces the writes that slide an expiry (DynamoDB: once per tenth of the timeout), no
    session ends before the timeout has passed since the last request that read it."""
    await backend.stores.sessions.create(record())
    for step in (TTL / 20, TTL / 5, TTL / 20):  # the first and last within a tenth of a slide: no write on DynamoDB
        backend.clock.advance(step)
        assert await backend.stores.sessions.load("s-1") is not None
    backend.clock.advance(TTL - 1)
    assert await backend.stores.sessions.load("s-1") is not None
    backend.clock.advance(TTL * 2)
    assert await backend.stores.sessions.load("s-1") is None


async def test_an_expired_session_is_absent_even_before_the_backend_deletes_it(backend: Backend) -> None:
    await backend.stores.sessions.create(record())
    backend.clock.advance(TTL + 1)
    if backend.redis is not None:
        assert await backend.redis.exists(f"{backend.prefix}:{{s:s-1}}") == 1  # still stored: only expired
    if backend.dynamo is not None:
        key = {"PK": {"S": "t#session#s-1"}, "SK": {"S": "session"}}
        assert "Item" in backend.dynamo.get_item(TableName=backend.table, Key=key)  # TTL deletion has not run
    assert await backend.stores.sessions.load("s-1") is None


async def test_saves_update_a_live_session_but_never_revive_an_ended_one(backend: Backend) -> None:
    sessions = backend.stores.sessions
    await sessions.create(record())
    live = await sessions.load("s-1")
    assert live is not None
    live.log_level, live.subscriptions, live.initialized = "debug", ["test://a"], True
    await sessions.save(live)
    saved = await sessions.load("s-1")
    assert saved is not None
    assert (saved.log_level, saved.subscriptions, saved.initialized) == ("debug", ["test://a"], True)
    assert await sessions.delete("s-1") is True
    await sessions.save(live)
    assert await sessions.load("s-1") is None
    assert await sessions.delete("s-1") is False


async def test_an_expired_id_can_be_reused(backend: Backend) -> None:
    await backend.stores.sessions.create(record())
    backend.clock.advance(TTL + 1)
    await backend.stores.sessions.create(record())
    assert await backend.stores.sessions.load("s-1") is not None


async def test_a_limit_allows_its_burst_then_refuses_until_the_hinted_time(backend: Backend) -> None:
    limit = RateLimit(rate=2.0, burst=3.0)
    decisions = [await backend.stores.rate_limits.acquire("tool:x", limit) for _ in range(4)]
    assert [decision.allowed for decision in decisions] == [True, True, True, False]
    wait = decisions[3].retry_after
    assert 0 < wait <= limit.burst / limit.rate
    backend.clock.advance(wait * 0.9)
    assert not (await backend.stores.rate_limits.acquire("tool:x", limit)).allowed
    backend.clock.advance(wait * 0.1 + 1e-6)
    assert (await backend.stores.rate_limits.acquire("tool:x", limit)).allowed


async def test_a_token_bucket_refills_at_its_rate(backend: Backend) -> None:
    if backend.name.startswith("dynamodb"):
        pytest.skip("DynamoDB counts calls per fixed window (see stratus.resilience.limiter.window)")
    limit = RateLimit(rate=2.0, burst=3.0)
    for _ in range(3):
        await backend.stores.rate_limits.acquire("tool:x", limit)
    backend.clock.advance(0.5)  # one token back, not three
    assert (await backend.stores.rate_limits.acquire("tool:x", limit)).allowed
    assert not (await backend.stores.rate_limits.acquire("tool:x", limit)).allowed


async def test_buckets_are_independent_per_key(backend: Backend) -> None:
    limit = RateLimit(rate=1.0, burst=1.0)
    assert (await backend.stores.rate_limits.acquire("principal:a", limit)).allowed
    assert (await backend.stores.rate_limits.acquire("principal:b", limit)).allowed
    assert not (await backend.stores.rate_limits.acquire("principal:a", limit)).allowed


POLICY = BreakerPolicy(failure_threshold=2, window_seconds=10.0, cooldown_seconds=5.0)


async def test_the_breaker_opens_at_the_threshold_inside_the_window(backend: Backend) -> None:
    breakers = backend.stores.breakers
    assert await breakers.record("tool:x", POLICY, success=False) == (CircuitState.CLOSED, CircuitState.CLOSED)
    backend.clock.advance(11)  # the first failure leaves the window
    assert await breakers.record("tool:x", POLICY, success=False) == (CircuitState.CLOSED, CircuitState.CLOSED)
    assert await breakers.record("tool:x", POLICY, success=False) == (CircuitState.CLOSED, CircuitState.OPEN)
    refused = await breakers.admit("tool:x", POLICY)
    assert (refused.allowed, refused.state) == (False, CircuitState.OPEN)
    assert refused.retry_after == pytest.approx(5.0)


async def test_after_the_cooldown_one_trial_runs_and_decides(backend: Backend) -> None:
    breakers = backend.stores.breakers
    for _ in range(2):
        await breakers.record("tool:x", POLICY, success=False)
    backend.clock.advance(5)
    trial = await breakers.admit("tool:x", POLICY)
    assert (trial.allowed, trial.state) == (True, CircuitState.HALF_OPEN)
    assert not (await breakers.admit("tool:x", POLICY)).allowed
    assert await breakers.record("tool:x", POLICY, success=False) == (CircuitState.HALF_OPEN, CircuitState.OPEN)
    backend.clock.advance(5)
    assert (await breakers.admit("tool:x", POLICY)).allowed
    assert await breakers.record("tool:x", POLICY, success=True) == (CircuitState.HALF_OPEN, CircuitState.CLOSED)
    closed = await breakers.admit("tool:x", POLICY)
    assert (closed.allowed, closed.state) == (True, CircuitState.CLOSED)


async def test_a_breaker_nobody_used_is_closed(backend: Backend) -> None:
    admission = await backend.stores.breakers.admit("tool:never", POLICY)
    assert (admission.allowed, admission.state) == (True, CircuitState.CLOSED)
