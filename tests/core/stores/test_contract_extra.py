"""The contract of event logs, pending requests, tasks and caches, for every backend."""

from __future__ import annotations

import anyio
import pytest

from stratus.stores.records import TaskExistsError, TaskRecord
from stratus.stores.task_records import KeptPrincipal, RelayedCall, RpcError, TaskOutcome, TaskRequest
from tests.fixtures.store_backends import ADD, MAX_EVENTS, TTL, Backend
from tests.fixtures.stored_tasks import STORED_CALL, STORED_FAILURE, STORED_QUESTIONS, STORED_TASK

pytestmark = pytest.mark.anyio


async def test_events_are_numbered_per_stream_and_read_after_a_given_one(backend: Backend) -> None:
    events = backend.stores.events
    assert [await events.append("session-1/get", f"e{n}") for n in range(3)] == [1, 2, 3]
    assert await events.append("session-1/post-7", "other") == 1
    assert [(event.seq, event.data) for event in await events.read_after("session-1/get", 1)] == [(2, "e1"), (3, "e2")]
    assert await events.read_after("session-1/get", 3) == []
    assert [event.data for event in await events.read_after("session-1/post-7", 0)] == ["other"]


async def test_a_stream_keeps_its_newest_events(backend: Backend) -> None:
    for n in range(MAX_EVENTS + 3):
        await backend.stores.events.append("s", f"e{n}")
    kept = await backend.stores.events.read_after("s", 0)
    assert [event.seq for event in kept] == list(range(4, MAX_EVENTS + 4))


async def test_events_are_forgotten_after_the_ttl(backend: Backend) -> None:
    await backend.stores.events.append("s", "old")
    backend.clock.advance(TTL + 1)
    assert await backend.stores.events.read_after("s", 0) == []


async def test_a_follower_is_woken_by_an_event_appended_while_it_waits(backend: Backend) -> None:
    events = backend.stores.events
    await events.append("s", "seen")
    woken: list[list[tuple[int, str]]] = []

    async def follow() -> None:
        woken.append([(event.seq, event.data) for event in await events.wait_after("s", 1, within=30)])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            await events.append("other", "not this stream")
            await events.append("s", "new")
    assert woken == [[(2, "new")]]


async def test_following_a_quiet_stream_ends_empty_at_the_deadline(backend: Backend) -> None:
    await backend.stores.events.append("s", "old")
    with anyio.fail_after(5):
        assert await backend.stores.events.wait_after("s", 1, within=0.05) == []
        assert [event.data for event in await backend.stores.events.wait_after("s", 0, within=0.05)] == ["old"]


async def test_a_wait_on_several_streams_is_woken_by_an_append_to_any_of_them(backend: Backend) -> None:
    events = backend.stores.events
    await events.append("*/shared", "seen")
    woken: list[dict[str, list[tuple[int, str]]]] = []

    async def follow() -> None:
        found = await events.wait_any({"*/shared": 1, "session-1/own": 0}, within=30)
        woken.append({stream: [(event.seq, event.data) for event in got] for stream, got in found.items()})

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            await anyio.wait_all_tasks_blocked()
            await events.append("session-2/own", "not watched")
            await events.append("session-1/own", "new")
        assert woken == [{"session-1/own": [(1, "new")]}]  # only the streams with events
        assert await events.wait_any({"*/shared": 1, "session-1/own": 1}, within=0.05) == {}
        found = await events.wait_any({"*/shared": 0, "session-1/own": 0}, within=0.05)
    # As soon as any has events: each stream found carries all of its own (a polling backend may return the first).
    assert found
    assert {stream: [event.data for event in got] for stream, got in found.items()}.items() <= {
        "*/shared": ["seen"],
        "session-1/own": ["new"],
    }.items()


async def test_a_reply_delivered_once_reaches_the_waiter(backend: Backend) -> None:
    pending = backend.stores.pending
    await pending.open("session-1/req-9", ttl_seconds=30)
    assert await pending.deliver("session-1/req-9", '{"result": 1}') is True
    assert await pending.deliver("session-1/req-9", '{"result": 2}') is False  # the first reply wins
    with anyio.fail_after(5):
        assert await pending.wait("session-1/req-9", within=5) == '{"result": 1}'


async def test_a_reply_nobody_waits_for_is_refused(backend: Backend) -> None:
    assert await backend.stores.pending.deliver("session-1/never-sent", "{}") is False


async def test_a_waiter_is_woken_by_a_reply_sent_while_it_waits(backend: Backend) -> None:
    pending = backend.stores.pending
    await pending.open("r", ttl_seconds=30)
    replies: list[str | None] = []

    async def wait() -> None:
        replies.append(await pending.wait("r", within=5))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert await pending.deliver("r", "answer") is True
    assert replies == ["answer"]


async def test_waiting_for_a_reply_that_never_comes_ends_at_the_deadline(backend: Backend) -> None:
    await backend.stores.pending.open("silent", ttl_seconds=30)
    with anyio.fail_after(5):
        assert await backend.stores.pending.wait("silent", within=0.05) is None


async def test_tasks_move_only_from_the_expected_states(backend: Backend) -> None:
    tasks = backend.stores.tasks
    await tasks.create(TaskRecord(task_id="t-1", principal="alice", status="working", request=ADD), ttl_seconds=TTL)
    with pytest.raises(TaskExistsError):
        await tasks.create(TaskRecord(task_id="t-1", principal="bob", status="working", request=ADD), ttl_seconds=TTL)
    done = TaskOutcome(result={"content": [], "structuredContent": {"sum": 3}})
    assert await tasks.update("t-1", status="completed", outcome=done, expect=("working",)) is True
    assert await tasks.update("t-1", status="cancelled", outcome=None, expect=("working",)) is False
    task = await tasks.get("t-1")
    assert task is not None
    assert (task.principal, task.status, task.request, task.outcome) == ("alice", "completed", ADD, done)
    assert await tasks.get("t-2") is None


async def test_a_task_moved_without_an_outcome_keeps_the_one_it_had(backend: Backend) -> None:
    tasks = backend.stores.tasks
    await tasks.create(TaskRecord(task_id="t-1", principal=None, status="working", request=ADD), ttl_seconds=TTL)
    asking = TaskOutcome(input_requests={"name": {"method": "elicitation/create"}}, asked=("name",))
    assert await tasks.update("t-1", status="input_required", outcome=asking, expect=("working",))
    assert await tasks.update("t-1", status="working", outcome=None, expect=("input_required",))
    task = await tasks.get("t-1")
    assert task is not None and (task.status, task.outcome) == ("working", asking)


async def test_an_expired_task_is_gone(backend: Backend) -> None:
    await backend.stores.tasks.create(TaskRecord(task_id="t", principal=None, status="working", request=ADD), 10)
    backend.clock.advance(11)
    assert await backend.stores.tasks.get("t") is None
    assert await backend.stores.tasks.update("t", status="completed", outcome=None, expect=("working",)) is False


async def _store_raw(backend: Backend, task_id: str, request: str, outcome: str | None) -> None:
    """Overwrite a stored task's request and outcome with what an earlier release wrote, as that release would."""
    if backend.redis is not None:
        fields = {"request": request, **({"result": outcome} if outcome is not None else {})}
        await backend.redis.hset(f"{backend.prefix}:{{t:{task_id}}}", mapping=fields)
    elif backend.dynamo is not None:
        values = {":request": {"S": request}, **({":result": {"S": outcome}} if outcome is not None else {})}
        backend.dynamo.update_item(
            TableName=backend.table,
            Key={"PK": {"S": f"t#task#{task_id}"}, "SK": {"S": "task"}},
            UpdateExpression="SET #request = :request" + (", #result = :result" if outcome is not None else ""),
            ExpressionAttributeValues=values,
            ExpressionAttributeNames={"#request": "request", **({"#result": "result"} if outcome is not None else {})},
        )
    else:
        pytest.skip("a memory store keeps nothing across a deploy")


async def test_tasks_stored_by_the_release_before_typed_records_read_as_they_were_written(backend: Backend) -> None:
    tasks = backend.stores.tasks
    await tasks.create(TaskRecord(task_id="t-1", principal="issuer|alice", status="working", request=ADD), TTL)
    await tasks.update("t-1", status="input_required", outcome=TaskOutcome(), expect=("working",))
    await _store_raw(backend, "t-1", STORED_TASK, STORED_QUESTIONS)
    task = await tasks.get("t-1")
    assert task is not None
    assert task.request == TaskRequest(
        tool="greet",
        arguments={"name": "Ada"},
        version="2025-11-25",
        principal=KeptPrincipal("alice", ("read", "write"), ("admin",), "https://id.example"),
        client_capabilities={"elicitation": {}},
        ttl_ms=60000,
        place="tasks:running:issuer|alice:0",
    )
    questions = {"name": {"method": "elicitation/create", "params": {"message": "Name?"}}}
    assert task.outcome == TaskOutcome(input_requests=questions, asked=("name",))

    await _store_raw(backend, "t-1", STORED_TASK, STORED_FAILURE)
    failed = await tasks.get("t-1")
    assert failed is not None and failed.outcome is not None
    message = "The task's run stopped before it ended (its worker crashed or timed out)"
    assert failed.outcome == TaskOutcome(error=RpcError(-32603, message), status_message=message)


async def test_relayed_calls_stored_by_the_release_before_typed_records_read_as_they_were_written(
    backend: Backend,
) -> None:
    tasks = backend.stores.tasks
    await tasks.create(TaskRecord(task_id="call-1", principal=None, status="working", request=ADD), TTL)
    await _store_raw(backend, "call-1", STORED_CALL, None)
    call = await tasks.get("call-1")
    assert call is not None and call.outcome is None
    assert call.request == RelayedCall(
        tool="greet",
        arguments={"name": "Ada"},
        request_id=7,
        session_id="s-1",
        stream_token="tok-1",
        principal=None,
        meta={"progressToken": "p-1"},
    )


async def test_cached_values_live_for_their_ttl(backend: Backend) -> None:
    cache = backend.stores.cache
    await cache.set("tools:upstream-a", '["x"]', ttl_seconds=300)
    assert await cache.get("tools:upstream-a") == '["x"]'
    backend.clock.advance(301)
    assert await cache.get("tools:upstream-a") is None
    await cache.set("k", "v", ttl_seconds=300)
    await cache.delete("k")
    assert await cache.get("k") is None


async def test_a_key_is_claimed_once_until_it_expires(backend: Backend) -> None:
    cache = backend.stores.cache
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is True
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is False
    backend.clock.advance(61)
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is True
