"""Tasks: a tools/call answered at once with a task handle, its result fetched later from any container.

Two wires over one store record:

- 2025-11-25 (experimental tasks): the client asks with `params.task` on a tool whose `execution.taskSupport` is
  `optional` or `required`; `CreateTaskResult` is `{"task": Task}`; `tasks/get`, `tasks/result` (waits for the
  end, then answers exactly what the call would have) and `tasks/cancel` (moves the task to `cancelled` first).
- 2026-07-28 (extension `io.modelcontextprotocol/tasks`): a client declaring the extension on its request gets a
  task for such tools (`resultType: "task"`); `tasks/get` inlines `result` or `error`; `tasks/update` and
  `tasks/cancel` acknowledge.

The task is written to the store before its handle is returned, bound to the caller's principal (another
principal is told the task does not exist), and run by a `TaskLauncher` (`stratus.protocol.launchers`): in this
process, or by a separate invocation (stratus.handlers.task_worker.LambdaLauncher) because a Lambda container is frozen
once its response is sent. What the task runs and where it came to are typed (`stratus.stores.task_records`); each
era's wire shapes are `stratus.protocol.task_wire`'s, chosen once per request.
A tool's `isError` result completes its task; only a JSON-RPC error fails it. A tool inside a task may ask
the client for input: the task waits in `input_required` with the questions (2026-07-28 `tasks/get`), and
once `tasks/update` has answered them all it runs again from the start with the answers, like a multi
round-trip retry (on Lambda, in a new invocation).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from stratus.errors import REQUEST_TIMEOUT, InternalError, InvalidParamsError, McpError, RecordTooLargeError
from stratus.protocol.answers import KeptAnswers, reply_answer
from stratus.protocol.jsonrpc import Request
from stratus.protocol.kept_principal import kept_principal, principal_from
from stratus.protocol.launchers import InProcessLauncher as InProcessLauncher
from stratus.protocol.launchers import RecordLauncher, answers_callback_key
from stratus.protocol.launchers import TaskLauncher as TaskLauncher
from stratus.protocol.task_quota import PrincipalTaskQuota, quota_holder, refuse_process
from stratus.protocol.task_watch import CancellationWatch, task_stream
from stratus.protocol.task_wire import HANDSHAKE, STATELESS, TaskWire, wire_for
from stratus.request.inputs import OutOfTime
from stratus.stores.records import TaskRecord
from stratus.stores.task_records import RpcError, TaskOutcome, TaskRequest
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.call import Call
    from stratus.server.server import McpServer
    from stratus.server.tools import Tool
    from stratus.stores.base import Stores

logger = logging.getLogger("stratus.tasks")
TERMINAL = ("completed", "failed", "cancelled")
LIVE = ("working", "input_required")
RESULT_WAIT_SECONDS = 25.0
"""`tasks/result` waits at most this long per request (below API Gateway's 29 s); the client asks again."""

RunTool = Callable[["Call", "Tool", JsonObject], Awaitable[JsonObject]]
StopTool = Callable[[str], Awaitable[None]]
CANCEL_GRACE_SECONDS = 5.0
"""How long a cancelled task's tool may take to honour its cancellation signal before it is interrupted."""
CANCELLED_BY_CLIENT = TaskOutcome(status_message="Cancelled by the client")
RunEnd = Literal["ended", "asked", "yielded", "skipped"]
"""Where one run of a task came to (`TaskService.run`)."""


def _task_not_found() -> InvalidParamsError:
    return InvalidParamsError("Failed to retrieve task: Task not found")


class TaskService:
    """Creates, reports, cancels and runs tasks."""

    def __init__(
        self,
        server: McpServer,
        stores: Stores,
        run_tool: RunTool,
        stop_tool: StopTool,
        launcher: TaskLauncher | None = None,
        *,
        max_tasks: int = 0,
        max_tasks_per_principal: int = 0,
        anonymous_ttl_seconds: int = 0,
    ) -> None:
        self.server = server
        """The served server, whose tools (a gateway's are rebuilt as its upstreams change) run the calls."""
        self.stores = stores
        self.run_tool = run_tool
        self.stop_tool = stop_tool
        self.launcher = launcher or InProcessLauncher()
        self.max_tasks = max_tasks
        """Caps the tasks running in this process (in-process runs only; 0: none): `stratus.protocol.task_quota`."""
        self.quota = PrincipalTaskQuota(stores.cache, max_tasks_per_principal)
        self.anonymous_ttl_seconds = anonymous_ttl_seconds
        """The longest an anonymous caller's task lives, whatever it asks (0: as any caller's)."""
        self.answers = KeptAnswers(stores.cache)
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
        return wire_for(call).wanted(call, tool)

    async def create(self, call: Call, tool: Tool, arguments: JsonObject) -> JsonObject:
        """Store the task, start its run, and answer with its handle (durable before it is returned).

        Raises:
            TooManyTasksError: the caller's live tasks (429) or this process's running ones (503) are at their cap.
        """
        if self.max_tasks and isinstance(self.launcher, InProcessLauncher) and self.launcher.running >= self.max_tasks:
            raise refuse_process(self.max_tasks)
        wire = wire_for(call)
        ttl_ms = wire.ttl_ms(call)
        task_id = secrets.token_urlsafe(24)
        owner = call.principal.key if call.principal else None
        if owner is None and self.anonymous_ttl_seconds:
            ttl_ms = min(ttl_ms, self.anonymous_ttl_seconds * 1000)  # the receiver may shorten a requested ttl
        source = call.http.source_address if call.http is not None else None
        place = await self.quota.take(quota_holder(owner, source), ttl_ms / 1000)
        request = TaskRequest(
            tool=tool.name,
            arguments=arguments,
            version=call.version,
            principal=kept_principal(call.principal),
            client_capabilities=call.client_capabilities,
            ttl_ms=ttl_ms,
            place=place,
        )
        record = TaskRecord(task_id=task_id, principal=owner, status="working", request=request)
        try:
            await self.stores.tasks.create(record, ttl_seconds=ttl_ms / 1000)
            stored = await self.stores.tasks.get(record.task_id)
            if stored is None:
                raise InternalError("The task could not be stored")
        except BaseException:
            await self.quota.give_back(place)
            raise
        try:
            await self._launch(record.task_id, stored)
        except Exception:
            reference = secrets.token_hex(6)
            logger.exception("task launch failed", extra={"task": record.task_id, "error_ref": reference})
            failure = InternalError(f"The task could not be started (reference {reference})", http_status=200)
            await self.stores.tasks.update(
                record.task_id, status="failed", outcome=TaskOutcome(error=RpcError.of(failure)), expect=LIVE
            )
            await self.quota.give_back(place)
            raise failure from None
        return wire.created(stored)

    # -- the client's requests -----------------------------------------------------------------------------

    async def get(self, call: Call) -> JsonObject:
        wire = wire_for(call)
        task = await self._own_task(call, wire)
        return await wire.status(task, lambda: self.answers.outstanding(task))

    async def result(self, call: Call) -> JsonObject:
        """2025-11-25 `tasks/result`: once the task has ended, exactly what the call would have answered. While it is
        `input_required`, its unanswered questions go out on this request's stream first
        (`stratus.protocol.questions`); a buffered answer, which the client reads only once it is whole, ends
        there, and the client asks again after answering."""
        from stratus.protocol.questions import TASK, ask

        task = await self._own_task(call, HANDSHAKE)
        outbound = call.http.outbound if call.http is not None else None
        loop = asyncio.get_running_loop()
        deadline, seen, sent = loop.time() + RESULT_WAIT_SECONDS, 0, set[str]()
        while task.status not in TERMINAL:
            if task.status == "input_required" and outbound is not None:
                outstanding = await self.answers.outstanding(task)
                questions = {key: asked for key, asked in outstanding.items() if key not in sent}
                await ask(outbound, TASK, task.task_id, questions)
                sent.update(questions)
                if outbound.buffered:
                    break
            if (left := deadline - loop.time()) <= 0:
                break
            events = await self.stores.events.wait_after(task_stream(task.task_id), seen, left)
            seen = events[-1].seq if events else seen
            task = await self._own_task(call, HANDSHAKE)
        return HANDSHAKE.final(task)

    async def cancel(self, call: Call) -> JsonObject:
        wire = wire_for(call)
        task = await self._own_task(call, wire)
        moved = await self.stores.tasks.update(
            task.task_id, status="cancelled", outcome=CANCELLED_BY_CLIENT, expect=LIVE
        )
        if not moved:
            return wire.already_ended(task)
        await self.stores.events.append(task_stream(task.task_id), "cancelled")  # heard by the run's watch
        await self.quota.give_back(task_place(task))
        if isinstance(self.launcher, RecordLauncher):
            await self.launcher.stop(task)  # its durable execution, running or waiting; a run hears it in the store too
        return wire.cancelled(await self._own_task(call, wire))

    async def update(self, call: Call) -> JsonObject:
        """2026-07-28 `tasks/update`: keep the answers to outstanding questions (others are ignored, as the
        extension asks); once none is left, the task goes back to `working` and runs again with them."""
        task = await self._own_task(call, STATELESS)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParamsError("Invalid params: inputResponses must be an object")
        await self._keep_answers(task, {key: value for key, value in responses.items() if isinstance(value, dict)})
        return {}

    async def answer(self, principal_key: str | None, task_id: str, key: str, reply: JsonObject) -> bool:
        """A 2025-11-25 client's reply to one of its task's questions (`{"result": ...}` or `{"error": ...}`), kept as
        its answer; whether the task was the caller's and waited for it."""
        task = await self.stores.tasks.get(task_id)
        if task is None or not isinstance(task.request, TaskRequest) or task.principal != principal_key:
            return False
        answer = reply_answer(reply)
        return answer is not None and await self._keep_answers(task, {key: answer})

    async def _keep_answers(self, task: TaskRecord, responses: dict[str, JsonObject]) -> bool:
        """Keep the answers to the task's outstanding questions among `responses`; once none is left, the task goes
        back to `working` and runs again with them. Whether any was kept."""
        if task.status != "input_required":
            return False
        kept, complete = await self.answers.keep(task, responses)
        if not complete:
            return kept
        resumed = await self.stores.tasks.update(
            task.task_id, status="working", outcome=None, expect=("input_required",)
        )
        if resumed:  # only one of several racing answers resumes it
            if isinstance(self.launcher, RecordLauncher):  # the durable execution waiting for the answers
                await self.launcher.resume(task, await self.stores.cache.get(answers_callback_key(task.task_id)))
            else:
                await self._launch(task.task_id)
        return True

    async def _launch(self, task_id: str, task: TaskRecord | None = None) -> None:
        if isinstance(self.launcher, RecordLauncher):
            task = task or await self.stores.tasks.get(task_id)
            if task is not None:
                await self.launcher.launch_record(task)
                return
        await self.launcher.launch(task_id, self.run)

    async def _own_task(self, call: Call, wire: TaskWire) -> TaskRecord:
        wire.admit(call)
        task_id = call.params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParamsError("Invalid params: taskId must be a string")
        task = await self.stores.tasks.get(task_id)
        if (
            task is None
            or not isinstance(task.request, TaskRequest)  # a relayed call shares the store, but is no task
            or task.principal != (call.principal.key if call.principal else None)
        ):
            raise _task_not_found()  # another principal's task is answered like an unknown one
        return task

    # -- running -------------------------------------------------------------------------------------------

    async def run(self, task_id: str, *, lambda_context: Any = None, durable: bool = False) -> RunEnd:
        """Run a stored task and record where it came to (unless it was cancelled meanwhile): `ended` (completed,
        failed or cancelled), `asked` (input_required), `yielded` (`durable` only: the next step might not finish in
        this invocation, and the task is still `working`), or `skipped` when it did not run (unknown, no task, no
        longer working, or this launch ran already).

        `lambda_context` bounds the run by the invocation's remaining time, as for any call. `durable`: a round of the
        durable task worker, whose execution runs each round once (no launch claim), and whose run may end between
        two steps to go on in the next invocation.
        """
        from stratus.protocol.call import Call
        from stratus.protocol.worker_events import own_record
        from stratus.request.http import HttpRequest
        from stratus.server.steps import StepJournal

        task = await own_record(self.stores.tasks, task_id, TaskRequest)
        if task is None or task.status != "working" or not isinstance(task.request, TaskRequest):
            return "skipped"
        # Asynchronous invocation can deliver one launch more than once ("How Lambda handles errors and retries with
        # asynchronous invocation", Lambda developer guide): each launch, named by the task's last update, runs once.
        # A durable execution needs no claim: its name admits one start, and it records each round it ran.
        ttl = max(task.expires_at - task.updated_at, 1.0)
        if not durable and not await self.stores.cache.claim(launch_key(task), ttl):
            return "skipped"
        request = task.request
        asked = task.outcome.asked if task.outcome is not None else ()
        # Like a multi round-trip retry, the run starts over with every answer the client has given so far.
        answers = await self.answers.of(task_id, list(asked))
        tool = self.server.tools.get(request.tool)
        remaining = _seconds_left(lambda_context) if durable and lambda_context is not None else None
        steps = StepJournal(self.stores.cache, task_id, ttl, remaining=remaining)
        call = Call(
            request=Request(id=task_id, method="tools/call", params={"name": request.tool, "inputResponses": answers}),
            version=request.version,
            client_capabilities=request.client_capabilities,
            principal=principal_from(request.principal),
            http=HttpRequest("POST", "", {}, lambda_context=lambda_context) if lambda_context else None,
            steps=steps,
        )
        limit = remaining() if remaining is not None else 0.0
        if tool is None:
            outcome: TaskOutcome | None = TaskOutcome(
                error=RpcError.of(InvalidParamsError(f"Unknown tool: {request.tool}"))
            )
        else:
            outcome = await self._outcome_of(call, tool, request.arguments)
        if outcome is None or outcome.input_requests is not None:
            await steps.keep_log_count()  # the next run replays the tool
        if outcome is None:
            return "yielded"
        if outcome.error is not None and outcome.error.code == REQUEST_TIMEOUT and remaining is not None:
            overran = steps.overran(limit)
            outcome = TaskOutcome(error=RpcError.of(overran)) if overran is not None else outcome
        if outcome.input_requests is not None:
            outcome = outcome._replace(asked=tuple(sorted({*asked, *outcome.input_requests})))
            status = "input_required"
        else:
            status = "failed" if outcome.error is not None else "completed"
        recorded = await self._record(task_id, status, outcome)
        if recorded is not None:
            if recorded in TERMINAL:
                await self.quota.give_back(task_place(task))
            await self.stores.events.append(task_stream(task_id), recorded)
        return "asked" if recorded == "input_required" else "ended"

    async def _record(self, task_id: str, status: str, outcome: TaskOutcome) -> str | None:
        """Move a live task to `status` with `outcome`: the status it ended in, None when it had already moved. An
        outcome the store cannot keep (`STRATUS_MAX_RECORD_BYTES`) fails the task with that error instead, so the
        task always ends and its client learns why."""
        try:
            moved = await self.stores.tasks.update(task_id, status=status, outcome=outcome, expect=LIVE)
        except RecordTooLargeError as refused:
            logger.warning("task outcome too large to keep", extra={"task": task_id, "size": refused.data["size"]})
            status, failure = "failed", TaskOutcome(error=RpcError.of(refused))
            moved = await self.stores.tasks.update(task_id, status=status, outcome=failure, expect=LIVE)
        return status if moved else None

    async def _outcome_of(self, call: Call, tool: Tool, arguments: JsonObject) -> TaskOutcome | None:
        """What the run came to; None when it ended between two steps to go on in the next invocation."""
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
            return TaskOutcome(error=RpcError.of(McpError("Task cancelled")))
        try:
            result = running.result()
        except OutOfTime:
            return None
        except McpError as error:
            return TaskOutcome(error=RpcError.of(error))
        if result.get("resultType") == "input_required":
            return TaskOutcome(input_requests=result["inputRequests"])
        return TaskOutcome(result=result)


def _seconds_left(lambda_context: Any) -> Callable[[], float]:
    return lambda: float(lambda_context.get_remaining_time_in_millis()) / 1000.0


def launch_key(task: TaskRecord) -> str:
    """The claim a run of the task's current launch takes (one launch per `working` spell, named by its update)."""
    return f"task:{task.task_id}:run:{task.updated_at!r}"


def task_place(task: TaskRecord) -> str | None:
    """The key of the place the task holds in its principal's quota (`stratus.protocol.task_quota`), if any."""
    return task.request.place if isinstance(task.request, TaskRequest) else None
