"""The durable task worker: a task's whole life in one Lambda durable execution (template.yaml:
DurableTaskWorkerFunction, with the `DurableTasks` parameter), started by
`stratus.handlers.durable_launcher.DurableLauncher`.

Its handler runs under the durable execution SDK (`aws-durable-execution-sdk-python`, the `durable` extra, shipped
only to this function: only this module imports it, and no serving function imports this module). The execution
replays the handler from the top on every invocation, returning the recorded result of each operation that completed
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk.html). The handler runs the task in rounds; each
round is a step `run-<n>`, the task's run as the task worker runs it (`stratus.handlers.task_worker.run_task`), which
replays the tool's own steps (`ctx.step`, kept in the store) and comes to one of:

- `ended`: the task completed, failed or was cancelled. The execution ends.
- `asked`: the tool asked its client something; the task is `input_required`. The round creates a callback
  (`answers-<n>`), keeps its id where the serving functions find it, and suspends on it: no invocation runs, and
  nothing is billed for compute, while the person thinks (https://docs.aws.amazon.com/lambda/latest/dg/
  durable-callbacks.html). The client's last answer completes the callback, and the next round runs with the answers.
  If the answers came before the callback's id was kept, the round finds the task `working` again and goes on in a
  fresh invocation.
- `yielded`: the tool's next step might not finish in this invocation (the function's timeout, at most 15 minutes).
  A one-second wait (`resume-<n>`) ends the invocation, and the next round runs in a fresh one. So a task made of
  steps that each fit in one invocation runs for as long as the execution timeout allows.

A round's step starts at most once per attempt (`AT_MOST_ONCE_PER_RETRY`). An invocation that died in it (a crash,
the function's timeout) leaves it started, and the replay retries it (`ROUND_ATTEMPTS`, after a delay): the tool runs
again from the top, and the steps it had completed return their kept results without running again. Once the attempts
are spent, a step `mark-failed` moves the task to `failed` with the message a dead run gets
(`stratus.protocol.run_failures.fail_task`), so its client learns it ended.

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

from aws_durable_execution_sdk_python import DurableContext, StepContext, StepError, durable_execution, state
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration, StepConfig, StepSemantics
from aws_durable_execution_sdk_python.exceptions import CallbackError
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers.task_worker import TASK_EVENT_KEY, launch_trace, run_task, settings_for_invocation
from stratus.protocol.launchers import answers_callback_key
from stratus.protocol.run_failures import RETRIES_EXHAUSTED, fail_task
from stratus.tracing import Tracing

logger = logging.getLogger("stratus.tasks")


def _wake_the_checkpointer_when_stopped() -> None:
    """End each invocation as soon as its handler has returned. The SDK (3.0.0) stops its checkpoint thread by setting
    an event the thread reads only when its wait on an empty queue times out (`_STOP_SIGNAL_POLL_SECONDS`, 0.1 s), and
    the invocation ends once the thread has: Lambda bills each invocation of a durable function ~100 ms for that wait.
    Putting the queue's own wake-up signal after the stop ends the wait at once. Left alone where the SDK is no longer
    built this way."""
    stop = getattr(state.ExecutionState, "stop_checkpointing", None)
    wake = getattr(getattr(state, "_Signal", None), "REFRESH_WAKE", None)
    if stop is None or wake is None or getattr(stop, "wakes_the_checkpointer", False):
        return

    def stop_and_wake(execution: Any) -> None:
        stop(execution)
        execution._checkpoint_queue.put(wake)

    stop_and_wake.wakes_the_checkpointer = True  # type: ignore[attr-defined]
    state.ExecutionState.stop_checkpointing = stop_and_wake  # type: ignore[method-assign,assignment]


_wake_the_checkpointer_when_stopped()
MARK_FAILED_STEP = "mark-failed"
MAX_ROUNDS = 200
"""The most rounds (questions answered, and invocations begun for time) one task's execution runs: each round takes
four operations at most, well within what one execution may record."""
ROUND_ATTEMPTS = 3
"""How many times a round that died (a crash, the function's timeout, the store out of reach) is run."""
ROUND = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=ROUND_ATTEMPTS, initial_delay=Duration.from_seconds(5), max_delay=Duration.from_minutes(1)
        )
    ),
    step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY,
)
NEXT_INVOCATION = Duration.from_seconds(1)
"""The wait that ends an invocation so the next round starts a fresh one (its first step always runs): the least the
SDK allows."""


def run_launch(
    event: Any, context: DurableContext, settings: Callable[[], Settings], tracing: Tracing | None = None
) -> dict[str, Any]:
    """One durable execution of a task (`{"stratusTask": "<task id>"}`), round after round: `ended` is what the last
    round came to (`ended`; `skipped` when the task was unknown or no longer working), `rounds` how many ran;
    `markedFailed` is there when a round failed for good and says whether that moved the task to `failed`. Each
    round's span continues the trace the launch carried (every round's, a resumption's too)."""
    fields = event if isinstance(event, dict) else {}
    task_id = fields.get(TASK_EVENT_KEY)
    if not isinstance(task_id, str):
        logger.warning("durable task worker invoked without a task id")
        return {"ended": "skipped", "rounds": 0}
    parent = launch_trace(fields)

    def run(_: StepContext) -> str:
        round_run = run_task(settings(), task_id, context.lambda_context, durable=True, parent=parent, tracing=tracing)
        return asyncio.run(round_run)

    for round_number in range(MAX_ROUNDS):
        try:
            end = context.step(run, name=f"run-{round_number}", config=ROUND)
        except StepError:
            logger.exception("a durable task round failed", extra={"task": task_id})
            return _failed(context, settings, task_id, round_number + 1)
        if end == "yielded":
            context.wait(NEXT_INVOCATION, name=f"resume-{round_number}")
        elif end == "asked":
            if not _answered(context, settings, task_id, round_number):
                return {"ended": "ended", "rounds": round_number + 1, "taskId": task_id}  # cancelled or expired
        else:
            return {"ended": end, "rounds": round_number + 1, "taskId": task_id}
    logger.warning("a durable task ran out of rounds", extra={"task": task_id})
    return _failed(context, settings, task_id, MAX_ROUNDS)


def _answered(context: DurableContext, settings: Callable[[], Settings], task_id: str, round_number: int) -> bool:
    """Wait, suspended, for the client's answers to the round's questions; False when the task ended meanwhile (it
    was cancelled, or expired), or the callback timed out with it."""
    callback = context.create_callback(name=f"answers-{round_number}", config=CallbackConfig())

    def listen(_: StepContext) -> str:
        return asyncio.run(_listen(settings(), task_id, callback.callback_id))

    status = context.step(listen, name=f"listen-{round_number}")
    if status == "working":  # answered before the callback's id was kept: go on, in a fresh invocation
        context.wait(NEXT_INVOCATION, name=f"answered-{round_number}")
        return True
    if status != "input_required":
        return False
    try:
        callback.result()
    except CallbackError:
        return False
    return True


async def _listen(settings: Settings, task_id: str, callback_id: str) -> str:
    """Keep the callback's id for the serving functions (`TaskService.update`), then the task's status: `working`
    when the answers were all given already, `input_required` while they are awaited, or where it ended."""
    stores = stores_for(settings)
    try:
        task = await stores.tasks.get(task_id)
        if task is None:
            return "gone"
        await stores.cache.set(answers_callback_key(task_id), callback_id, max(task.expires_at - task.updated_at, 1.0))
        task = await stores.tasks.get(task_id)
        return task.status if task is not None else "gone"
    finally:
        await stores.aclose()


def _failed(context: DurableContext, settings: Callable[[], Settings], task_id: str, rounds: int) -> dict[str, Any]:
    def mark_failed(_: StepContext) -> bool:
        return asyncio.run(_fail(settings(), task_id))

    marked = context.step(mark_failed, name=MARK_FAILED_STEP)
    return {"ended": "failed", "rounds": rounds, "taskId": task_id, "markedFailed": marked}


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
