"""Starting tasks in the durable task worker (`STRATUS_TASK_WORKER_DURABLE`; `stratus.handlers.durable_worker`),
resuming one once its client has answered its questions, and stopping the execution of a cancelled one. Imported only
when that setting is set, and never imports the durable execution SDK: the serving functions use boto3's Lambda client
alone.

A task runs as one durable execution from its creation to its end, however many questions it asks and invocations it
takes. It is invoked asynchronously (`InvocationType=Event`: the execution may run up to its execution timeout) by the
function's qualified ARN, since Lambda runs durable executions of a version or alias only
(https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking.html). Its execution name is the task's id, and a name
is an idempotency key: a start sent twice (a retried request, a delivery repeated) starts one execution
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html). Names are 1 to 64 characters of
`[a-zA-Z0-9-_]` (the Invoke API's `DurableExecutionName`); a task id is 32 of them.

A run that asked its client something waits on a callback, suspended (https://docs.aws.amazon.com/lambda/latest/dg/
durable-callbacks.html): once the client's answers are all in, `resume` completes it with
`SendDurableExecutionCallbackSuccess`, and the execution replays into its next round.

A relayed call is no task: it goes to the plain task worker (`calls`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stratus.tracing import NO_TRACING, Tracing, traced

if TYPE_CHECKING:
    from stratus.protocol.launchers import CallLauncher, RunTask
    from stratus.stores.records import TaskRecord

logger = logging.getLogger("stratus.tasks")
TASK_EVENT_KEY = "stratusTask"
"""The event's key naming the task (`stratus.handlers.task_worker.TASK_EVENT_KEY`, which the durable worker reads)."""
EXECUTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
LIVE_EXECUTIONS = ["RUNNING", "PAUSING", "PAUSED"]
"""The statuses of an execution that may still run a step (https://docs.aws.amazon.com/lambda/latest/api/
API_ListDurableExecutionsByFunction.html)."""


def execution_name(task_id: str) -> str:
    """The durable execution name of the task's run: its id, or a digest of an id of another shape."""
    if EXECUTION_NAME.fullmatch(task_id):
        return task_id
    return hashlib.sha256(task_id.encode()).hexdigest()  # 64 allowed characters


def unqualified(function: str) -> str:
    """The function a qualified name or ARN names (`worker:live` -> `worker`)."""
    parts = function.split(":")
    return ":".join(parts[:7]) if parts[0] == "arn" else parts[0]


class DurableLauncher:
    """Starts each task's launch as a durable execution of `function` (a qualified ARN or `name:alias`), relayed calls
    through `calls`, and stops a cancelled task's execution. A `RecordLauncher` and a `CallLauncher`
    (`stratus.protocol.launchers`)."""

    def __init__(self, function: str, calls: CallLauncher, client: Any = None, tracing: Tracing = NO_TRACING) -> None:
        self.function = function
        self.calls = calls
        self._client = client
        self.tracing = tracing

    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("lambda")
        return self._client

    async def launch(self, task_id: str, run: RunTask) -> None:
        """A launch known only by its task's id (its record was gone): named by the id."""
        await self._start(task_id)

    async def launch_record(self, task: TaskRecord) -> None:
        await self._start(task.task_id)

    async def launch_call(self, call_id: str, trace: Mapping[str, str] | None = None) -> None:
        await self.calls.launch_call(call_id, trace)

    async def _start(self, task_id: str) -> None:
        client = self.client()
        try:
            await asyncio.to_thread(
                client.invoke,
                FunctionName=self.function,
                InvocationType="Event",
                DurableExecutionName=execution_name(task_id),
                Payload=json.dumps(traced({TASK_EVENT_KEY: task_id}, self.tracing)).encode(),
            )
        except client.exceptions.DurableExecutionAlreadyStartedException:
            # The task's execution exists already: an earlier delivery of the same start.
            logger.info("durable task execution already started", extra={"task": task_id})

    async def resume(self, task: TaskRecord, callback_id: str | None) -> None:
        """Complete the callback the task's execution waits on for its client's answers (they are in the store). None
        yet: the run has not come to wait, and will find the task `working` again when it does
        (`stratus.handlers.durable_worker`). A failure is logged: the callback times out with the task."""
        if callback_id is None:
            return
        send = self.client().send_durable_execution_callback_success
        try:
            await asyncio.to_thread(send, CallbackId=callback_id, Result=b"{}")
        except Exception as error:  # noqa: BLE001 - an ended execution, or a callback completed already
            logger.warning(
                "a durable task's answers callback could not be completed",
                extra={"task": task.task_id, "error_type": type(error).__name__},
            )

    async def stop(self, task: TaskRecord) -> None:
        """Stop the task's execution, if it is still live (running or waiting); a failure is logged, never raised: a
        run hears the cancellation in the store anyway (`stratus.protocol.task_watch`)."""
        name = execution_name(task.task_id)
        client = self.client()
        try:
            listed = await asyncio.to_thread(
                client.list_durable_executions_by_function,
                FunctionName=unqualified(self.function),
                DurableExecutionName=name,
                Statuses=LIVE_EXECUTIONS,
            )
            for execution in listed.get("DurableExecutions", []):
                if execution.get("DurableExecutionName") == name:
                    await asyncio.to_thread(
                        client.stop_durable_execution, DurableExecutionArn=execution["DurableExecutionArn"]
                    )
        except Exception as error:  # noqa: BLE001 - any failure to stop leaves the cancellation to the store
            logger.warning(
                "a cancelled task's durable execution could not be stopped",
                extra={"task": task.task_id, "error_type": type(error).__name__},
            )
