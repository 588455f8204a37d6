"""Tasks in a dict."""

from __future__ import annotations

import dataclasses
import time

from stratus.resilience.deadline import Clock
from stratus.stores.records import TaskExistsError, TaskRecord


class MemoryTaskStore:
    """Tasks in a dict, expired lazily on read."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._clock = clock

    def _live(self, task_id: str) -> TaskRecord | None:
        task = self._tasks.get(task_id)
        return task if task is not None and task.expires_at > self._clock() else None

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        if self._live(record.task_id) is not None:
            raise TaskExistsError(record.task_id)
        now = self._clock()
        self._tasks[record.task_id] = dataclasses.replace(
            record, created_at=now, updated_at=now, expires_at=now + ttl_seconds
        )

    async def get(self, task_id: str) -> TaskRecord | None:
        task = self._live(task_id)
        return dataclasses.replace(task) if task else None

    async def update(self, task_id: str, *, status: str, result: str | None, expect: tuple[str, ...]) -> bool:
        task = self._live(task_id)
        if task is None or task.status not in expect:
            return False
        task.status, task.result, task.updated_at = status, result, self._clock()
        return True
