"""One call's SSE response: the priming event a resuming client starts from, then what the call sends, written
until the client goes (the call itself goes on; what it sends is in the event log for a resuming client)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from stratus.errors import StoreUnavailableError
from stratus.request.outbound import Outbound
from stratus.transport.sse import RECONNECT_MS, SseWriter
from stratus.types import Send


class CallRelay:
    """An SSE response that stops writing, quietly, once the client has gone (the call itself goes on)."""

    def __init__(self, writer: SseWriter) -> None:
        self.writer = writer
        self.gone = False
        self.resumable = False
        """Whether the client got an event id to resume this stream from (the priming event's, or an event's)."""

    @classmethod
    async def open(cls, send: Send, outbound: Outbound) -> CallRelay:
        log = outbound.log
        primed = False
        if log is not None and log.priming:
            # Logged before the priming id goes out, so that resuming from it finds the stream; with the store
            # unreachable the stream goes unprimed (and so is not cut) rather than hand out an id that leads nowhere.
            with contextlib.suppress(StoreUnavailableError):
                await log.open()
                primed = True
        relay = cls(await SseWriter.start(send))
        if log is not None and primed:
            await relay._do(lambda: relay.writer.prime(log.priming_id, RECONNECT_MS))
            relay.resumable = True
        return relay

    async def event(self, event_id: str | None, message: Any) -> None:
        await self._do(lambda: self.writer.event(message, event_id=event_id))
        self.resumable = self.resumable or event_id is not None

    async def comment(self, text: str) -> None:
        await self._do(lambda: self.writer.comment(text))

    async def close(self) -> None:
        await self._do(self.writer.close)

    async def _do(self, write: Callable[[], Awaitable[None]]) -> None:
        if self.gone:
            return
        try:
            await write()
        except OSError:  # the connection is gone; what is left is in the event log for a resuming client
            self.gone = True
