"""Tasks: a tools/call answered at once with a task handle, its result fetched later from any container.

Two wires over one store record:

- 2025-11-25 (experimental tasks): the client asks with `params.task` on a tool whose `execution.taskSupport` is
  `optional` or `required`; `CreateTaskResult` is `{"task": Task}`; `tasks/get`, `tasks/result` (waits for the
  end, then answers exactly what the call would have) and `tasks/cancel` (moves the task to `cancelled` first).
- 2026-07-28 (extension `io.modelcontextprotocol/tasks`): a client declaring the extension on its request gets a
  task for such tools (`resultType: "task"`); `tasks/get` inlines `result` or `error`; `tasks/update` and
  `tasks/cancel` acknowledge.

The task is written to the store before its handle is returned, bound to the caller's principal (another
principal is told the task does not exist), and run by a `TaskLauncher`: in this process, or by a separate
invocation (stratus.handlers.task_worker.LambdaLauncher) because a Lambda container is frozen once its response is sent.
A tool's `isError` result completes its task; only a JSON-RPC error fails it. A tool inside a task may ask
the client for input: the task waits in `input_required` with the questions (2026-07-28 `tasks/get`), and
once `tasks/update` has answered them all it runs again from the start with the answers, like a multi
round-trip retry (on Lambda, in a new invocation).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from stratus.errors import (
    InternalError,
    InvalidParamsError,
    McpError,
    MethodNotFoundError,
    MissingCapabilityError,
    RecordTooLargeError,
    RequestTimeoutError,
)
from stratus.protocol import versions
from stratus.protocol.jsonrpc import Request
from stratus.protocol.kept_principal import principal_fields, principal_from
from stratus.protocol.task_quota import PrincipalTaskQuota, refuse_process
from stratus.protocol.task_watch import CancellationWatch, task_stream
from stratus.stores.records import TaskRecord
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.call import Call
    from stratus.server.tools import Tool
    from stratus.stores.base import Stores

logger = logging.getLogger("stratus.tasks")
EXTENSION = versions.TASKS_EXTENSION
RELATED_TASK_META = "io.modelcontextprotocol/related-task"
TERMINAL = ("completed", "failed", "cancelled")
LIVE = ("working", "input_required")
DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 86_400_000
POLL_INTERVAL_MS = 1_000
RESULT_WAIT_SECONDS = 25.0
"""`tasks/result` waits at most this long per request (below API Gateway's 29 s); the client asks again."""

RunTool = Callable[["Call", "Tool", JsonObject], Awaitable[JsonObject]]
StopTool = Callable[[str], Awaitable[None]]
CANCEL_GRACE_SECONDS = 5.0
"""How long a cancelled task's tool may take to honour its cancellation signal before it is interrupted."""


class TaskLauncher(Protocol):
    """Starts the run of a stored task somewhere: this process, or another invocation."""

    async def launch(self, task_id: str) -> None: ...


class InProcessLauncher:
    """Runs tasks on this process's event loop (uvicorn, `stratus serve`); keeps them referenced until done."""

    def __init__(self) -> None:
        self.run: Callable[[str], Awaitable[None]] | None = None
        self._running: set[asyncio.Future[None]] = set()

    @property
    def running(self) -> int:
        """How many task runs this process holds now."""
        return len(self._running)

    async def launch(self, task_id: str) -> None:
        assert self.run is not None, "the task service binds its runner at construction"
        running = asyncio.ensure_future(self.run(task_id))
        self._running.add(running)
        running.add_done_callback(self._running.discard)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _task_not_found() -> InvalidParamsError:
    return InvalidParamsError("Failed to retrieve task: Task not found")


class TaskService:
    """Creates, reports, cancels and runs tasks."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        stores: Stores,
        run_tool: RunTool,
        stop_tool: StopTool,
        launcher: TaskLauncher | None = None,
        *,
        max_tasks: int = 0,
        max_tasks_per_principal: int = 0,
    ) -> None:
        self.tools = tools
        self.stores = stores
        self.run_tool = run_tool
        self.stop_tool = stop_tool
        self.launcher = launcher or InProcessLauncher()
        if isinstance(self.launcher, InProcessLauncher):
            self.launcher.run = self.run
        self.max_tasks = max_tasks
        """Caps the tasks running in this process (in-process runs only; 0: none): `stratus.protocol.task_quota`."""
        self.quota = PrincipalTaskQuota(stores.cache, max_tasks_per_principal)
        self.watch = CancellationWatch(stores.events)
        """One wait per process for the cancellation of every task running here."""

    async def aclose(self) -> None:
        """Stop the cancellation watch (at shutdown)."""
        await self.watch.aclose()

    # -- creation ------------------------------------------------------------------------------------------

    def wanted(self, call: Call, tool: Tool) -> bool:
        """Whether this tools/call becomes a task.

        Raises:
            MethodNotFoundError: (2025-11-25) a task asked of a tool that forbids it, or a plain call of a tool
                that requires one.
            MissingCapabilityError: (2026-07-28) a tool that requires a task, called without the extension.
        """
        support = tool.task_support
        if call.stateless:
            declared = EXTENSION in (call.client_capabilities.get("extensions") or {})
            if support == "required" and not declared:
                raise MissingCapabilityError({"extensions": {EXTENSION: {}}})
            return declared and support is not None
        if not versions.at_least(call.version, versions.TASKS_SINCE):
            return False
        asked = isinstance(call.params.get("task"), dict)
        if asked and support is None:
            raise MethodNotFoundError(f"Tool '{tool.name}' does not support task-augmented execution")
        if not asked and support == "required":
            raise MethodNotFoundError(f"Tool '{tool.name}' must be called as a task (params.task)")
        return asked

    async def create(self, call: Call, tool: Tool, arguments: JsonObject) -> JsonObject:
        """Store the task, start its run, and answer with its handle (durable before it is returned).

        Raises:
            TooManyTasksError: the caller's live tasks (429) or this process's running ones (503) are at their cap.
        """
        if self.max_tasks and isinstance(self.launcher, InProcessLauncher) and self.launcher.running >= self.max_tasks:
            raise refuse_process(self.max_tasks)
        ttl_ms = self._ttl_ms(call)
        task_id = secrets.token_urlsafe(24)
        owner = call.principal.key if call.principal else None
        place = await self.quota.take(owner, ttl_ms / 1000)
        request = {
            "tool": tool.name,
            "arguments": arguments,
            "version": call.version,
            "ttlMs": ttl_ms,
            "principal": principal_fields(call.principal),
            "clientCapabilities": call.client_capabilities,
            "place": place,
        }
        record = TaskRecord(
            task_id=task_id, principal=owner, status="working", request=json.dumps(request, separators=(",", ":"))
        )
        try:
            await self.stores.tasks.create(record, ttl_seconds=ttl_ms / 1000)
            stored = await self.stores.tasks.get(record.task_id)
            if stored is None:
                raise InternalError("The task could not be stored")
        except BaseException:
            await self.quota.give_back(place)
            raise
        try:
            await self.launcher.launch(record.task_id)
        except Exception:
            reference = secrets.token_hex(6)
            logger.exception("task launch failed", extra={"task": record.task_id, "error_ref": reference})
            failure = InternalError(f"The task could not be started (reference {reference})", http_status=200)
            await self.stores.tasks.update(
                record.task_id, status="failed", result=json.dumps({"error": failure.to_error()}), expect=LIVE
            )
            await self.quota.give_back(place)
            raise failure from None
        if call.stateless:
            return {**self._wire(stored, stateless=True), "resultType": "task"}
        return {"task": self._wire(stored, stateless=False)}

    def _ttl_ms(self, call: Call) -> int:
        asked = (call.params.get("task") or {}).get("ttl") if not call.stateless else None
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            return min(asked, MAX_TTL_MS)
        return DEFAULT_TTL_MS

    # -- the client's requests -----------------------------------------------------------------------------

    async def get(self, call: Call) -> JsonObject:
        task = await self._own_task(call)
        wire = self._wire(task, stateless=call.stateless)
        if call.stateless:
            outcome = _outcome(task)
            if task.status == "completed":
                wire["result"] = outcome.get("result", {})
            elif task.status == "failed":
                wire["error"] = outcome.get("error", {})
            elif task.status == "input_required":
                wire["inputRequests"] = await self._outstanding(task)
        return wire

    async def _outstanding(self, task: TaskRecord) -> JsonObject:
        """The task's questions the client has not answered yet (answered keys drop out at once)."""
        asked: JsonObject = _outcome(task).get("inputRequests", {})
        answered = await self._answers(task.task_id, list(asked))
        return {key: request for key, request in asked.items() if key not in answered}

    async def result(self, call: Call) -> JsonObject:
        """2025-11-25 `tasks/result`: once the task has ended, exactly what the call would have answered."""
        task = await self._own_task(call)
        loop = asyncio.get_running_loop()
        deadline, seen = loop.time() + RESULT_WAIT_SECONDS, 0
        while task.status not in TERMINAL and (left := deadline - loop.time()) > 0:
            events = await self.stores.events.wait_after(task_stream(task.task_id), seen, left)
            seen = events[-1].seq if events else seen
            task = await self._own_task(call)
        related = {RELATED_TASK_META: {"taskId": task.task_id}}
        outcome = _outcome(task)
        if task.status == "completed":
            result: JsonObject = dict(outcome.get("result", {}))
            result["_meta"] = {**result.get("_meta", {}), **related}
            return result
        if task.status == "failed":
            raise _stored_error(outcome.get("error", {}), related)
        if task.status == "cancelled":
            raise InvalidParamsError(f"Task {task.task_id} was cancelled", data=related)
        raise RequestTimeoutError(f"Task {task.task_id} is still {task.status}; ask for its result again", data=related)

    async def cancel(self, call: Call) -> JsonObject:
        task = await self._own_task(call)
        moved = await self.stores.tasks.update(
            task.task_id,
            status="cancelled",
            result=json.dumps({"statusMessage": "Cancelled by the client"}),
            expect=LIVE,
        )
        if not moved:
            if call.stateless:
                return {}  # cancellation is cooperative: a task that already ended keeps its outcome
            raise InvalidParamsError(f"Cannot cancel task: already in terminal status '{task.status}'")
        await self.stores.events.append(task_stream(task.task_id), "cancelled")  # heard by the run's watch
        await self.quota.give_back(task_place(task))
        if call.stateless:
            return {}
        ended = await self._own_task(call)
        return self._wire(ended, stateless=False)

    async def update(self, call: Call) -> JsonObject:
        """2026-07-28 `tasks/update`: keep the answers to outstanding questions (others are ignored, as the
        extension asks); once none is left, the task goes back to `working` and runs again with them."""
        task = await self._own_task(call)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParamsError("Invalid params: inputResponses must be an object")
        if task.status != "input_required":
            return {}
        outstanding = await self._outstanding(task)
        ttl = max(task.expires_at - task.created_at, 1.0)  # answers live no longer than the task
        for key, response in responses.items():
            if key in outstanding and isinstance(response, dict):
                await self.stores.cache.set(_answer_key(task.task_id, key), json.dumps(response), ttl)
        if await self._outstanding(task):
            return {}
        resumed = await self.stores.tasks.update(
            task.task_id, status="working", result=task.result, expect=("input_required",)
        )
        if resumed:  # only one of several racing updates resumes it
            await self.launcher.launch(task.task_id)
        return {}

    async def _own_task(self, call: Call) -> TaskRecord:
        if call.stateless and EXTENSION not in (call.client_capabilities.get("extensions") or {}):
            raise MissingCapabilityError({"extensions": {EXTENSION: {}}})
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParamsError("Invalid params: taskId must be a string")
        task = await self.stores.tasks.get(task_id)
        if task is None or task.principal != (call.principal.key if call.principal else None):
            raise _task_not_found()  # another principal's task is answered like an unknown one
        return task

    # -- running -------------------------------------------------------------------------------------------

    async def run(self, task_id: str, *, lambda_context: Any = None) -> None:
        """Run a stored task to its end and record the outcome (unless it was cancelled meanwhile).

        `lambda_context` bounds the run by the invocation's remaining time, as for any call.
        """
        from stratus.protocol.call import Call
        from stratus.request.http import HttpRequest

        task = await self.stores.tasks.get(task_id)
        if task is None or task.status != "working":
            return
        # Asynchronous invocation can deliver one launch more than once ("How Lambda handles errors and retries with
        # asynchronous invocation", Lambda developer guide): each launch, named by the task's last update, runs once.
        if not await self.stores.cache.claim(launch_key(task), max(task.expires_at - task.updated_at, 1.0)):
            return
        request = json.loads(task.request)
        asked = list(_outcome(task).get("asked", []))
        # Like a multi round-trip retry, the run starts over with every answer the client has given so far.
        answers = await self._answers(task_id, asked)
        tool = self.tools.get(request["tool"])
        call = Call(
            request=Request(
                id=task_id, method="tools/call", params={"name": request["tool"], "inputResponses": answers}
            ),
            version=request["version"],
            client_capabilities=request.get("clientCapabilities") or {},
            principal=principal_from(request["principal"]),
            http=HttpRequest("POST", "", {}, lambda_context=lambda_context) if lambda_context else None,
        )
        if tool is None:
            outcome: JsonObject = {"error": InvalidParamsError(f"Unknown tool: {request['tool']}").to_error()}
        else:
            outcome = await self._outcome_of(call, tool, request["arguments"])
        if "inputRequests" in outcome:
            outcome["asked"] = sorted({*asked, *outcome["inputRequests"]})
            status = "input_required"
        else:
            status = "failed" if "error" in outcome else "completed"
        recorded = await self._record(task_id, status, outcome)
        if recorded is not None:
            if recorded in TERMINAL:
                await self.quota.give_back(task_place(task))
            await self.stores.events.append(task_stream(task_id), recorded)

    async def _record(self, task_id: str, status: str, outcome: JsonObject) -> str | None:
        """Move a live task to `status` with `outcome`: the status it ended in, None when it had already moved. An
        outcome the store cannot keep (`STRATUS_MAX_RECORD_BYTES`) fails the task with that error instead, so the
        task always ends and its client learns why."""
        try:
            moved = await self.stores.tasks.update(task_id, status=status, result=json.dumps(outcome), expect=LIVE)
        except RecordTooLargeError as refused:
            logger.warning("task outcome too large to keep", extra={"task": task_id, "size": refused.data["size"]})
            status, failure = "failed", json.dumps({"error": refused.to_error()})
            moved = await self.stores.tasks.update(task_id, status=status, result=failure, expect=LIVE)
        return status if moved else None

    async def _answers(self, task_id: str, keys: list[str]) -> JsonObject:
        """The client's answers (via tasks/update) to the task's questions so far, by key."""
        answers: JsonObject = {}
        for key in keys:
            stored = await self.stores.cache.get(_answer_key(task_id, key))
            if stored is not None:
                answers[key] = json.loads(stored)
        return answers

    async def _outcome_of(self, call: Call, tool: Tool, arguments: JsonObject) -> JsonObject:
        running = asyncio.ensure_future(self.run_tool(call, tool, arguments))
        cancelled = self.watch.watch(str(call.request.id))
        try:
            done, _ = await asyncio.wait((running, cancelled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.watch.forget(str(call.request.id))
        if running not in done:
            await self.stop_tool(str(call.request.id))  # the call's cancellation signal, as for any call
            if (await asyncio.wait({running}, timeout=CANCEL_GRACE_SECONDS))[0]:
                running.exception()  # retrieved: the outcome of a cancelled task is not recorded
            else:
                running.cancel()
            return {"error": McpError("Task cancelled").to_error()}
        try:
            result = running.result()
        except McpError as error:
            return {"error": error.to_error()}
        if result.get("resultType") == "input_required":
            return {"inputRequests": result["inputRequests"]}
        return {"result": result}

    def _wire(self, task: TaskRecord, *, stateless: bool) -> JsonObject:
        ttl_ms = json.loads(task.request).get("ttlMs", DEFAULT_TTL_MS)
        wire: JsonObject = {
            "taskId": task.task_id,
            "status": task.status,
            "createdAt": _iso(task.created_at),
            "lastUpdatedAt": _iso(task.updated_at),
        }
        message = _outcome(task).get("statusMessage")
        if isinstance(message, str):
            wire["statusMessage"] = message
        if stateless:
            wire.update(ttlMs=ttl_ms, pollIntervalMs=POLL_INTERVAL_MS)
        else:
            wire.update(ttl=ttl_ms, pollInterval=POLL_INTERVAL_MS)
        return wire


def _outcome(task: TaskRecord) -> JsonObject:
    outcome = json.loads(task.result) if task.result else {}
    return outcome if isinstance(outcome, dict) else {}


def _stored_error(error: JsonObject, meta: JsonObject) -> McpError:
    failure = McpError(str(error.get("message", "Task failed")), data=error.get("data"))
    failure.code = int(error.get("code", failure.code))
    if failure.data is None:
        failure.data = meta
    return failure


def launch_key(task: TaskRecord) -> str:
    """The claim a run of the task's current launch takes (one launch per `working` spell, named by its update)."""
    return f"task:{task.task_id}:run:{task.updated_at!r}"


def task_place(task: TaskRecord) -> str | None:
    """The key of the place the task holds in its principal's quota (`stratus.protocol.task_quota`), if any."""
    place = json.loads(task.request).get("place")
    return place if isinstance(place, str) else None


def _answer_key(task_id: str, key: str) -> str:
    return f"task:{task_id}:answer:{key}"
