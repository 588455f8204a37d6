"""Tasks on Lambda: a container is frozen once its response is sent, so a task runs in its own invocation.

`LambdaLauncher` invokes the task worker function asynchronously (`InvocationType=Event`) with the task's id, or
with a relayed call's (a call through a buffered front door that may ask its client something mid-call:
`stratus.protocol.relayed_calls`); `handler` is that function's entry point: it loads the stored task or call and
runs it to its end within the invocation's time (`template.yaml`: TaskWorkerFunction, 15 minutes). Its secrets are
read by the container's first run and kept (`stratus.handlers.secrets`), waiting out SSM's throttling for at most
`INVOCATION_PATIENCE_SECONDS`; a run after the first calls no SSM. boto3 is imported only when a task or call is
launched.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stratus import Settings
from stratus.composition import build_serving, pipeline_for, stores_for
from stratus.handlers.loading import app_reference, load_server
from stratus.handlers.secrets import INVOCATION_PATIENCE_SECONDS, patience_within, settings_from_env
from stratus.handlers.telemetry import build_telemetry
from stratus.tracing import NO_TRACING, TRACE_EVENT_KEY, Tracing, traced, tracing_for

if TYPE_CHECKING:
    from stratus.protocol.launchers import RunTask, TaskLauncher

TASK_EVENT_KEY = "stratusTask"
CALL_EVENT_KEY = "stratusCall"
logger = logging.getLogger("stratus.tasks")


class LambdaLauncher:
    """Starts each task, and each relayed call, in an asynchronous invocation of the task worker function (whose own
    task service runs it: the `run` a launch is given is this process's). A `TaskLauncher` and, by its
    `launch_call`, a `CallLauncher` (`stratus.protocol.launchers`, not imported here: this module is on the cold
    path)."""

    def __init__(self, function: str, client: Any = None, tracing: Tracing = NO_TRACING) -> None:
        self.function = function
        self._client = client
        self.tracing = tracing

    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("lambda")
        return self._client

    async def launch(self, task_id: str, run: RunTask) -> None:
        await self._invoke({TASK_EVENT_KEY: task_id})

    async def launch_call(self, call_id: str, trace: Mapping[str, str] | None = None) -> None:
        await self._invoke({CALL_EVENT_KEY: call_id}, trace)

    async def _invoke(self, event: dict[str, str], trace: Mapping[str, str] | None = None) -> None:
        carried = {**event, TRACE_EVENT_KEY: dict(trace)} if trace else traced(event, self.tracing)
        payload = json.dumps(carried).encode()
        await asyncio.to_thread(
            self.client().invoke, FunctionName=self.function, InvocationType="Event", Payload=payload
        )


def task_launcher(settings: Settings) -> TaskLauncher | None:
    """The launcher the settings ask for: `task_worker_durable`'s (`stratus.handlers.durable_launcher`, imported only
    then), else `task_worker`'s; None runs tasks in the process that creates them."""
    if not settings.task_worker:
        return None
    tracing = tracing_for(settings.tracing)
    calls = LambdaLauncher(settings.task_worker, tracing=tracing)
    if settings.task_worker_durable:
        from stratus.handlers.durable_launcher import DurableLauncher

        return DurableLauncher(settings.task_worker_durable, calls, tracing=tracing)
    return calls


async def run_task(
    settings: Settings,
    task_id: str,
    lambda_context: Any = None,
    *,
    relayed: bool = False,
    durable: bool = False,
    parent: Mapping[str, str] | None = None,
    tracing: Tracing | None = None,
) -> str:
    """Run one stored task, or one relayed call, with the deployment's server, pipeline and stores (built for this
    run, then closed); where it came to (`stratus.protocol.task_service.RunEnd`: `skipped` when it did not run, as a
    record of the other kind never does). `durable`: a round of the durable task worker's (`TaskService.run`).
    `parent`: the trace context its launch carried, which the run's span continues (`tracing`: as the settings
    say, by default)."""
    server = load_server(app_reference(settings))
    metrics, flush = build_telemetry(settings, server.name)
    stores = stores_for(settings)
    tracing = tracing if tracing is not None else tracing_for(settings.tracing)
    serving = build_serving(server, settings, stores, pipeline_for(server, settings, stores, metrics), tracing=tracing)
    kind = "call" if relayed else "task"
    try:
        with tracing.consume(f"{kind} run", {"stratus.run": kind}, parent or {}) as span:
            try:
                if relayed:
                    return "ended" if await serving.relays().run(task_id, lambda_context=lambda_context) else "skipped"
                return await serving.tasks().run(task_id, lambda_context=lambda_context, durable=durable)
            except Exception as error:
                span.failed(type(error).__name__)
                raise
    finally:
        await serving.dispatcher.aclose()
        await stores.aclose()
        flush()


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The task worker's entry point: `{"stratusTask": "<task id>"}` or `{"stratusCall": "<call id>"}`. Each kind
    runs only its own kind of record; `ran` says whether this invocation ran it (not when it is unknown, of the
    other kind, or already run)."""
    fields = event if isinstance(event, dict) else {}
    call_id, task_id = fields.get(CALL_EVENT_KEY), fields.get(TASK_EVENT_KEY)
    parent = launch_trace(fields)
    if isinstance(call_id, str):
        settings = settings_for_invocation(context)
        ran = asyncio.run(run_task(settings, call_id, context, relayed=True, parent=parent)) != "skipped"
        return {"ran": ran, "callId": call_id}
    if not isinstance(task_id, str):
        logger.warning("task worker invoked without a task id")
        return {"ran": False}
    ran = asyncio.run(run_task(settings_for_invocation(context), task_id, context, parent=parent)) != "skipped"
    return {"ran": ran, "taskId": task_id}


def launch_trace(fields: Mapping[str, Any]) -> dict[str, str]:
    """The trace context a launch's event carried ({} without one, or with one of another shape)."""
    carried = fields.get(TRACE_EVENT_KEY)
    if not isinstance(carried, dict):
        return {}
    return {key: value for key, value in carried.items() if isinstance(key, str) and isinstance(value, str)}


def settings_for_invocation(context: Any) -> Settings:
    """The settings a worker invocation runs with, its secrets read within its patience (this one and the durable
    worker's)."""
    return settings_from_env(patience=patience_within(context, INVOCATION_PATIENCE_SECONDS))
