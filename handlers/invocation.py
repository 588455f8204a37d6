"""One Lambda invocation as one ASGI request: the event read as a scope and a body, the app run on the container's
event loop, its buffered response written as the answer the front door expects.

The front door that sent the event reads it and writes the answer (`stratus.handlers.front_doors`: one module per
event shape, Stratus's own for payload 2.0, Mangum's event handlers for the others). Between reading and
answering, `Mangum.__call__` would run the app through an `asyncio.Queue`, an `ExitStack`, an INFO access line and
a lookup of the event's shape repeated on every invocation, and its HTTP API handler builds the scope twice. None of
that is needed for an app that reads one body and sends one buffered answer, so `Cycle` runs it directly: together
with `front_doors.http_api`, about a sixth of a warm tools/call's instructions (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from stratus.handlers.front_doors import reader_for
from stratus.types import ASGIApp, Message, Scope

logger = logging.getLogger("stratus.lambda")

_INTERNAL_ERROR = (500, [(b"content-type", b"application/json")], b'{"error":"Internal Server Error"}')


class Cycle:
    """One request's ASGI messages: the body, then (once the answer is complete) the client gone."""

    __slots__ = ("_body", "_gone", "chunks", "complete", "headers", "status")

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body
        self._gone: asyncio.Future[None] | None = None
        self.status = 0
        self.headers: list[Any] = []
        self.chunks: list[bytes] = []
        self.complete = False

    async def receive(self) -> Message:
        body = self._body
        if body is not None:
            self._body = None
            return {"type": "http.request", "body": body, "more_body": False}
        if not self.complete:
            if self._gone is None or self._gone.cancelled():  # a waiter cancelled before (a stream's watch) took it
                self._gone = asyncio.get_running_loop().create_future()
            await self._gone
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", ()))
            return
        self.chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            self.complete = True
            if self._gone is not None and not self._gone.done():
                self._gone.set_result(None)

    async def run(self, app: ASGIApp, scope: Scope) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception as error:  # noqa: BLE001 - the app answers its own errors; this is the last guard
            logger.error("the app failed", extra={"error_type": type(error).__name__})
            if not self.complete:
                self.status, self.headers, body = _INTERNAL_ERROR
                self.chunks = [body]


def invoke(app: ASGIApp, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The front door's answer to `event`, the app run on the container's event loop."""
    reader = reader_for(event, context)
    cycle = Cycle(reader.body)
    asyncio.get_event_loop().run_until_complete(cycle.run(app, reader.scope))
    return reader({"status": cycle.status, "headers": cycle.headers, "body": b"".join(cycle.chunks)})
