"""What a task worker event may run: the record it names, only when that record is of the event's own kind.

The task worker gets `{"stratusTask": id}` for a task and `{"stratusCall": id}` for a relayed call, and both kinds
of record share the task store. An event naming a record of the other kind (sent by mistake, or by whoever may
invoke the worker) runs nothing and changes nothing: it is logged and left alone.
"""

from __future__ import annotations

import logging

from stratus.stores.base import TaskStore
from stratus.stores.records import TaskRecord
from stratus.stores.task_records import RelayedCall, TaskRequest

logger = logging.getLogger("stratus.tasks")


async def own_record(
    tasks: TaskStore, record_id: str, kind: type[TaskRequest] | type[RelayedCall]
) -> TaskRecord | None:
    """The stored record `record_id` if it runs a `kind` (None when unknown or expired, or of the other kind)."""
    record = await tasks.get(record_id)
    if record is None:
        return None
    if not isinstance(record.request, kind):
        logger.warning(
            "task worker event names a record of another kind: nothing run",
            extra={"record": record_id, "expected": kind.__name__, "found": type(record.request).__name__},
        )
        return None
    return record
