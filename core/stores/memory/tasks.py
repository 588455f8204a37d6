"""Tasks in a dict."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from stratus.resilience.deadline import Clock
from stratus.stores.records import TaskExistsError, TaskRecord

if TYPE_CHECKING:
    from stratus.stores.task_records import TaskOutcome


class _Kept:
    """A task as this store keeps it: its request and outcome encoded as a shared store encodes them, so that no
    caller shares their objects (a tool that changes its arguments changes no stored task) and a record this store
    cannot encode fails here too."""

    # A plain class: a dataclass costs every cold start on the default store (docs/benchmarks.md).
    __slots__ = ("created", "expires", "outcome", "principal", "request", "status", "updated")

    def __init__(
        self,
        principal: str | None,
        status: str,
        request: str,
        outcome: str | None,
        created: float,
        updated: float,
        expires: float,
    ) -> None:
        self.principal = principal
        self.status = status
        self.request = request
        self.outcome = outcome
        self.created = created
        self.updated = updated
        self.expires = expires


class MemoryTaskStore:
    """Tasks in a dict, expired lazily on read."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._tasks: dict[str, _Kept] = {}
        self._clock = clock

    def _live(self, task_id: str) -> _Kept | None:
        task = self._tasks.get(task_id)
        return task if task is not None and task.expires > self._clock() else None

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        from stratus.stores.task_records import encode_request

        if self._live(record.task_id) is not None:
            raise TaskExistsError(record.task_id)
        now = self._clock()
        self._tasks[record.task_id] = _Kept(
            record.principal, record.status, encode_request(record.request), None, now, now, now + ttl_seconds
        )

    async def get(self, task_id: str) -> TaskRecord | None:
        from stratus.stores.task_records import decode_outcome, decode_request

        task = self._live(task_id)
        if task is None:
            return None
        return TaskRecord(
            task_id=task_id,
            principal=task.principal,
            status=task.status,
            request=decode_request(task.request),
            outcome=decode_outcome(task.outcome) if task.outcome is not None else None,
            created_at=task.created,
            updated_at=task.updated,
            expires_at=task.expires,
        )

    async def update(self, task_id: str, *, status: str, outcome: TaskOutcome | None, expect: tuple[str, ...]) -> bool:
        from stratus.stores.task_records import encode_outcome

        task = self._live(task_id)
        if task is None or task.status not in expect:
            return False
        task.status, task.updated = status, self._clock()
        if outcome is not None:
            task.outcome = encode_outcome(outcome)
        return True
