"""How tasks look on each era's wire: one `TaskWire` per era, chosen once per call (`wire_for`), over the lifecycle
`stratus.protocol.task_service` keeps.

- 2025-11-25 (`HANDSHAKE`, experimental tasks): asked with `params.task` (its `ttl` honoured); the handle is
  `{"task": Task}` with `ttl`/`pollInterval`; `tasks/get` answers the Task alone, `tasks/result` what the call would
  have answered, `tasks/cancel` the cancelled Task (an error for a task that had already ended).
- 2026-07-28 (`STATELESS`, extension `io.modelcontextprotocol/tasks`): asked by declaring the extension on the
  request; the handle is the Task with `resultType: "task"` and `ttlMs`/`pollIntervalMs`; `tasks/get` inlines
  `result`, `error` or the outstanding `inputRequests`; `tasks/cancel` acknowledges with `{}`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from stratus.errors import (
    InvalidParamsError,
    McpError,
    MethodNotFoundError,
    MissingCapabilityError,
    RequestTimeoutError,
)
from stratus.protocol import versions
from stratus.stores.task_records import DEFAULT_TTL_MS, TaskRequest
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.call import Call
    from stratus.server.tools import Tool
    from stratus.stores.records import TaskRecord

EXTENSION = versions.TASKS_EXTENSION
RELATED_TASK_META = "io.modelcontextprotocol/related-task"
MAX_TTL_MS = 86_400_000
POLL_INTERVAL_MS = 1_000

Outstanding = Callable[[], Awaitable[JsonObject]]
"""The task's questions its client has not answered yet (read from the store only when a wire shows them)."""


class TaskWire(Protocol):
    """One era's shapes of a task: how a call asks for one, and what each of the client's requests answers."""

    def wanted(self, call: Call, tool: Tool) -> bool:
        """Whether this tools/call becomes a task (raises when the tool and the call disagree)."""
        ...

    def ttl_ms(self, call: Call) -> int:
        """How long the new task lives."""
        ...

    def admit(self, call: Call) -> None:
        """Refuse a task request this era's client may not make."""
        ...

    def created(self, task: TaskRecord) -> JsonObject:
        """tools/call's answer: the new task's handle."""
        ...

    async def status(self, task: TaskRecord, outstanding: Outstanding) -> JsonObject:
        """tasks/get's answer."""
        ...

    def cancelled(self, task: TaskRecord) -> JsonObject:
        """tasks/cancel's answer once `task` has moved to `cancelled`."""
        ...

    def already_ended(self, task: TaskRecord) -> JsonObject:
        """tasks/cancel's answer for a task that had already ended."""
        ...


def task_object(task: TaskRecord, ttl_key: str, poll_key: str) -> JsonObject:
    """The task as both eras show it, with the era's names for its time to live and poll interval."""
    wire: JsonObject = {
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(task.updated_at),
    }
    message = task.outcome.status_message if task.outcome is not None else None
    if message is not None:
        wire["statusMessage"] = message
    wire[ttl_key] = task.request.ttl_ms if isinstance(task.request, TaskRequest) else DEFAULT_TTL_MS
    wire[poll_key] = POLL_INTERVAL_MS
    return wire


class HandshakeTaskWire:
    """2025-11-25's experimental tasks."""

    def wanted(self, call: Call, tool: Tool) -> bool:
        if not versions.at_least(call.version, versions.TASKS_SINCE):
            return False
        support = tool.task_support
        asked = isinstance(call.params.get("task"), dict)
        if asked and support is None:
            raise MethodNotFoundError(f"Tool '{tool.name}' does not support task-augmented execution")
        if not asked and support == "required":
            raise MethodNotFoundError(f"Tool '{tool.name}' must be called as a task (params.task)")
        return asked

    def ttl_ms(self, call: Call) -> int:
        asked = (call.params.get("task") or {}).get("ttl")
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            return min(asked, MAX_TTL_MS)
        return DEFAULT_TTL_MS

    def admit(self, call: Call) -> None:
        return None

    def created(self, task: TaskRecord) -> JsonObject:
        return {"task": self.task(task)}

    async def status(self, task: TaskRecord, outstanding: Outstanding) -> JsonObject:
        return self.task(task)

    def cancelled(self, task: TaskRecord) -> JsonObject:
        return self.task(task)

    def already_ended(self, task: TaskRecord) -> JsonObject:
        raise InvalidParamsError(f"Cannot cancel task: already in terminal status '{task.status}'")

    def task(self, task: TaskRecord) -> JsonObject:
        return task_object(task, "ttl", "pollInterval")

    def final(self, task: TaskRecord) -> JsonObject:
        """tasks/result's answer: exactly what the call would have answered (its result, or its error raised),
        related to the task.

        Raises:
            McpError: the task failed (its error), was cancelled (-32602), or has not ended yet (request timeout).
        """
        related = {RELATED_TASK_META: {"taskId": task.task_id}}
        outcome = task.outcome
        if task.status == "completed":
            result: JsonObject = dict(outcome.result or {}) if outcome is not None else {}
            result["_meta"] = {**result.get("_meta", {}), **related}
            return result
        if task.status == "failed":
            error = outcome.error if outcome is not None else None
            failure = McpError("Task failed")
            if error is not None:
                failure = McpError(error.message, data=error.data)
                failure.code = error.code
            if failure.data is None:
                failure.data = related
            raise failure
        if task.status == "cancelled":
            raise InvalidParamsError(f"Task {task.task_id} was cancelled", data=related)
        raise RequestTimeoutError(f"Task {task.task_id} is still {task.status}; ask for its result again", data=related)


class StatelessTaskWire:
    """2026-07-28's tasks extension."""

    def wanted(self, call: Call, tool: Tool) -> bool:
        support = tool.task_support
        declared = EXTENSION in (call.client_capabilities.get("extensions") or {})
        if support == "required" and not declared:
            raise MissingCapabilityError({"extensions": {EXTENSION: {}}})
        return declared and support is not None

    def ttl_ms(self, call: Call) -> int:
        return DEFAULT_TTL_MS

    def admit(self, call: Call) -> None:
        if EXTENSION not in (call.client_capabilities.get("extensions") or {}):
            raise MissingCapabilityError({"extensions": {EXTENSION: {}}})

    def created(self, task: TaskRecord) -> JsonObject:
        return {**self.task(task), "resultType": "task"}

    async def status(self, task: TaskRecord, outstanding: Outstanding) -> JsonObject:
        wire = self.task(task)
        outcome = task.outcome
        if task.status == "completed":
            wire["result"] = (outcome.result if outcome is not None else None) or {}
        elif task.status == "failed":
            error = outcome.error if outcome is not None else None
            wire["error"] = error.to_error() if error is not None else {}
        elif task.status == "input_required":
            wire["inputRequests"] = await outstanding()
        return wire

    def cancelled(self, task: TaskRecord) -> JsonObject:
        return {}

    def already_ended(self, task: TaskRecord) -> JsonObject:
        return {}  # cancellation is cooperative: a task that already ended keeps its outcome

    def task(self, task: TaskRecord) -> JsonObject:
        return task_object(task, "ttlMs", "pollIntervalMs")


HANDSHAKE = HandshakeTaskWire()
STATELESS = StatelessTaskWire()


def wire_for(call: Call) -> TaskWire:
    """The wire of the call's era."""
    return STATELESS if call.stateless else HANDSHAKE


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
