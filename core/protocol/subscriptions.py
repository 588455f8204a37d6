"""`subscriptions/listen` (2026-07-28): a long-lived POST whose SSE response carries the notifications the client
opted in to, published on any container (see `stratus.protocol.notifications`).

The acknowledgment comes first, with the filter the server agreed to ("the subset the server agreed to honor", as
the spec has it): only kinds the server serves, and only resource URIs the caller could read (a resource or
template produces it and its access lets the caller in, as for `resources/read`); the others are left out of it,
so no one hears when a resource they may not read changes. Every message carries the subscription's
id (the request's JSON-RPC id) in `_meta`. The stream ends when the client closes it, or gracefully at the
stream limit with a `complete` result, after which the client listens again.

The stream is held open while the client listens, and billed so on Lambda: the Python SDK (2.3) ends its loop at a
graceful close and leaves listening again to the application ("no replay: re-listen and refetch"), so a listen
ended early would silently stop the notifications of every client that does not loop. Through a buffered front
door, which sends an answer whole once it ends, a listen acknowledges and closes at once: held, it would bill the
wait and still deliver its acknowledgment late. Listening needs a streaming front door (docs/deploy.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from stratus.errors import InvalidParamsError, InvalidRequestError
from stratus.protocol.notifications import NotificationFollower
from stratus.server.hooks import ServerHooks
from stratus.server.server import McpServer

if TYPE_CHECKING:
    from stratus.protocol.call import Call
    from stratus.request.http import HttpRequest
    from stratus.request.outbound import Outbound
    from stratus.resilience.stream_slots import StreamSlots
    from stratus.stores.base import EventLogStore

SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"
KEEPALIVE_SECONDS = 15.0
LIST_FLAGS = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}


def agreed_filter(requested: Any, server: McpServer) -> dict[str, Any]:
    """The part of the client's filter this server honours: only kinds it serves.

    Raises:
        InvalidParamsError: the filter is not an object of booleans and a list of URIs.
    """
    if not isinstance(requested, dict):
        raise InvalidParamsError("Invalid params: subscriptions/listen needs a notifications filter object")
    serves = {
        "toolsListChanged": bool(server.tools),
        "promptsListChanged": bool(server.prompts),
        "resourcesListChanged": bool(server.resources or server.templates),
    }
    agreed: dict[str, Any] = {}
    for flag, served in serves.items():
        value = requested.get(flag, False)
        if not isinstance(value, bool):
            raise InvalidParamsError(f"Invalid params: notifications.{flag} must be a boolean")
        if value and served:
            agreed[flag] = True
    uris = requested.get("resourceSubscriptions", [])
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        raise InvalidParamsError("Invalid params: notifications.resourceSubscriptions must be a list of URIs")
    if uris and serves["resourcesListChanged"]:
        agreed["resourceSubscriptions"] = list(dict.fromkeys(uris))
    return agreed


def wanted(agreed: dict[str, Any], message: dict[str, Any]) -> bool:
    """Whether a published notification belongs on a subscription with this filter."""
    method = message.get("method")
    if method == "notifications/resources/updated":
        return message.get("params", {}).get("uri") in agreed.get("resourceSubscriptions", ())
    return any(agreed.get(flag) and method == listed for flag, listed in LIST_FLAGS.items())


async def listen(
    request_id: str | int,
    params: dict[str, Any],
    http: HttpRequest | None,
    server: McpServer,
    hooks: ServerHooks,
    events: EventLogStore,
    slots: StreamSlots,
    readable: Callable[[Sequence[str]], Awaitable[list[str]]],
    *,
    principal: str | None,
    max_seconds: float,
) -> dict[str, Any]:
    """Serve one subscription on the call's stream; the graceful-closure result once it ends. `readable` keeps the
    filter's resource URIs the caller could read.

    Raises:
        InvalidRequestError: the response cannot stream (JSON only, or a buffered deployment).
        TooManyStreamsError: the principal or the process holds its maximum of open streams (before anything
            is sent, so the refusal is plain JSON with its HTTP status).
        McpError: one of the server's authenticators refused the request.
    """
    if http is None or http.outbound is None:
        raise InvalidRequestError(
            "Invalid request: subscriptions/listen needs a streamed response: accept text/event-stream, on a "
            "deployment that streams"
        )
    agreed = agreed_filter(params.get("notifications"), server)
    if "resourceSubscriptions" in agreed:
        if kept := await readable(agreed["resourceSubscriptions"]):
            agreed["resourceSubscriptions"] = kept
        else:
            del agreed["resourceSubscriptions"]
    uris: list[str] = agreed.get("resourceSubscriptions", [])
    # Together, so a gateway asks its upstream for all of them at once; each one passed on is withdrawn at the end.
    outcomes = await asyncio.gather(*(hooks.subscribed(uri) for uri in uris), return_exceptions=True)
    try:
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        with slots.take(None, principal):  # its place is freed however the subscription ends
            return await _follow(request_id, agreed, http, http.outbound, events, max_seconds)
    finally:
        for uri, outcome in zip(uris, outcomes, strict=True):
            if not isinstance(outcome, BaseException):
                await hooks.unsubscribed(uri)


async def _follow(
    request_id: str | int,
    agreed: dict[str, Any],
    http: HttpRequest,
    outbound: Outbound,
    events: EventLogStore,
    max_seconds: float,
) -> dict[str, Any]:
    """Acknowledge, then relay what the filter agreed to until the client leaves or `max_seconds` pass."""
    meta = {SUBSCRIPTION_ID_META: request_id}
    follower = await NotificationFollower.from_now(events)
    await outbound.notify("notifications/subscriptions/acknowledged", {"_meta": meta, "notifications": agreed})

    async def relay() -> None:
        loop = asyncio.get_running_loop()
        # A buffered answer arrives whole once it ends: holding it would bill the wait and still deliver the
        # acknowledgment late, so there a listen acknowledges and closes at once.
        deadline = loop.time() + (0.0 if outbound.buffered else max_seconds)
        while (left := deadline - loop.time()) > 0:
            for notice in await follower.next(min(KEEPALIVE_SECONDS, left)):
                if wanted(agreed, notice.message):
                    await outbound.notify(notice.message["method"], {**notice.message["params"], "_meta": meta})

    following = asyncio.ensure_future(relay())
    gone = asyncio.ensure_future(http.disconnected.wait()) if http.disconnected else None
    try:
        await asyncio.wait({following} | ({gone} if gone else set()), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (following, gone):
            if task is not None:
                task.cancel()
    error = following.exception() if following.done() and not following.cancelled() else None
    if error is not None:
        raise error
    return {"_meta": meta}


class Listener:
    """`subscriptions/listen` of one server: the method the dispatcher's 2026-07-28 table names."""

    def __init__(
        self,
        server: McpServer,
        hooks: ServerHooks,
        events: EventLogStore,
        slots: StreamSlots,
        readable: Callable[[Call, Sequence[str]], Awaitable[list[str]]],
        *,
        max_seconds: float,
    ) -> None:
        self.server = server
        self.hooks = hooks
        self.events = events
        self.slots = slots
        self.readable = readable
        """The filter's resource URIs the caller could read (`Reads.readable`)."""
        self.max_seconds = max_seconds

    async def __call__(self, call: Call) -> dict[str, Any]:
        return await listen(
            call.request.id,
            call.params,
            call.http,
            self.server,
            self.hooks,
            self.events,
            self.slots,
            lambda uris: self.readable(call, uris),
            principal=call.principal_key,
            max_seconds=self.max_seconds,
        )
