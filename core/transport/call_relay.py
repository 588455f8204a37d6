"""One call's SSE response: the priming event a resuming client starts from, then what the call sends, written
until the client goes (the call itself goes on; what it sends is in the event log for a resuming client); and the
buffered answer that carries what a call sent first with its result."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from stratus.errors import StoreUnavailableError
from stratus.request.outbound import Outbound
from stratus.transport.http_reply import Reply
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


async def stream_call(
    answer: Awaitable[Reply], outbound: Outbound | None, send: Send, *, max_seconds: float, keepalive_seconds: float
) -> Reply | None:
    """Run a call on a live connection while relaying what it sends before its result; None once the answer went out
    as SSE.

    Until the call first sends something, or has been silent for `keepalive_seconds`, nothing is written: a quick
    call that sends nothing answers with its plain JSON reply (and HTTP status) as usual. A silent one gets an SSE
    stream of keep-alive comments, then its answer as the stream's one event, so no front door cuts it for idling.
    On a resumable (handshake-era) stream every event is also logged, and a client that goes away does not stop the
    call: it can resume with `Last-Event-ID`. After `max_seconds` a resumable stream is ended cleanly, and its client
    resumes from the log.
    """
    outbound = outbound or Outbound()
    work = asyncio.ensure_future(answer)
    relay: CallRelay | None = None
    loop = asyncio.get_running_loop()
    cut_at = loop.time() + max_seconds
    try:
        while True:
            if relay is not None and relay.resumable and not relay.gone and loop.time() >= cut_at:
                # A stream that has carried no event id yet (before 2025-11-25 there is no priming event) is not
                # cut: its client could not resume it, and would lose the answer.
                await relay.close()
                relay.gone = True
            cuttable = relay is not None and relay.resumable and not relay.gone
            wait = min(keepalive_seconds, max(0.0, cut_at - loop.time())) if cuttable else keepalive_seconds
            waiting: set[asyncio.Future[Any]] = {work, outbound.arrival()}
            done, _ = await asyncio.wait(waiting, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            if outbound.messages:
                relay = relay or await CallRelay.open(send, outbound)
                await relay.event(*outbound.messages.popleft())
                continue
            if work in done:
                reply = work.result()
                if relay is None:
                    return reply
                while outbound.messages:
                    await relay.event(*outbound.messages.popleft())
                if reply.payload is not None:
                    await relay.event(await outbound.record_final(reply.payload), reply.payload)
                await relay.close()
                return None
            relay = relay or await CallRelay.open(send, outbound)
            await relay.comment("keep-alive")
    finally:
        if not work.done():
            work.cancel()


async def send_collected(reply: Reply, outbound: Outbound, send: Send) -> Reply | None:
    """A buffered answer: the reply alone when the call sent nothing first, else what it sent and then its result
    as one SSE body (None once written)."""
    if not outbound.messages or reply.payload is None:
        return reply
    writer = await SseWriter.start(send)
    while outbound.messages:
        event_id, message = outbound.messages.popleft()
        await writer.event(message, event_id=event_id)
    await writer.event(reply.payload)
    await writer.close()
    return None
