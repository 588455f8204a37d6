"""The MCP endpoint as an ASGI app. Each request's mode (buffered or live: the front door's `asgi.BUFFERED`
extension) is read once into its `Exchange`; a POST body's era and branch are decided once (`branches`), and the
request goes to the one part that answers it: the session REST API, the 2026-07-28 wire or the handshake era's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from stratus.errors import HttpError, InternalError, McpError
from stratus.pipeline.guards import authenticate
from stratus.protocol.jsonrpc import decode, request_id_of
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound
from stratus.request.signal import CancellationSignal
from stratus.server.context import Context
from stratus.server.policy import Authenticator
from stratus.transport.asgi import request_headers, send_response, until_disconnected
from stratus.transport.branches import Branch, Era, branch_for, era_of
from stratus.transport.buffered_limit import buffered_body
from stratus.transport.call_relay import send_collected, stream_call
from stratus.transport.cors import exposing_to, is_preflight, preflight_headers
from stratus.transport.exchange import BodyLimits, Exchange, unread_request_id
from stratus.transport.handshake import SESSION_HEADER, HandshakeTransport
from stratus.transport.http_guards import HostOriginGuard, accepts_event_stream, check_accepts_json, check_json_body
from stratus.transport.http_reply import Reply, error_reply
from stratus.transport.session_api import SessionApi, is_rest_path, rest_route
from stratus.transport.sse import KEEPALIVE_SECONDS
from stratus.transport.stateless import StatelessTransport
from stratus.types import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from stratus.auth.setup import RequestAuthenticator

logger = logging.getLogger("stratus.transport")

_ALLOW_POST = {"allow": "POST"}


class McpEndpoint:
    """Streamable HTTP for both protocol eras on one path: JSON answers, or SSE when a call has something to send
    first (live connections stream it; a buffered front door gets it in one SSE body)."""

    def __init__(
        self,
        stateless: StatelessTransport,
        handshake: HandshakeTransport,
        session_api: SessionApi,
        guard: HostOriginGuard,
        *,
        max_body_bytes: int,
        body_timeout_seconds: float = 30.0,
        max_stream_seconds: float = 840.0,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        max_response_bytes: int = 0,
        authenticator: RequestAuthenticator | None = None,
        server_authenticators: Sequence[Authenticator] = (),
        offers_get_stream: Callable[[], bool] = lambda: True,
    ) -> None:
        self.stateless = stateless
        self.authenticator = authenticator
        self.server_authenticators = tuple(server_authenticators)
        """The server's own authenticators (`McpServer(authenticators=...)`), run here for every request after the
        deployment's (`STRATUS_AUTH_MODE`), so sessions, tasks, streams and quotas are bound to whom they establish."""
        self._authenticates = authenticator is not None or bool(self.server_authenticators)
        self.handshake = handshake
        self.session_api = session_api
        self.guard = guard
        self.limits = BodyLimits(max_body_bytes, body_timeout_seconds)
        self.max_stream_seconds = max_stream_seconds
        self.keepalive_seconds = keepalive_seconds
        self.max_response_bytes = max_response_bytes
        """The bound of a buffered Lambda answer; 0: none. Streamed answers are never bound."""
        self.offers_get_stream = offers_get_stream
        """Whether the server sends notifications outside calls, and so serves a session's GET stream (asked per
        request: a server may register resources after its app is built)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = request_headers(scope)
        exchange = Exchange(scope, receive, send, headers, self.limits, self.guard.trust_request_context_header)
        # A buffered answer is one reply sent at the end: only a live connection needs watching.
        response = None if exchange.buffered else _Response(send)
        exchange.send = response or send
        try:
            self.guard.check(scope, headers)
            if "origin" in headers:  # a browser; the guard allowed its origin
                if is_preflight(scope, headers):
                    await send_response(exchange.send, 204, b"", preflight_headers(headers))
                    return
                exchange.send = exposing_to(headers["origin"], exchange.send)
            reply = await self._route(exchange)
            if reply is None:
                if response is not None:
                    await response.complete()  # streamed: already sent, and ended
                return
        except McpError as refused:  # refused before a JSON-RPC message was read: its id, when the body has one
            reply = error_reply(await unread_request_id(exchange), refused)
        except Exception:
            reference = secrets.token_hex(8)
            logger.exception("unhandled error in the MCP endpoint", extra={"error_ref": reference})
            reply = error_reply(None, InternalError(f"Internal error (reference {reference})"))
        if response is not None and response.started:
            # A stream failed after its headers: too late for an error status, so end it.
            await response.complete()
            return
        await _send(reply, exchange.send, self.max_response_bytes if exchange.buffered else 0)

    async def _route(self, exchange: Exchange) -> Reply | None:
        method = exchange.method
        if is_rest_path(exchange.path):
            route = rest_route(method, exchange.path)
            if self._authenticates:
                await self._authenticate(exchange)
            return await self.session_api.serve(route, exchange)
        if method not in ("POST", "DELETE", "GET") or (method != "POST" and not exchange.headers.get(SESSION_HEADER)):
            raise HttpError(405, "Method Not Allowed: send JSON-RPC messages with POST", headers=_ALLOW_POST)
        if self._authenticates:
            await self._authenticate(exchange)
        if method == "POST":
            return await self._post(exchange)
        if method == "DELETE":
            return await self.handshake.delete(exchange.headers, exchange.principal)
        # a session's GET stream, or the resumption of one of its streams
        if not exchange.headers.get("last-event-id") and not self.offers_get_stream():
            raise HttpError(
                405,
                "Method Not Allowed: this server sends no notifications outside calls (its lists are fixed and "
                "it has no resources to subscribe to), so it offers no GET stream",
                headers=_ALLOW_POST,
            )
        return await self.handshake.stream(exchange, max_seconds=self.max_stream_seconds)

    async def _authenticate(self, exchange: Exchange) -> None:
        """Who sent the request: the deployment's authenticator, then each of the server's in order (each may
        establish the user or raise to deny). They see the HTTP request; the body is not read yet, so `ctx.method`
        is empty."""
        headers, scope = exchange.headers, exchange.scope
        principal = await self.authenticator.authenticate(headers, scope) if self.authenticator else None
        if self.server_authenticators:
            context = Context(
                request_id="", method="", protocol_version="", request=exchange.http_request(), user=principal
            )
            principal = (await authenticate(context, self.server_authenticators)).user
        exchange.principal = principal

    async def _post(self, exchange: Exchange) -> Reply | None:
        headers = exchange.headers
        check_json_body(headers)
        check_accepts_json(headers)
        body = decode(await exchange.body())
        era = era_of(body, headers)
        branch = branch_for(
            era, body, buffered=exchange.buffered, accepts_sse=accepts_event_stream(headers.get("accept"))
        )
        if exchange.buffered:
            return await self._buffered(era, branch, body, exchange)
        disconnected = CancellationSignal()
        if era != "2026-07-28":  # only a 2026-07-28 call is cancelled by its client leaving; others may resume
            return await self._live(era, branch, body, exchange, disconnected)
        watcher = asyncio.ensure_future(_cancel_on_disconnect(exchange.receive, disconnected))
        try:
            return await self._live(era, branch, body, exchange, disconnected)
        finally:
            watcher.cancel()

    async def _live(
        self, era: Era, branch: Branch, body: Any, exchange: Exchange, disconnected: CancellationSignal
    ) -> Reply | None:
        if branch == "answer":
            return await self._answer(era, body, exchange, exchange.http_request(disconnected=disconnected))
        if branch == "watch":
            http = exchange.http_request(disconnected=disconnected)
            return await self._stream(self._answer(era, body, exchange, http), None, exchange)
        http = exchange.http_request(disconnected=disconnected, outbound=Outbound())
        return await self._stream(self._answer(era, body, exchange, http), http.outbound, exchange)

    async def _buffered(self, era: Era, branch: Branch, body: Any, exchange: Exchange) -> Reply | None:
        if branch == "answer":
            return await self._answer(era, body, exchange, exchange.http_request())
        outbound = Outbound(buffered=True)
        http = exchange.http_request(outbound=outbound)
        if branch == "relay":
            relayed = await self.handshake.relay(body, exchange.headers, http, exchange.principal)
            if relayed is not None:
                refused = await self.handshake.follow_relayed(relayed, exchange, max_seconds=self.max_stream_seconds)
                return error_reply(request_id_of(body), refused) if refused else None
        reply = await self._answer(era, body, exchange, http)
        if not outbound.messages or reply.payload is None:
            return reply
        return await send_collected(reply, outbound, exchange.send)

    async def _stream(self, answer: Any, outbound: Outbound | None, exchange: Exchange) -> Reply | None:
        return await stream_call(
            answer,
            outbound,
            exchange.send,
            max_seconds=self.max_stream_seconds,
            keepalive_seconds=self.keepalive_seconds,
        )

    async def _answer(self, era: Era, body: Any, exchange: Exchange, http: HttpRequest) -> Reply:
        principal = exchange.principal
        if era == "rest":  # the session REST API: answered as JSON, never streamed
            return await self.session_api.call(body, http._replace(outbound=None), principal)
        if era == "2026-07-28":
            return await self.stateless.post(body, exchange.headers, http, principal)
        return await self.handshake.post(body, exchange.headers, http, principal)


class _Response:
    """The ASGI `send` of one request, watched: whether the response started and ended, so that a stream that
    fails midway is still ended instead of left open (or answered a second time)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.ended = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.ended = True
        await self._send(message)

    async def complete(self) -> None:
        """End a started response that did not end (a no-op once the client has gone)."""
        if self.started and not self.ended:
            with contextlib.suppress(OSError):
                await self({"type": "http.response.body", "body": b"", "more_body": False})


async def _cancel_on_disconnect(receive: Receive, disconnected: CancellationSignal) -> None:
    """Wait for the server to report the client gone, and cancel what the request is doing."""
    await until_disconnected(receive)
    disconnected.cancel("the client disconnected")


async def _send(reply: Reply, send: Send, max_response_bytes: int) -> None:
    if reply.payload is None:
        await send_response(send, reply.status, b"", reply.headers)
        return
    reply, body = buffered_body(reply, max_response_bytes)
    await send_response(send, reply.status, body, {**reply.headers, "content-type": "application/json"})
