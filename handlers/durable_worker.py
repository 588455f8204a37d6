"""The durable task worker: a task's run in a Lambda durable function (template.yaml: DurableTaskWorkerFunction,
with the `DurableTasks` parameter), started by `stratus.handlers.durable_launcher.DurableLauncher`.

Its handler runs under the durable execution SDK (`aws-durable-execution-sdk-python`, the `durable` extra, shipped
only to this function: only this module imports it, and no serving function imports this module). The execution
replays the handler from the top on every invocation, returning the recorded result of each operation that completed
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk.html). The handler is two steps:

- `run`: the task's run, as the task worker runs it (`stratus.handlers.task_worker.run_task`). Once it has completed,
  a replay returns its recorded result and never runs the tool again. It runs at most once: the SDK records its start
  before it runs (`AT_MOST_ONCE_PER_RETRY`) and it is never retried, so an invocation that died inside it (a crash,
  the function's timeout) leaves a step that fails when the execution is replayed, instead of a second run (which
  would find the launch's claim taken and run nothing).
- `mark-failed`, only when `run` failed: the task moves to `failed` with the message a dead run gets
  (`stratus.protocol.run_failures.fail_task`), so its client learns it ended. A task that ended meanwhile is left as it
  is.

Lambda destinations are not supported on durable functions; an execution that still ends FAILED, STOPPED or
TIMED_OUT (past `DurableExecutionTimeoutSeconds`, or a failure outside the steps) sends its event to the function's
dead-letter queue, which the sweeper reads (https://docs.aws.amazon.com/lambda/latest/dg/durable-best-practices.html;
`stratus.handlers.failed_runs`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, StepError, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig, StepSemantics
from aws_durable_execution_sdk_python.retries import RetryPresets

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers.task_worker import TASK_EVENT_KEY, run_task, settings_for_invocation
from stratus.protocol.run_failures import RETRIES_EXHAUSTED, fail_task

logger = logging.getLogger("stratus.tasks")
RUN_STEP = "run"
MARK_FAILED_STEP = "mark-failed"
RUN_ONCE = StepConfig(retry_strategy=RetryPresets.none(), step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY)
"""The run is never repeated: its tool's side effects happen at most once per launch."""


def run_launch(event: Any, context: DurableContext, settings: Callable[[], Settings]) -> dict[str, Any]:
    """One durable execution of a task's launch (`{"stratusTask": "<task id>"}`): `ran` says whether its run ran the
    task (False: unknown, no longer working, or claimed by another run); `markedFailed` is there when the run failed
    and says whether that failure moved the task to `failed`."""
    fields = event if isinstance(event, dict) else {}
    task_id = fields.get(TASK_EVENT_KEY)
    if not isinstance(task_id, str):
        logger.warning("durable task worker invoked without a task id")
        return {"ran": False}

    def run(_: StepContext) -> bool:
        return asyncio.run(run_task(settings(), task_id, context.lambda_context))

    try:
        ran = context.step(run, name=RUN_STEP, config=RUN_ONCE)
    except StepError:
        logger.exception("a durable task run failed", extra={"task": task_id})

        def mark_failed(_: StepContext) -> bool:
            return asyncio.run(_fail(settings(), task_id))

        marked = context.step(mark_failed, name=MARK_FAILED_STEP)
        return {"ran": False, "taskId": task_id, "markedFailed": marked}
    return {"ran": ran, "taskId": task_id}


async def _fail(settings: Settings, task_id: str) -> bool:
    stores = stores_for(settings)
    try:
        return await fail_task(stores, task_id, RETRIES_EXHAUSTED)
    finally:
        await stores.aclose()


@durable_execution
def handler(event: Any, context: DurableContext) -> dict[str, Any]:
    """The durable task worker's entry point (the SDK's wrapper reads Lambda's durable invocation input)."""
    return run_launch(event, context, lambda: settings_for_invocation(context.lambda_context))
