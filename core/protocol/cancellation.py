"""Cancelling a running call: at once when `notifications/cancelled` reaches the process running it, else through
the shared store, which a call that has run a while listens on (cancellation is best effort, as the spec allows).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from stratus.errors import StoreUnavailableError
from stratus.protocol.jsonrpc import RequestId
from stratus.request.signal import CancellationSignal
from stratus.server.context import Context

if TYPE_CHECKING:
    from stratus.stores.base import PendingRequestStore

WATCH_AFTER = 1.0
"""Seconds a session's call runs before it also listens for a cancellation sent to another process."""
WATCH_LIMIT = 900.0


class RunningCalls:
    """The cancellation signals of the calls running in this process, by (session id, request id)."""

    def __init__(self, pending: PendingRequestStore) -> None:
        self.pending = pending
        self._signals: dict[tuple[str | None, RequestId], CancellationSignal] = {}
        self._waiting: set[_Watch] = set()
        """Session calls whose watch has not started yet. One timer, for the earliest of them, serves them all:
        most calls end before it fires, and a timer or a task per call would cost more than the call itself."""
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def start(self, request_id: RequestId, context: Context) -> _Watch | None:
        """Let a cancellation for this call reach `context.signal`, from this process and (for a session's call,
        once it has run `WATCH_AFTER` seconds) from another one through the store; `stop` it when the call ends."""
        self._signals[(context.session_id, request_id)] = context.signal
        if not context.session_id:
            return None
        loop = asyncio.get_running_loop()
        watch = _Watch(request_id, context, loop, loop.time() + WATCH_AFTER)
        self._waiting.add(watch)
        if self._timer is None or self._timer_loop is not loop:
            self._timer = loop.call_at(watch.due, self._start_due)
            self._timer_loop = loop
        return watch

    def stop(self, request_id: RequestId, context: Context, watch: _Watch | None) -> None:
        self._signals.pop((context.session_id, request_id), None)
        if watch is not None:
            self._waiting.discard(watch)
            if watch.task is not None:
                watch.task.cancel()

    def _start_due(self) -> None:
        """Start the watch of every waiting call that has run `WATCH_AFTER` seconds; time the next."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        ours = [watch for watch in self._waiting if watch.loop is loop]  # a test's closed loop leaves its calls behind
        for watch in ours:
            if watch.due <= now:
                self._waiting.discard(watch)
                watch.task = loop.create_task(self._watch(watch.request_id, watch.context))
        later = [watch.due for watch in ours if watch.task is None]
        self._timer = loop.call_at(min(later), self._start_due) if later else None

    async def cancel(self, session_id: str | None, request_id: object, reason: str | None) -> None:
        """Cancel a call of this session: here if it runs here, else through the store for the process running
        it (unknown, finished or too-young calls are ignored)."""
        if not isinstance(request_id, str | int):
            return
        signal = self._signals.get((session_id, request_id))
        if signal is not None:
            signal.cancel(reason or "cancelled by the client")
        elif session_id is not None:
            await self.pending.deliver(f"{session_id}/cancel/{request_id}", reason or "")

    async def _watch(self, request_id: RequestId, context: Context) -> None:
        """Once a session's call has run `WATCH_AFTER` seconds (`_start_due` starts this then), wait for a cancellation
        sent to another process (a buffered Lambda container always receives it elsewhere), so short calls cost the
        store nothing."""
        within = min(context.deadline.remaining(), WATCH_LIMIT) if context.deadline else WATCH_LIMIT
        box = f"{context.session_id}/cancel/{request_id}"
        try:
            await self.pending.open(box, ttl_seconds=within + 5)
            reason = await self.pending.wait(box, within=within)
        except StoreUnavailableError:
            return  # best effort: the call is not disturbed by the store's outage
        if reason is not None:
            context.signal.cancel(reason or "cancelled by the client")


class _Watch:
    """One session call's watch for a cancellation sent to another process: due to start at `due` (loop time)."""

    __slots__ = ("context", "due", "loop", "request_id", "task")

    def __init__(self, request_id: RequestId, context: Context, loop: asyncio.AbstractEventLoop, due: float) -> None:
        self.request_id = request_id
        self.context = context
        self.loop = loop
        self.due = due
        self.task: asyncio.Task[None] | None = None
