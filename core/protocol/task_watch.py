"""One watch per process for the cancellation of every task running in it.

`tasks/cancel` (on any container) moves the task to `cancelled`, then appends `cancelled` to the task's event
stream `task:<id>`. Rather than one blocking store wait per running task (which let a few thousand tasks take a
process's whole pool of long-wait connections), one loop per process waits on every running task's stream at once
with `EventLogStore.wait_any`: one subscription on Redis, batched reads on DynamoDB, in-process in memory. A task
added while the loop waits restarts the wait so it is heard at once.

A store failure while watching is logged and the watch retried after `RETRY_SECONDS`; it is never read as a
cancellation: the tasks keep running (cancellation is best effort, as the spec allows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stratus.stores.base import EventLogStore
    from stratus.stores.records import StreamEvent

logger = logging.getLogger("stratus.tasks")
ROUND_SECONDS = 60.0
"""Longest single wait; the loop then waits again (a new wait also starts as soon as a task is added)."""
RETRY_SECONDS = 1.0
"""After a store failure, the watch waits this long (or until a task is added) before trying again."""
CANCELLED = "cancelled"


def task_stream(task_id: str) -> str:
    return f"task:{task_id}"


class CancellationWatch:
    """Futures done when a running task is cancelled, fed by one store wait for all of them."""

    def __init__(self, events: EventLogStore, *, retry_seconds: float = RETRY_SECONDS) -> None:
        self.events = events
        self.retry_seconds = retry_seconds
        self._watched: dict[str, tuple[int, asyncio.Future[None]]] = {}
        self._changed: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None

    @property
    def watching(self) -> int:
        return len(self._watched)

    def watch(self, task_id: str) -> asyncio.Future[None]:
        """A future done once `task_id` is cancelled; `forget` it when the task's run ends."""
        loop = asyncio.get_running_loop()
        cancelled: asyncio.Future[None] = loop.create_future()
        self._watched[task_stream(task_id)] = (0, cancelled)
        if self._loop_task is None or self._loop_task.done() or self._loop_task.get_loop() is not loop:
            self._changed = asyncio.Event()
            self._loop_task = loop.create_task(self._run())
        assert self._changed is not None
        self._changed.set()
        return cancelled

    async def aclose(self) -> None:
        """Stop watching (at shutdown): the store wait in flight ends and its connection goes back."""
        for stream in list(self._watched):
            self.forget(stream.removeprefix("task:"))
        if self._loop_task is not None and not self._loop_task.done():
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task

    def forget(self, task_id: str) -> None:
        watched = self._watched.pop(task_stream(task_id), None)
        if watched is not None and not watched[1].done():
            watched[1].cancel()
        if self._changed is not None:
            self._changed.set()  # the wait starts over without it (and ends once nothing is watched)

    async def _run(self) -> None:
        changed = self._changed
        assert changed is not None
        while self._watched:
            changed.clear()
            after = {stream: seq for stream, (seq, _) in self._watched.items()}
            try:
                found = await self._wait(after, changed)
            except Exception as failure:  # noqa: BLE001 - a failing store never cancels a task
                logger.warning(
                    "task cancellation watch failed; tasks keep running",
                    extra={"tasks": len(after), "error": type(failure).__name__},
                )
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.retry_seconds):
                        await changed.wait()
                continue
            for stream, events in found.items():
                watched = self._watched.get(stream)
                if watched is None or not events:
                    continue
                seq, cancelled = watched
                self._watched[stream] = (max(seq, events[-1].seq), cancelled)
                if any(event.data == CANCELLED for event in events) and not cancelled.done():
                    cancelled.set_result(None)

    async def _wait(self, after: dict[str, int], changed: asyncio.Event) -> dict[str, list[StreamEvent]]:
        """Events of the watched streams, or {} once a task is added (the wait then starts over with it)."""
        waiting = asyncio.ensure_future(self.events.wait_any(after, ROUND_SECONDS))
        added = asyncio.ensure_future(changed.wait())
        try:
            await asyncio.wait({waiting, added}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            added.cancel()
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiting
        if waiting.done() and not waiting.cancelled():
            return dict(waiting.result())
        return {}
