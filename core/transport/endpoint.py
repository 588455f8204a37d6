"""The MCP endpoint as an ASGI app: HTTP checks, then the body goes to the 2026-07-28 (stateless) wire or the
handshake-era one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from stratus.errors import HttpError, InternalError, McpError
from stratus.pipeline.guards import authenticate
from stratus.protocol import versions
from stratus.protocol.capabilities import notifies_outside_calls
from stratus.protocol.dispatch import Dispatcher
from stratus.protocol.jsonrpc import decode, request_id_of
from stratus.request.aws_context import authorizer_claims, request_context
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound
from stratus.request.signal import CancellationSignal
from stratus.server.context import Context
from stratus.server.policy import Authenticator
from stratus.server.principal import Principal
from stratus.transport.asgi import Headers, request_headers, route_path, send_response, until_disconnected
from stratus.transport.buffered_limit import buffered_body
from stratus.transport.call_relay import CallRelay
from stratus.transport.cors import exposing_to, is_preflight, preflight_headers
from stratus.transport.handshake import SESSION_HEADER, HandshakeTransport
from stratus.transport.http_guards import HostOriginGuard, accepts_event_stream, check_accepts_json, check_json_body
from stratus.transport.http_reply import Reply, error_reply
from stratus.transport.session_api import SessionApi, is_rest_call
from stratus.transport.sse import KEEPALIVE_SECONDS, SseWriter
from stratus.transport.stateless import handle_stateless, request_meta_version
from stratus.types import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from stratus.auth.setup import RequestAuthenticator

logger = logging.getLogger("stratus.transport")

_ALLOW_POST = {"allow": "POST"}
REST_PREFIXES = ("/session/", "/events/")
"""Paths of the session REST API besides `POST /session` (served by this endpoint, which also guards them)."""


class McpEndpoint:
    """Streamable HTTP for both protocol eras on one path: JSON answers, or SSE when a call has something to send
    first (under uvicorn; behind Mangum every answer is JSON)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        handshake: HandshakeTransport,
        guard: HostOriginGuard,
        *,
        max_body_bytes: int,
        body_timeout_seconds: float = 30.0,
        max_stream_seconds: float = 840.0,
        keepalive_seconds: float = KEEPALIVE_SECONDS,
        max_response_bytes: int = 0,
        authenticator: RequestAuthenticator | None = None,
        server_authenticators: Sequence[Authenticator] = (),
    ) -> None:
        self.dispatcher = dispatcher
        self.authenticator = authenticator
        self.server_authenticators = tuple(server_authenticators)
        """The server's own authenticators (`McpServer(authenticators=...)`), run here for every request after the
        deployment's (`STRATUS_AUTH_MODE`), so sessions, tasks, streams and quotas are bound to whom they establish."""
        self._authenticates = authenticator is not None or bool(self.server_authenticators)
        self.handshake = handshake
        self.session_api = SessionApi(self.handshake)
        self.guard = guard
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.max_stream_seconds = max_stream_seconds
        self.keepalive_seconds = keepalive_seconds
        self.max_response_bytes = max_response_bytes
        """The bound of a buffered Lambda answer (behind Mangum); 0: none. Streamed answers are never bound."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = request_headers(scope)
        # Behind Mangum the answer is one buffered reply sent at the end: only a live connection needs watching.
        response = None if "aws.event" in scope else _Response(send)
        send = response or send
        try:
            self.guard.check(scope, headers)
            if "origin" in headers:  # a browser; the guard allowed its origin
                if is_preflight(scope, headers):
                    await send_response(send, 204, b"", preflight_headers(headers))
                    return
                send = exposing_to(headers["origin"], send)
            reply = await self._route(scope, receive, send, headers)
            if reply is None:
                if response is not None:
                    await response.complete()  # streamed: already sent, and ended
                return
        except McpError as refused:  # refused before a JSON-RPC message was read: no id to echo
            reply = error_reply(None, refused)
        except Exception:
            reference = secrets.token_hex(8)
            logger.exception("unhandled error in the MCP endpoint", extra={"error_ref": reference})
            reply = error_reply(None, InternalError(f"Internal error (reference {reference})"))
        if response is not None and response.started:
            # A stream failed after its headers: too late for an error status, so end it.
            await response.complete()
            return
        await _send(reply, send, self.max_response_bytes if "aws.event" in scope else 0)

    async def _route(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> Reply | None:
        method = scope["method"]
        path = route_path(scope).rstrip("/")
        if path == "/session" or path.startswith(REST_PREFIXES):
            return await self._rest(scope, receive, send, headers, path)
        if method not in ("POST", "DELETE", "GET") or (method != "POST" and not headers.get(SESSION_HEADER)):
            raise HttpError(405, "Method Not Allowed: send JSON-RPC messages with POST", headers=_ALLOW_POST)
        principal = await self._authenticate(scope, headers) if self._authenticates else None
        if method == "GET":  # a session's GET stream, or the resumption of one of its streams
            if not headers.get("last-event-id") and not notifies_outside_calls(self.dispatcher.server):
                raise HttpError(
                    405,
                    "Method Not Allowed: this server sends no notifications outside calls (its lists are fixed and "
                    "it has no resources to subscribe to), so it offers no GET stream",
                    headers=_ALLOW_POST,
                )
            buffered = "aws.event" in scope  # a buffered Lambda response: sent whole, so only a poll can be served
            return await self.handshake.stream(
                headers, principal, send, receive, max_seconds=self.max_stream_seconds, buffered=buffered
            )
        if method == "POST":
            streams = accepts_event_stream(headers.get("accept"))
            if "aws.event" in scope:  # behind API Gateway: the answer is sent whole, with no client-gone signal
                # Progress and log lines before the result go in it, with the result.
                http = self._request(scope, headers, outbound=Outbound(buffered=True) if streams else None)
                return await self._post(receive, headers, http, principal, send)
            outbound = Outbound() if streams else None
            http = self._request(scope, headers, disconnected=CancellationSignal(), outbound=outbound)
            return await self._post(receive, headers, http, principal, send)
        return await self.handshake.delete(headers, principal)

    async def _authenticate(self, scope: Scope, headers: Headers) -> Principal | None:
        """Who sent the request: the deployment's authenticator, then each of the server's in order (each may
        establish the user or raise to deny). They see the HTTP request; the body is not read yet, so `ctx.method`
        is empty."""
        principal = await self.authenticator.authenticate(headers, scope) if self.authenticator else None
        if not self.server_authenticators:
            return principal
        context = Context(
            request_id="", method="", protocol_version="", request=self._request(scope, headers), user=principal
        )
        return (await authenticate(context, self.server_authenticators)).user

    def _request(
        self,
        scope: Scope,
        headers: Headers,
        *,
        disconnected: CancellationSignal | None = None,
        outbound: Outbound | None = None,
    ) -> HttpRequest:
        """What a handler may read of the request: headers, the Lambda event and context, the authorizer's claims."""
        event = scope.get("aws.event")
        context = request_context(scope, headers, trust_header=self.guard.trust_request_context_header)
        return HttpRequest(
            scope["method"],
            scope.get("path", ""),
            headers,
            lambda_context=scope.get("aws.context") if "aws.event" in scope else None,
            disconnected=disconnected,
            outbound=outbound,
            lambda_event=event if isinstance(event, dict) else None,
            authorizer_claims=authorizer_claims(context),
        )

    async def _rest(self, scope: Scope, receive: Receive, send: Send, headers: Headers, path: str) -> Reply | None:
        """The session REST API's routes (its `POST /mcp` calls arrive through `_post`)."""
        method = scope["method"]
        kind, _, session_id = path[1:].partition("/")
        session_id, _, tail = session_id.partition("/")
        if tail not in ("", "responses") or (tail and kind != "session"):
            raise HttpError(404, "Not Found")
        allowed = "POST" if not session_id or tail else ("DELETE" if kind == "session" else "GET")
        if method != allowed:
            raise HttpError(405, f"Method Not Allowed: use {allowed}", headers={"allow": allowed})
        principal = await self._authenticate(scope, headers) if self._authenticates else None
        if not session_id:
            return await self.session_api.create(await self._rest_body(scope, receive, headers), principal)
        if tail:  # the client's answer to a request a REST call sent it
            http = HttpRequest(method, scope.get("path", ""), headers, scope.get("aws.context"))
            return await self.session_api.respond(
                session_id, await self._rest_body(scope, receive, headers), http, principal
            )
        if kind == "session":
            return await self.session_api.delete(session_id, principal)
        return await self.session_api.events(
            session_id,
            principal,
            send,
            receive,
            last_event_id=headers.get("last-event-id"),
            max_seconds=self.max_stream_seconds,
            buffered="aws.event" in scope,
        )

    async def _rest_body(self, scope: Scope, receive: Receive, headers: Headers) -> Any:
        """A REST request's JSON body, {} when it has none (JSON only, within the body limit)."""
        raw = await self._read_body(receive, headers, live="aws.event" not in scope)
        if not raw:  # whitespace alone is no JSON text: a 400, like any other body that does not parse
            return {}
        check_json_body(headers)
        return decode(raw)

    async def _post(
        self,
        receive: Receive,
        headers: Headers,
        http: HttpRequest,
        principal: Principal | None,
        send: Send | None = None,
    ) -> Reply | None:
        check_json_body(headers)
        check_accepts_json(headers)
        body = decode(await self._read_body(receive, headers, live=http.disconnected is not None))
        if http.disconnected is None:  # a buffered front door: nothing signals the client gone
            return await self._buffered(body, headers, http, principal, send, receive)
        if not _is_stateless(body, headers):
            # Only a 2026-07-28 call is cancelled by its client leaving; a handshake-era client may resume.
            return await self._answer_or_stream(body, headers, http, principal, send)
        watcher = asyncio.ensure_future(_cancel_on_disconnect(receive, http.disconnected))
        try:
            return await self._answer_or_stream(body, headers, http, principal, send)
        finally:
            watcher.cancel()

    async def _buffered(
        self,
        body: Any,
        headers: Headers,
        http: HttpRequest,
        principal: Principal | None,
        send: Send | None,
        receive: Receive,
    ) -> Reply | None:
        """A buffered front door's answer, sent whole once it is complete: plain JSON, or, when the call sent
        something first (progress, log lines), those and its result as one SSE body. A call that may ask its client
        something mid-call runs in the task worker instead, and its stream is relayed from the store."""
        outbound = http.outbound
        if outbound is None or send is None or not _streamable(body) or not _may_send_before_answer(body, headers):
            # Nothing will be sent first (the context asks for a progress token or a log level before it sends):
            # the answer as it is, without copying the request to drop its queue.
            return await self._answer(body, headers, http, principal)
        relayed = await self.handshake.relay(body, headers, http, principal)
        if relayed is not None:
            session, (key, token) = relayed
            refused = await self.handshake.session_streams.resume(
                session,
                key,
                token,
                (0, 0),
                send,
                receive,
                max_seconds=self.max_stream_seconds,
                buffered=True,
                until_asked=True,
            )
            return error_reply(request_id_of(body), refused) if refused else None
        reply = await self._answer(body, headers, http, principal)
        if not outbound.messages or reply.payload is None:
            return reply
        writer = await SseWriter.start(send)
        while outbound.messages:
            event_id, message = outbound.messages.popleft()
            await writer.event(message, event_id=event_id)
        await writer.event(reply.payload)
        await writer.close()
        return None

    async def _answer_or_stream(
        self, body: Any, headers: Headers, http: HttpRequest, principal: Principal | None, send: Send | None
    ) -> Reply | None:
        if http.outbound is None or send is None or not _streamable(body):
            return await self._answer(body, headers, http, principal)
        if not _may_send_before_answer(body, headers):
            # Nothing to relay: the call runs without an outbound queue, and only a long silence opens the stream.
            return await self._stream(self._answer(body, headers, http._replace(outbound=None), principal), None, send)
        return await self._stream(self._answer(body, headers, http, principal), http.outbound, send)

    async def _stream(self, answer: Awaitable[Reply], outbound: Outbound | None, send: Send) -> Reply | None:
        """Run the call while relaying what it sends before its result; None once the answer went out as SSE.

        Until the call first sends something, or has been silent for `keepalive_seconds`, nothing is written: a
        quick call that sends nothing answers with its plain JSON reply (and HTTP status) as usual. A silent one
        gets an SSE stream of keep-alive comments, then its answer as the stream's one event, so no front door cuts
        it for idling. On a resumable (handshake-era) stream every event is also logged, and a client that goes
        away does not stop the call: it can resume with `Last-Event-ID`.
        """
        outbound = outbound or Outbound()
        work = asyncio.ensure_future(answer)
        writer: CallRelay | None = None
        loop = asyncio.get_running_loop()
        cut_at = loop.time() + self.max_stream_seconds
        interval = self.keepalive_seconds
        try:
            while True:
                if writer is not None and writer.resumable and not writer.gone and loop.time() >= cut_at:
                    # Long enough for this response: end it cleanly; the client resumes from the log. A stream that
                    # has carried no event id yet (before 2025-11-25 there is no priming event) is not cut: its
                    # client could not resume it, and would lose the answer.
                    await writer.close()
                    writer.gone = True
                cuttable = writer is not None and writer.resumable and not writer.gone
                wait = min(interval, max(0.0, cut_at - loop.time())) if cuttable else interval
                waiting: set[asyncio.Future[Any]] = {work, outbound.arrival()}
                done, _ = await asyncio.wait(waiting, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                if outbound.messages:
                    writer = writer or await CallRelay.open(send, outbound)
                    await writer.event(*outbound.messages.popleft())
                    continue
                if work in done:
                    reply = work.result()
                    if writer is None:
                        return reply
                    while outbound.messages:
                        await writer.event(*outbound.messages.popleft())
                    if reply.payload is not None:
                        await writer.event(await outbound.record_final(reply.payload), reply.payload)
                    await writer.close()
                    return None
                writer = writer or await CallRelay.open(send, outbound)
                await writer.comment("keep-alive")
        finally:
            if not work.done():
                work.cancel()

    async def _answer(self, body: Any, headers: Headers, http: HttpRequest, principal: Principal | None) -> Reply:
        if is_rest_call(body):  # the session REST API: answered as JSON, never streamed
            return await self.session_api.call(body, http._replace(outbound=None), principal)
        if _is_stateless(body, headers):
            return await handle_stateless(body, headers, self.dispatcher, http, principal)
        return await self.handshake.post(body, headers, http, principal)

    async def _read_body(self, receive: Receive, headers: Headers, *, live: bool) -> bytes:
        """The request body, at most `max_body_bytes`. On a `live` connection (uvicorn) one deadline covers the
        whole body, so a client trickling a byte at a time cannot hold it; a Lambda event (Mangum) carries the
        whole body already and needs none."""
        declared = headers.get("content-length")
        # `isdigit` alone takes `²`, which int() refuses; a length of 19 digits or more is past any body limit.
        if (
            declared
            and declared.isascii()
            and declared.isdigit()
            and (len(declared) > 18 or int(declared) > self.max_body_bytes)
        ):
            raise _too_large(self.max_body_bytes)
        if not live:
            return await self._read_chunks(receive)
        try:
            async with asyncio.timeout(self.body_timeout_seconds):
                return await self._read_chunks(receive)
        except TimeoutError:
            raise HttpError(
                408,
                f"Request Timeout: the body did not arrive within {self.body_timeout_seconds:g} s "
                "(STRATUS_BODY_TIMEOUT_SECONDS)",
                headers={"connection": "close"},
            ) from None

    async def _read_chunks(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _too_large(self.max_body_bytes)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


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


def _may_send_before_answer(body: Any, headers: Headers) -> bool:
    """Whether a call can send anything on its response before the answer. A handshake-era call can (logs,
    progress, requests to the client); a 2026-07-28 call only when it asked for progress or log messages
    (`progressToken`, the log-level `_meta` key) or listens for notifications."""
    if not isinstance(body, dict) or not _is_stateless(body, headers) or body.get("method") == "subscriptions/listen":
        return True
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ("progressToken" in meta or versions.LOG_LEVEL_META in meta)


def _streamable(body: Any) -> bool:
    """Whether a body's answer may be SSE: one JSON-RPC message, not a batch, a REST call or an `initialize` (whose
    answer carries the new session's id in a header, which a stream's headers, sent first, could not carry)."""
    return not isinstance(body, list) and not is_rest_call(body) and not _opens(body)


def _opens(body: Any) -> bool:
    """Whether the body is a handshake-era `initialize` request."""
    return isinstance(body, dict) and body.get("method") == "initialize" and "id" in body


def _is_stateless(body: Any, headers: Headers) -> bool:
    return request_meta_version(body) is not None or headers.get("mcp-protocol-version") in versions.STATELESS_VERSIONS


async def _cancel_on_disconnect(receive: Receive, disconnected: CancellationSignal) -> None:
    """Wait for the server to report the client gone, and cancel what the request is doing."""
    await until_disconnected(receive)
    disconnected.cancel("the client disconnected")


def _too_large(limit: int) -> HttpError:
    return HttpError(413, f"Payload Too Large: the body limit is {limit} bytes (STRATUS_MAX_BODY_BYTES)")


async def _send(reply: Reply, send: Send, max_response_bytes: int) -> None:
    if reply.payload is None:
        await send_response(send, reply.status, b"", reply.headers)
        return
    reply, body = buffered_body(reply, max_response_bytes)
    await send_response(send, reply.status, body, {**reply.headers, "content-type": "application/json"})
