"""The roster every backend keeps of its live sessions: the global session limit, each principal's quota, the
census `/health` reports, and the sweep that frees expired sessions' places. Time is the injected clock; nothing
sleeps."""

from __future__ import annotations

import asyncio

import pytest

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
from stratus.stores.base import SessionStore
from stratus.stores.dynamodb.sessions import DynamoSessionStore
from stratus.stores.memory.sessions import MemorySessionStore
from stratus.stores.records import SessionRecord
from stratus.stores.redis.sessions import RedisSessionStore
from tests.fixtures.store_backends import TTL, Backend

pytestmark = pytest.mark.anyio
LIMIT = 3
QUOTA = 2


def limited(backend: Backend, limit: int = LIMIT, *, quota: int = 0) -> SessionStore:
    """A second view of the backend's sessions with a limit (and a quota per principal), as another container
    configured alike would hold."""
    sessions = backend.stores.sessions
    if isinstance(sessions, RedisSessionStore):
        return RedisSessionStore(
            sessions.scripts, ttl_seconds=TTL, max_sessions=limit, max_per_principal=quota, clock=backend.clock
        )
    if isinstance(sessions, DynamoSessionStore):
        return DynamoSessionStore(sessions.table, ttl_seconds=TTL, max_sessions=limit, max_per_principal=quota)
    assert isinstance(sessions, MemorySessionStore)
    sessions._max, sessions._max_per_principal = limit, quota
    return sessions


def record(session_id: str, principal: str | None = "alice") -> SessionRecord:
    return SessionRecord(session_id=session_id, protocol_version="2025-11-25", principal=principal)


async def test_the_census_counts_live_sessions_with_the_oldest_and_newest_creation(backend: Backend) -> None:
    sessions = limited(backend, 10)
    assert await sessions.census() == (0, None, None)
    first = backend.clock.now
    for name in ("a", "b", "c"):
        await sessions.create(record(name))
        backend.clock.advance(10)
    assert await sessions.census() == (3, first, first + 20)
    assert await sessions.delete("a") is True
    assert await sessions.census() == (2, first + 10, first + 20)


async def test_with_no_limit_the_census_after_a_sweep_counts_the_live_sessions(backend: Backend) -> None:
    """With no limit DynamoDB counts nothing as sessions come and go: the census reports what the last sweep saw
    (Redis and memory count exactly, with or without a sweep)."""
    sessions = backend.stores.sessions
    first = backend.clock.now
    for name in ("a", "b", "c", "d"):
        await sessions.create(record(name, principal=None if name == "d" else "alice"))
        backend.clock.advance(10)
    await sessions.sweep()
    assert await sessions.census() == (4, first, first + 30)
    assert await sessions.delete("a") is True
    backend.clock.advance(TTL - 25)  # "b" (created at first + 10) expires; "c" and "d" live on
    await sessions.sweep()
    assert await sessions.census() == (2, first + 20, first + 30)


async def test_a_session_beyond_the_limit_is_refused_naming_it(backend: Backend) -> None:
    sessions = limited(backend)
    for index in range(LIMIT):
        await sessions.create(record(f"s{index}"))
    with pytest.raises(TooManySessionsError) as refused:
        await sessions.create(record("one-too-many"))
    assert (refused.value.http_status, refused.value.data) == (
        503,
        {"maxSessions": LIMIT, "setting": "STRATUS_MAX_SESSIONS"},
    )
    assert await sessions.load("one-too-many") is None
    assert (await sessions.census()).active == LIMIT


async def test_ending_a_session_frees_its_place_at_once(backend: Backend) -> None:
    sessions = limited(backend)
    for index in range(LIMIT):
        await sessions.create(record(f"s{index}"))
    assert await sessions.delete("s1") is True
    await sessions.create(record("newcomer"))
    assert await sessions.load("newcomer") is not None
    assert await sessions.delete("s1") is False


async def test_expired_sessions_give_up_their_places_to_new_ones(backend: Backend) -> None:
    sessions = limited(backend)
    for index in range(LIMIT):
        await sessions.create(record(f"old{index}"))
    backend.clock.advance(TTL + 1)
    for index in range(LIMIT):
        await sessions.create(record(f"new{index}"))
    assert (await sessions.census()).active == LIMIT


async def test_a_sweep_removes_expired_sessions_but_keeps_those_in_use(backend: Backend) -> None:
    sessions = limited(backend, 10)
    await sessions.create(record("idle"))
    await sessions.create(record("busy"))
    backend.clock.advance(TTL - 1)
    assert await sessions.load("busy") is not None  # slides its expiry; the roster hears of it only when swept
    backend.clock.advance(2)
    assert await sessions.sweep() == 1
    assert await sessions.sweep() == 0
    assert (await sessions.census()).active == 1
    assert await sessions.load("busy") is not None
    if backend.redis is not None:
        assert await backend.redis.exists(f"{backend.prefix}:{{s:idle}}") == 0
        assert await backend.redis.zrange(f"{backend.prefix}:{{roster}}:created", 0, -1) == [b"busy"]
    if backend.dynamo is not None:
        key = {"PK": {"S": "t#session#idle"}, "SK": {"S": "session"}}
        assert "Item" not in backend.dynamo.get_item(TableName=backend.table, Key=key)
        counts = backend.dynamo.scan(
            TableName=backend.table,
            FilterExpression="begins_with(PK, :shard)",
            ExpressionAttributeValues={":shard": {"S": "t#sessions#"}},
        )["Items"]
        assert sum(int(item["count"]["N"]) for item in counts) == 1


async def test_containers_racing_for_the_last_places_never_exceed_the_limit(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("one process: the in-memory store has no other container to race")
    if backend.name == "dynamodb":
        # boto3 runs in worker threads, and moto's in-process backend is not thread-safe (concurrent requests can
        # over-admit or fail with "dictionary changed size"); the serialized moto server, like DynamoDB, applies
        # one request at a time, so the race is tested there.
        pytest.skip("moto in-process is not thread-safe; the dynamodb-server variant runs this race")
    first, second = limited(backend), limited(backend)
    attempts = [
        store.create(record(f"r{index}-{side}")) for index in range(5) for side, store in enumerate((first, second))
    ]
    outcomes = await asyncio.gather(*attempts, return_exceptions=True)
    assert sum(outcome is None for outcome in outcomes) == LIMIT
    refusals = [outcome for outcome in outcomes if outcome is not None]
    assert all(isinstance(outcome, TooManySessionsError) for outcome in refusals), [repr(o) for o in refusals]
    assert (await first.census()).active == LIMIT


async def test_a_session_the_backend_already_deleted_is_swept_from_the_roster(backend: Backend) -> None:
    """Redis key expiry and DynamoDB TTL delete sessions on their own; the roster must not go on counting them."""
    sessions = limited(backend, 1)
    await sessions.create(record("gone"))
    if backend.redis is not None:
        await backend.redis.delete(f"{backend.prefix}:{{s:gone}}")
    elif backend.dynamo is not None:
        backend.dynamo.delete_item(TableName=backend.table, Key={"PK": {"S": "t#session#gone"}, "SK": {"S": "session"}})
    else:
        pytest.skip("the in-memory store deletes nothing behind the roster's back")
    backend.clock.advance(TTL + 1)
    await sessions.create(record("next"))
    assert await sessions.census() == (1, backend.clock.now, backend.clock.now)


async def test_a_principal_at_its_quota_is_refused_naming_the_setting_while_another_still_gets_a_session(
    backend: Backend,
) -> None:
    sessions = limited(backend, 10, quota=QUOTA)
    for index in range(QUOTA):
        await sessions.create(record(f"a{index}", "issuer|alice"))
    with pytest.raises(PrincipalSessionsFullError) as refused:
        await sessions.create(record("a-too-many", "issuer|alice"))
    assert (refused.value.http_status, refused.value.code) == (503, -31503)
    assert refused.value.data == {"maxSessionsPerPrincipal": QUOTA, "setting": "STRATUS_MAX_SESSIONS_PER_PRINCIPAL"}
    assert "STRATUS_MAX_SESSIONS_PER_PRINCIPAL" in refused.value.message
    assert await sessions.load("a-too-many") is None
    await sessions.create(record("b0", "issuer|bob"))
    assert await sessions.load("b0") is not None
    assert (await sessions.census()).active == QUOTA + 1


async def test_ending_a_session_frees_its_principals_place_at_once(backend: Backend) -> None:
    sessions = limited(backend, 10, quota=QUOTA)
    for index in range(QUOTA):
        await sessions.create(record(f"a{index}", "issuer|alice"))
    assert await sessions.delete("a0") is True
    await sessions.create(record("a-next", "issuer|alice"))
    assert await sessions.delete("a0") is False  # ended once: its place is not freed twice
    with pytest.raises(PrincipalSessionsFullError):
        await sessions.create(record("a-over", "issuer|alice"))
    for index in range(1, QUOTA):
        assert await sessions.delete(f"a{index}") is True
    assert await sessions.delete("a-next") is True
    # Nothing counts alice any more: no count is left behind in the store.
    if backend.redis is not None:
        roster = f"{backend.prefix}:{{roster}}"
        assert await backend.redis.hgetall(f"{roster}:principals") == {}
        assert await backend.redis.hgetall(f"{roster}:owners") == {}
    if backend.dynamo is not None:
        key = {"PK": {"S": "t#principal#issuer|alice"}, "SK": {"S": "principal"}}
        assert "Item" not in backend.dynamo.get_item(TableName=backend.table, Key=key)


async def test_the_sweep_frees_the_places_of_a_principals_expired_sessions(backend: Backend) -> None:
    sessions = limited(backend, 10, quota=QUOTA)
    for index in range(QUOTA):
        await sessions.create(record(f"old{index}", "issuer|alice"))
    backend.clock.advance(TTL + 1)
    assert await sessions.sweep() == QUOTA
    for index in range(QUOTA):
        await sessions.create(record(f"new{index}", "issuer|alice"))
    with pytest.raises(PrincipalSessionsFullError):
        await sessions.create(record("over", "issuer|alice"))


async def test_anonymous_sessions_are_bounded_by_the_global_limit_only(backend: Backend) -> None:
    """With auth off every caller is anonymous and indistinguishable: a quota among them would be the limit."""
    sessions = limited(backend, QUOTA + 2, quota=QUOTA)
    for index in range(QUOTA + 1):
        await sessions.create(record(f"anon{index}", None))
    await sessions.create(record("a0", "issuer|alice"))  # anonymous sessions took none of alice's places
    with pytest.raises(TooManySessionsError) as refused:
        await sessions.create(record("anon-over", None))
    assert not isinstance(refused.value, PrincipalSessionsFullError)
    assert refused.value.data == {"maxSessions": QUOTA + 2, "setting": "STRATUS_MAX_SESSIONS"}


async def test_containers_racing_for_one_principals_places_never_exceed_its_quota(backend: Backend) -> None:
    if backend.name == "memory":
        pytest.skip("one process: the in-memory store has no other container to race")
    if backend.name == "dynamodb":
        pytest.skip("moto in-process is not thread-safe; the dynamodb-server variant runs this race")
    first, second = limited(backend, 0, quota=QUOTA), limited(backend, 0, quota=QUOTA)
    attempts = [
        store.create(record(f"r{index}-{side}", "issuer|alice"))
        for index in range(4)
        for side, store in enumerate((first, second))
    ]
    outcomes = await asyncio.gather(*attempts, return_exceptions=True)
    assert sum(outcome is None for outcome in outcomes) == QUOTA
    refusals = [outcome for outcome in outcomes if outcome is not None]
    assert all(isinstance(outcome, PrincipalSessionsFullError) for outcome in refusals), [repr(o) for o in refusals]
    await second.create(record("other-principal", "issuer|bob"))
    await first.sweep()  # no global limit: DynamoDB's census is what the last sweep saw
    assert (await first.census()).active == QUOTA + 1


async def test_with_no_quota_a_principals_session_takes_no_count_and_ending_it_gives_none_back(
    backend: Backend,
) -> None:
    """A deployment that sets a quota while sessions made without one live: ending one of those leaves the counts
    of the sessions made under the quota as they are."""
    await backend.stores.sessions.create(record("uncounted"))
    if backend.redis is not None:
        assert await backend.redis.hgetall(f"{backend.prefix}:{{roster}}:principals") == {}
    if backend.dynamo is not None:
        key = {"PK": {"S": "t#principal#alice"}, "SK": {"S": "principal"}}
        assert "Item" not in backend.dynamo.get_item(TableName=backend.table, Key=key)
    sessions = limited(backend, 10, quota=QUOTA)
    await sessions.create(record("counted"))
    assert await sessions.delete("uncounted") is True
    await sessions.create(record("second"))
    with pytest.raises(PrincipalSessionsFullError):
        await sessions.create(record("third"))
