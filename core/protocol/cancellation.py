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

    def start(self, request_id: RequestId, context: Context) -> asyncio.Future[None] | None:
        """Let a cancellation for this call reach `context.signal`, from this process and (for a session's call)
        from another one through the store; `stop` it when the call ends."""
        self._signals[(context.session_id, request_id)] = context.signal
        return asyncio.ensure_future(self._watch(request_id, context)) if context.session_id else None

    def stop(self, request_id: RequestId, context: Context, watcher: asyncio.Future[None] | None) -> None:
        self._signals.pop((context.session_id, request_id), None)
        if watcher is not None:
            watcher.cancel()

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
        """Once a session's call has run `WATCH_AFTER` seconds, wait for a cancellation sent to another process (a
        buffered Lambda container always receives it elsewhere), so short calls cost the store nothing."""
        await asyncio.sleep(WATCH_AFTER)
        within = min(context.deadline.remaining(), WATCH_LIMIT) if context.deadline else WATCH_LIMIT
        box = f"{context.session_id}/cancel/{request_id}"
        try:
            await self.pending.open(box, ttl_seconds=within + 5)
            reason = await self.pending.wait(box, within=within)
        except StoreUnavailableError:
            return  # best effort: the call is not disturbed by the store's outage
        if reason is not None:
            context.signal.cancel(reason or "cancelled by the client")
