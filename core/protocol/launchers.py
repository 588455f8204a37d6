"""Where a stored task or relayed call runs: what a launcher declares it can start, and the in-process one.

A launcher is given what it runs: `TaskLauncher.launch(task_id, run)` runs `run(task_id)` in this process, or starts
an invocation whose own task service runs the same (`stratus.handlers.task_worker.LambdaLauncher`). A launcher that
can also start a relayed call in another invocation says so by being a `CallLauncher` (checked with isinstance);
one that names each launch by the task's record, and stops a cancelled task's run, by being a `RecordLauncher`
(`stratus.handlers.durable_launcher.DurableLauncher`). Nothing rewrites a launcher once built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from stratus.stores.records import TaskRecord


def answers_callback_key(task_id: str) -> str:
    """Where a durable task run waiting for its client's answers keeps the id of the callback that resumes it."""
    return f"task-callback:{task_id}"


RunTask = Callable[[str], Awaitable[object]]
"""Runs a stored task to its end (`TaskService.run`, which says whether it ran)."""


class TaskLauncher(Protocol):
    """Starts the run of a stored task somewhere: this process, or another invocation."""

    async def launch(self, task_id: str, run: RunTask) -> None: ...


@runtime_checkable
class CallLauncher(Protocol):
    """Also starts a stored relayed call's run in another invocation (`stratus.protocol.relayed_calls`)."""

    async def launch_call(self, call_id: str, trace: Mapping[str, str] | None = None) -> None:
        """Start the call's run; its span continues `trace` when given (a run after an answer, which no request's
        span launches), else the current span."""


@runtime_checkable
class RecordLauncher(Protocol):
    """Starts a task's one long-lived run given its record (started once however often it is sent), resumes it once
    the client has answered its questions, and stops it when the task is cancelled."""

    async def launch_record(self, task: TaskRecord) -> None: ...

    async def resume(self, task: TaskRecord, callback_id: str | None) -> None: ...

    async def stop(self, task: TaskRecord) -> None: ...


class InProcessLauncher:
    """Runs tasks on this process's event loop (uvicorn, `stratus serve`); keeps them referenced until done."""

    def __init__(self) -> None:
        self._running: set[asyncio.Future[object]] = set()

    @property
    def running(self) -> int:
        """How many task runs this process holds now."""
        return len(self._running)

    async def launch(self, task_id: str, run: RunTask) -> None:
        running = asyncio.ensure_future(run(task_id))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
