"""One Lambda invocation as one ASGI request: the event read as a scope and a body, the app run on the container's
event loop, its buffered response written as the answer the front door expects.

The front door that sent the event reads it and writes the answer (`stratus.handlers.front_doors`: one module per
event shape, Stratus's own for payload 2.0, Mangum's event handlers for the others); `Cycle` runs the app between
the two, for an app that reads one body and sends one buffered answer.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import Any

from stratus.handlers.front_doors import reader_for
from stratus.types import ASGIApp, Message, Scope

logger = logging.getLogger("stratus.lambda")

_INTERNAL_ERROR = (500, [(b"content-type", b"application/json")], b'{"error":"Internal Server Error"}')


# Not `Mangum.__call__`, which runs the app through an `asyncio.Queue`, an `ExitStack`, an INFO access line and a
# lookup of the event's shape on every invocation (and its HTTP API handler builds the scope twice): together with
# `front_doors.http_api`, about a sixth of a warm tools/call's instructions (docs/benchmarks.md).
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


# `run_until_complete` costs about 65 k instructions even around a coroutine that never waits: a task scheduled, two
# turns of the loop, the selector polled twice, the loop's setup and teardown (docs/benchmarks.md). The eager start
# reads asyncio's private state: tests/handlers/container_loop_checks.py checks it against `run_until_complete` on
# each supported CPython, and STRATUS_EAGER_INVOCATIONS=false leaves this loop out.
class ContainerLoop(asyncio.SelectorEventLoop):
    """The container's one event loop (handlers/adapter.py sets it), which starts each invocation eagerly.

    `run_invocation` starts the invocation as an eager task (CPython 3.12 and later): it runs at once, in its own
    context, as the current task of this loop, which counts as running meanwhile (so `get_running_loop`,
    `asyncio.timeout`, task groups and the async generator hooks behave as under `run_until_complete`). The loop itself
    turns only when something needs it: the task waited, a callback was scheduled, a timer is due or was cancelled (the
    turn clears it away), each then run by `run_until_complete` as before.
    """

    _ready: deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    _timer_cancelled_count: int
    _asyncgen_firstiter_hook: Callable[[AsyncGenerator[Any, Any]], None]
    _asyncgen_finalizer_hook: Callable[[AsyncGenerator[Any, Any]], None]
    _eager = False

    def is_running(self) -> bool:
        return self._eager or super().is_running()

    def run_invocation(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run `coroutine` to its end, as `run_until_complete` would."""
        if sys.version_info < (3, 12) or self.is_running() or self.get_debug():
            self.run_until_complete(coroutine)
            return
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        asyncio._set_running_loop(self)
        self._eager = True
        try:
            task = asyncio.eager_task_factory(self, coroutine)
        finally:
            self._eager = False
            asyncio._set_running_loop(None)
            sys.set_asyncgen_hooks(*hooks)
        if not task.done() or self._owes_a_turn():
            self.run_until_complete(task)
        task.result()

    def _owes_a_turn(self) -> bool:
        """Whether `run_until_complete` would have run anything besides the task: a callback scheduled, a timer due,
        or a cancelled timer to clear away."""
        if self._ready or self._timer_cancelled_count:
            return True
        return bool(self._scheduled) and self._scheduled[0].when() <= self.time()


def invoke(app: ASGIApp, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The front door's answer to `event`, the app run on the container's event loop."""
    reader = reader_for(event, context)
    cycle = Cycle(reader.body)
    loop = asyncio.get_event_loop()
    if isinstance(loop, ContainerLoop):
        loop.run_invocation(cycle.run(app, reader.scope))
    else:  # a loop the handler did not make (a test's, another policy's): run as any loop runs a coroutine
        loop.run_until_complete(cycle.run(app, reader.scope))
    return reader({"status": cycle.status, "headers": cycle.headers, "body": b"".join(cycle.chunks)})
