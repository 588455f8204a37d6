"""The contract of task records (created once, moved only from the expected states, gone once expired), for every
backend."""

from __future__ import annotations

import pytest

from stratus.stores.records import TaskExistsError, TaskRecord
from stratus.stores.task_records import KeptPrincipal, RelayedCall, RpcError, TaskOutcome, TaskRequest
from tests.fixtures.store_backends import ADD, TTL, Backend
from tests.fixtures.stored_tasks import STORED_CALL, STORED_FAILURE, STORED_QUESTIONS, STORED_TASK

pytestmark = pytest.mark.anyio


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
