"""One Lambda invocation as one ASGI request: Mangum reads the event and writes the answer, Stratus runs the cycle.

Mangum knows the events of every AWS front door (API Gateway's REST and HTTP APIs, Function URLs, ALB): its
handler classes turn an event into an ASGI scope and body, and a buffered response into the answer the front door
expects. Between the two, `Mangum.__call__` runs the app through an `asyncio.Queue`, an `ExitStack`, a logged
access line and a lookup of the event's shape that every invocation repeats, and HTTP API's handler builds its
scope twice. None of that is needed to run an app that reads one body and sends one buffered answer, so `Cycle`
does it directly: about a tenth of a warm tools/call's instructions (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import cached_property
from typing import Any

from mangum.adapter import DEFAULT_TEXT_MIME_TYPES, HANDLERS
from mangum.handlers import HTTPGateway
from mangum.types import LambdaConfig, LambdaHandler

from stratus.handlers.http_api_event import HttpApiEvent, is_payload_2
from stratus.transport.asgi import Message, Receive, Scope, Send

App = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger("stratus.lambda")

CONFIG = LambdaConfig(api_gateway_base_path="/", text_mime_types=[*DEFAULT_TEXT_MIME_TYPES], exclude_headers=[])
"""Mangum's defaults: no base path to strip (the app sees the path the front door gives it), its text types."""

_INTERNAL_ERROR = (500, [(b"content-type", b"application/json")], b'{"error":"Internal Server Error"}')


class _HttpApi(HTTPGateway):
    """HTTP API and Function URL events, the scope built once (Mangum's `__call__` reads it again for the
    payload version)."""

    @cached_property
    def scope(self) -> Scope:
        return super().scope


_SHAPES: tuple[type[LambdaHandler], ...] = tuple(_HttpApi if shape is HTTPGateway else shape for shape in HANDLERS)


def mangum_reader(event: dict[str, Any], context: Any) -> LambdaHandler:
    """Mangum's handler for the event's front door; RuntimeError when the event comes from none."""
    if event.get("headers", {}) is None:  # "headers": null (console tests, some clients); Mangum expects a map
        event = {**event, "headers": {}}
    for shape in _SHAPES:
        if shape.infer(event, context, CONFIG):
            return shape(event, context, CONFIG)
    raise RuntimeError("not an event from API Gateway, a Function URL or ALB")


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


def invoke(app: App, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The front door's answer to `event`, the app run on the container's event loop."""
    handler = HttpApiEvent(event, context) if is_payload_2(event) else mangum_reader(event, context)
    cycle = Cycle(handler.body)
    asyncio.get_event_loop().run_until_complete(cycle.run(app, handler.scope))
    return handler({"status": cycle.status, "headers": cycle.headers, "body": b"".join(cycle.chunks)})
