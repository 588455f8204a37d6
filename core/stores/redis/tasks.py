"""Tasks as Redis hashes, moved from state to state by scripts."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from stratus.resilience.deadline import Clock
from stratus.stores.records import TaskExistsError, TaskRecord
from stratus.stores.redis.scripts import GRACE_SECONDS, RedisScripts, as_text, new_token

if TYPE_CHECKING:
    from stratus.stores.task_records import TaskOutcome


class RedisTaskStore:
    """Tasks as hashes; creation and status moves are one script each."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    def _key(self, task_id: str) -> str:
        return self.scripts.key(f"t:{task_id}")

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        from stratus.stores.task_records import encode_request

        now = repr(self.clock())
        request = encode_request(record.request)
        args = [now, ttl_seconds, GRACE_SECONDS, record.principal or "", record.status, request, new_token()]
        if not int(await self.scripts.run("task_create", [self._key(record.task_id)], args)):
            raise TaskExistsError(record.task_id)

    async def get(self, task_id: str) -> TaskRecord | None:
        from stratus.stores.task_records import decode_outcome, decode_request

        row = await self.scripts.command("hgetall", self._key(task_id))
        fields = {as_text(key): as_text(value) for key, value in row.items()}
        if not fields or float(fields["expires"]) <= self.clock():
            return None
        return TaskRecord(
            task_id=task_id,
            principal=fields["principal"] or None,
            status=fields["status"],
            request=decode_request(fields["request"]),
            outcome=decode_outcome(fields["result"]) if "result" in fields else None,
            created_at=float(fields["created"]),
            updated_at=float(fields["updated"]),
            expires_at=float(fields["expires"]),
        )

    async def update(self, task_id: str, *, status: str, outcome: TaskOutcome | None, expect: tuple[str, ...]) -> bool:
        from stratus.stores.task_records import encode_outcome

        result = encode_outcome(outcome) if outcome is not None else None
        args = [repr(self.clock()), status, "1" if result is not None else "0", result or "", new_token(), *expect]
        return bool(int(await self.scripts.run("task_update", [self._key(task_id)], args)))
