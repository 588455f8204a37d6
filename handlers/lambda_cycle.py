"""One Lambda invocation as one ASGI request: the event read as a scope and a body, the app run on the container's
event loop, its buffered response written as the answer the front door expects.

Payload 2.0 (the HTTP API and Function URLs, the buffered function's front doors) is read and answered by
`http_api_event`; every other shape (the REST API, ALB, Lambda@Edge) by Mangum's event handlers. Between reading and
answering, `Mangum.__call__` would run the app through an `asyncio.Queue`, an `ExitStack`, an INFO access line and
a lookup of the event's shape repeated on every invocation, and its HTTP API handler builds the scope twice. None of
that is needed for an app that reads one body and sends one buffered answer, so `Cycle` runs it directly: together
with `http_api_event`, about a sixth of a warm tools/call's instructions (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from stratus.handlers.http_api_event import HttpApiEvent, is_payload_2
from stratus.transport.asgi import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from mangum.types import LambdaHandler

App = Callable[[Scope, Receive, Send], Awaitable[None]]

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
            if self._gone is None:
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
            if self._gone is not None:
                self._gone.set_result(None)

    async def run(self, app: App, scope: Scope) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception as error:  # noqa: BLE001 - the app answers its own errors; this is the last guard
            logger.error("the app failed", extra={"error_type": type(error).__name__})
            if not self.complete:
                self.status, self.headers, body = _INTERNAL_ERROR
                self.chunks = [body]


def _other_reader(event: dict[str, Any], context: Any) -> LambdaHandler:
    # Mangum is imported when a shape other than payload 2.0 first arrives: the buffered function's own front
    # doors never load it, and so their cold starts skip its import.
    from stratus.handlers.mangum_events import reader

    return reader(event, context)


def invoke(app: App, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The front door's answer to `event`, the app run on the container's event loop."""
    handler = HttpApiEvent(event, context) if is_payload_2(event) else _other_reader(event, context)
    cycle = Cycle(handler.body)
    asyncio.get_event_loop().run_until_complete(cycle.run(app, handler.scope))
    return handler({"status": cycle.status, "headers": cycle.headers, "body": b"".join(cycle.chunks)})
