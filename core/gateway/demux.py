"""Sorts what an upstream sends on one shared inbound stream (stdio, HTTP+SSE (2024-11-05)) to the requests awaiting it.

A response goes to the request with its id. A notification whose params carry `progressToken` goes to the
request of that token (the client sets it to the request's id); any other notification or upstream request
goes to the most recent request still waiting, for want of anything better on these wires, and is dropped when
none waits; list changes (`notifications/*/list_changed`) and resource updates belong to no request and go to
`changes()` instead.
The transport answers what nobody else can: `ping`, and an upstream request no request waits for (the upstream
would otherwise wait for an answer until its own timeout). When the stream ends, every waiting
request fails with the reason, and so does every later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from stratus.gateway.connectors.contract import UpstreamUnavailableError
from stratus.types import JsonObject

MAX_BACKLOG = 1000
"""How many messages about one request may wait to be passed on before the request fails as flooded."""
MAX_CHANGES = 100
"""How many list changes may wait for the watcher; older ones are dropped first (a newer one says the same)."""

logger = logging.getLogger("stratus.gateway")


class Inbox:
    """What the upstream sends about one request, in order, ending with the response or the stream's failure."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[JsonObject | str] = asyncio.Queue()
        self.failed = False

    def put(self, message: JsonObject) -> None:
        if self._queue.qsize() >= MAX_BACKLOG:
            self.fail(f"sent more than {MAX_BACKLOG} messages about one request before it was answered")
        elif not self.failed:
            self._queue.put_nowait(message)

    def fail(self, reason: str) -> None:
        if not self.failed:
            self.failed = True
            self._queue.put_nowait(reason)

    async def messages(self) -> AsyncGenerator[JsonObject, None]:
        """Every message routed here, the response last; raises UpstreamUnavailableError if the stream fails first.

        Ends on the response or the failure: the caller bounds the wait for either (the client's timeout).
        """
        while True:
            message = await self._queue.get()
            if isinstance(message, str):
                raise UpstreamUnavailableError(message)
            yield message
            if _is_response(message):
                return


class Demux:
    """The requests waiting on one upstream's inbound stream, most recent last."""

    def __init__(self) -> None:
        self._waiting: dict[str | int, Inbox] = {}
        self._ended: str | None = None
        self._changes: asyncio.Queue[JsonObject | None] = asyncio.Queue()

    @contextmanager
    def expecting(self, request_id: Any) -> Iterator[Inbox]:
        """Wait for messages about `request_id` while the block runs: enter it before sending the request.

        Raises:
            UpstreamUnavailableError: the stream has already ended (its reason), or the id is already waiting.
        """
        self.raise_if_ended()
        if not isinstance(request_id, str | int) or request_id in self._waiting:
            raise UpstreamUnavailableError(f"cannot tell the answer to request id {request_id!r} apart")
        inbox = self._waiting[request_id] = Inbox()
        try:
            yield inbox
        finally:
            if self._waiting.get(request_id) is inbox:
                del self._waiting[request_id]

    async def exchange(
        self, message: JsonObject, write: Callable[[JsonObject], Awaitable[None]]
    ) -> AsyncGenerator[JsonObject, None]:
        """What the upstream sends about `message` (a transport's `exchange`), its response last: the request is
        awaited here before `write` sends it on the transport's wire."""
        with self.expecting(message.get("id")) as inbox:
            await write(message)
            async with contextlib.aclosing(inbox.messages()) as messages:
                async for inbound in messages:
                    yield inbound

    @property
    def ended(self) -> bool:
        return self._ended is not None

    def raise_if_ended(self) -> None:
        """Raises UpstreamUnavailableError, with the reason the stream ended, if it has."""
        if self._ended is not None:
            raise UpstreamUnavailableError(self._ended)

    def route(self, message: JsonObject) -> JsonObject | None:
        """Pass `message` to the request it is about; returns the reply the transport should send itself, if any."""
        method = message.get("method")
        if not isinstance(method, str):
            inbox = self._take(message.get("id")) if _is_response(message) else None
            if inbox is None:
                logger.debug("upstream message for no waiting request dropped", extra={"gateway_id": message.get("id")})
            else:
                inbox.put(message)
            return None
        if "id" not in message and (is_list_change(method) or method == RESOURCE_UPDATED):
            self._announce(message)
            return None
        if "id" in message and method == "ping":
            return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        inbox = self._inbox(token) if token is not None else self._most_recent()
        if inbox is not None:
            inbox.put(message)
        elif "id" in message:
            refusal = {"code": -32601, "message": f"nothing waits to answer {method}"}
            return {"jsonrpc": "2.0", "id": message["id"], "error": refusal}
        return None

    def route_response(self, message: JsonObject | None) -> None:
        """Pass `message` on if it is a response (an answer that came another way than the stream)."""
        if message is not None and _is_response(message):
            self.route(message)

    async def changes(self) -> AsyncIterator[JsonObject]:
        """The upstream's list-change and resource-update notifications, until the stream ends."""
        while self._ended is None or not self._changes.empty():
            message = await self._changes.get()
            if message is None:
                return
            yield message

    def _announce(self, message: JsonObject | None) -> None:
        if self._changes.qsize() >= MAX_CHANGES:
            self._changes.get_nowait()
        self._changes.put_nowait(message)

    def fail(self, reason: str) -> None:
        """End the stream: every waiting request and every later one fails with `reason` (the first one given)."""
        if self._ended is None:
            self._announce(None)
        self._ended = self._ended or reason
        waiting, self._waiting = self._waiting, {}
        for inbox in waiting.values():
            inbox.fail(self._ended)

    def _inbox(self, request_id: Any) -> Inbox | None:
        return self._waiting.get(request_id) if isinstance(request_id, str | int) else None

    def _take(self, request_id: Any) -> Inbox | None:
        inbox = self._inbox(request_id)
        if inbox is not None:
            del self._waiting[request_id]
        return inbox

    def _most_recent(self) -> Inbox | None:
        return next(reversed(self._waiting.values()), None)


def _is_response(message: JsonObject) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def is_list_change(method: object) -> bool:
    """Whether `method` is a `notifications/{tools,prompts,resources}/list_changed`."""
    return method in LIST_CHANGES


RESOURCE_UPDATED = "notifications/resources/updated"
"""An update of a resource a gateway subscribed to: about no request, like a list change."""
LIST_CHANGES = {f"notifications/{kind}/list_changed": kind for kind in ("tools", "prompts", "resources")}
"""Each list-change notification, and the kind of list it is about."""
