"""The contract of task records (created once, moved only from the expected states, gone once expired), for every
backend."""

from __future__ import annotations

import pytest

from stratus.stores.records import TaskExistsError, TaskRecord
from tests.fixtures.store_backends import TTL, Backend

pytestmark = pytest.mark.anyio


async def test_tasks_move_only_from_the_expected_states(backend: Backend) -> None:
    tasks = backend.stores.tasks
    await tasks.create(
        TaskRecord(task_id="t-1", principal="alice", status="working", request='{"tool":"add"}'), ttl_seconds=TTL
    )
    with pytest.raises(TaskExistsError):
        await tasks.create(TaskRecord(task_id="t-1", principal="bob", status="working"), ttl_seconds=TTL)
    assert await tasks.update("t-1", status="completed", result='{"ok":true}', expect=("working",)) is True
    assert await tasks.update("t-1", status="cancelled", result=None, expect=("working",)) is False
    task = await tasks.get("t-1")
    assert task is not None
    assert (task.principal, task.status, task.result) == ("alice", "completed", '{"ok":true}')
    assert task.request == '{"tool":"add"}'
    assert await tasks.get("t-2") is None


async def test_an_expired_task_is_gone(backend: Backend) -> None:
    await backend.stores.tasks.create(TaskRecord(task_id="t", principal=None, status="working"), ttl_seconds=10)
    backend.clock.advance(11)
    assert await backend.stores.tasks.get("t") is None
    assert await backend.stores.tasks.update("t", status="completed", result=None, expect=("working",)) is False
