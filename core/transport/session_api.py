"""The session REST + SSE API (for clients that do not speak JSON-RPC), over the same sessions, stores and dispatcher
as the MCP endpoint.

    POST   /session              [{"capabilities"}] -> {"sessionId", "message"}
    POST   /mcp                  {"sessionId", "method", "params"} -> {"sessionId", "result"} or {"sessionId", "error"}
    GET    /events/{sessionId}   SSE, a poll: {"type": "connected"}, {"type": "notification", "data"},
                                 {"type": "request", "data"}, then {"type": "heartbeat"} with the id to come back
                                 with (`Last-Event-ID`) and a `retry:`; {"type": "closed"} once the session ended
    POST   /session/{sessionId}/responses  {"id", "result"} or {"id", "error"} -> {"sessionId", "message"}
    DELETE /session/{sessionId}  -> {"message"}

A REST call is a handshake-era request of that session, so sessions, rate limits and notifications work across
containers exactly as for MCP clients. What a call sends its client while it runs (progress, log messages,
elicitation and sampling requests) goes through the server-wide notification log addressed to the session, so it
arrives, in order, on the session's `/events` streams wherever they are open; the client answers a request with
`POST /session/{id}/responses`, on any container, and the call (waiting on the shared pending-request store)
continues. A session declares what it can answer when it is opened (`{"capabilities": {"elicitation": {}}}`);
without that, a tool that asks gets the usual missing-capability error instead of waiting. DELETE ends the
session's open `/events` streams at once, on every container, each with a `{"type": "closed"}` event.

An `/events` stream is a poll (`stratus.transport.polling`): it relays what happened since its `Last-Event-ID` (or
from now), holds for `STRATUS_POLL_HOLD_SECONDS` while nothing happens, and ends with a heartbeat that carries the id
and `retry:` (`STRATUS_POLL_RETRY_SECONDS`); a browser's EventSource comes back by itself with that id.

Unlike JSON-RPC, failures carry their HTTP status: 404 for an unknown
session or method, 400 for bad input, 429 (with Retry-After) when a rate limit refuses the call, 503 naming the
limit when the deployment holds its maximum of sessions (or the setting, when the caller holds its own quota), 413
naming STRATUS_MAX_RECORD_BYTES when the session's record would be larger than the store keeps (its capabilities
at POST /session, its subscriptions later). A REST call is a request of an open session, so the JSON-RPC wire's
session lifecycle (`initialize`, `notifications/initialized`) and other notifications are refused with 400:
`initialize` would open a session whose id no one is told, holding a place until it expires.
An `/events` stream past a cap on open streams is refused with 429 (503 for the process's cap) and Retry-After,
naming the setting that raises the cap.
"""

import math
import secrets
from typing import Any, NamedTuple

from stratus.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RATE_LIMITED,
    HttpError,
    RecordTooLargeError,
    TooManySessionsError,
)
from stratus.protocol import versions
from stratus.protocol.notifications import LoggedNotification, NotificationLog, Position
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound
from stratus.server.principal import Principal
from stratus.stores.base import SessionStore
from stratus.stores.records import SessionRecord
from stratus.transport.exchange import Exchange
from stratus.transport.handshake import SESSION_HEADER, HandshakeTransport
from stratus.transport.http_reply import Reply
from stratus.transport.session_stream import GET_STREAM_PREFIX, SessionStreams, get_event_id
from stratus.transport.sse import SseWriter

HEARTBEAT_SECONDS = 30.0
REST_PREFIXES = ("/session/", "/events/")
"""Paths of the session REST API besides `POST /session` (served by the MCP endpoint, which also guards them)."""
_STATUS_BY_CODE = {METHOD_NOT_FOUND: 404, INTERNAL_ERROR: 500}


def rest_status(code: Any, data: Any = None) -> int:
    """The HTTP status of a JSON-RPC error: Stratus's own -31xxx codes carry theirs (-31429 is 429), and a record
    past the store's limit (`data.setting` is STRATUS_MAX_RECORD_BYTES) is 413."""
    if isinstance(code, int) and -31600 < code < -31399:
        return -code - 31000
    if isinstance(data, dict) and data.get("setting") == RecordTooLargeError.SETTING:
        return 413
    return _STATUS_BY_CODE.get(code, 400)


def _not_a_rest_call(method: str) -> str | None:
    """Why `method` cannot be a REST call, or None when it can: a REST call is a request of an open session."""
    if method in ("initialize", "notifications/initialized"):
        return (
            f"Bad Request: {method} is not a REST call: sessions are opened with POST /session, which answers the "
            "new session's id"
        )
    if method.startswith("notifications/"):
        return f"Bad Request: {method} is a notification; a REST call is a request (POST /mcp with sessionId, method)"
    return None


class RestRoute(NamedTuple):
    """A REST request's route: what it asks (`create`, `respond`, `delete` or `events`) and of which session."""

    action: str
    session_id: str = ""


def is_rest_path(path: str) -> bool:
    """Whether a path (below the app's root, without a trailing slash) is one of the REST API's own routes."""
    return path == "/session" or path.startswith(REST_PREFIXES)


def rest_route(method: str, path: str) -> RestRoute:
    """The route of a REST path.

    Raises:
        HttpError: 404 for a path the API does not serve, 405 (naming the method to use) for a wrong method.
    """
    kind, _, session_id = path[1:].partition("/")
    session_id, _, tail = session_id.partition("/")
    if tail not in ("", "responses") or (tail and kind != "session"):
        raise HttpError(404, "Not Found")
    allowed = "POST" if not session_id or tail else ("DELETE" if kind == "session" else "GET")
    if method != allowed:
        raise HttpError(405, f"Method Not Allowed: use {allowed}", headers={"allow": allowed})
    if not session_id:
        return RestRoute("create")
    if tail:
        return RestRoute("respond", session_id)
    return RestRoute("delete" if kind == "session" else "events", session_id)


def is_rest_call(body: Any) -> bool:
    """Whether a body is for the REST API: an object without `jsonrpc` that names a session or has no `id`.

    A JSON-RPC message carries `jsonrpc` and, when it expects an answer, an `id`; one missing `jsonrpc` but carrying
    an `id` is still answered as JSON-RPC (echoing that id). Anything else without `jsonrpc` (`{method, params}`
    with the session left out, say) is a REST call, so it gets a REST answer.
    """
    return isinstance(body, dict) and "jsonrpc" not in body and ("sessionId" in body or "id" not in body)


class SeedEventStream:
    """The `/events/{sessionId}` framing: typed JSON events, a heartbeat every `idle_seconds`."""

    kind = "events"

    def __init__(self, heartbeat_seconds: float = HEARTBEAT_SECONDS) -> None:
        self.idle_seconds = heartbeat_seconds

    def polls(self, session: SessionRecord) -> bool:
        return True  # EventSource comes back by itself, with Last-Event-ID, after the `retry:` it was given

    async def open(self, writer: SseWriter, session: SessionRecord) -> None:
        await writer.event({"type": "connected", "sessionId": session.session_id})

    async def idle(self, writer: SseWriter) -> None:
        await writer.event({"type": "heartbeat"})

    async def notice(self, writer: SseWriter, notice: LoggedNotification) -> None:
        kind = "request" if notice.session is not None and "id" in notice.message else "notification"
        await writer.event({"type": kind, "data": notice.message}, event_id=get_event_id(notice.position))

    async def pause(self, writer: SseWriter, position: Position, retry_ms: int) -> None:
        await writer.event({"type": "heartbeat"}, event_id=get_event_id(position), retry_ms=retry_ms)

    async def closing(self, writer: SseWriter, session: SessionRecord) -> None:
        await writer.event({"type": "closed", "sessionId": session.session_id})


class SessionOutbound(Outbound):
    """A REST call's messages to its client, addressed to its session in the notification log (no response
    stream carries them: the session's `/events` streams do, wherever they are). Its questions are answered over
    REST while the call waits: it is never suspended."""

    suspends = False

    def __init__(self, log: NotificationLog, session_id: str) -> None:
        super().__init__()
        self.notifications = log
        self.session_id = session_id

    async def _put(self, message: dict[str, Any]) -> None:
        self.sent += 1
        await self.notifications.send_to(self.session_id, message)


class SessionApi:
    """Answers the REST routes; the MCP endpoint hands it the requests that are not MCP."""

    def __init__(
        self,
        handshake: HandshakeTransport,
        sessions: SessionStore,
        streams: SessionStreams,
        notifications: NotificationLog,
        *,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        max_stream_seconds: float = 840.0,
    ) -> None:
        self.handshake = handshake
        self.sessions = sessions
        self.streams = streams
        self.notifications = notifications
        self.framing = SeedEventStream(heartbeat_seconds)
        self.max_stream_seconds = max_stream_seconds

    async def serve(self, route: RestRoute, exchange: Exchange) -> Reply | None:
        """Answer a REST route (its `POST /mcp` calls arrive through the endpoint's POST, as `call`)."""
        principal = exchange.principal
        if route.action == "create":
            return await self.create(await exchange.json_body(), principal)
        if route.action == "respond":  # the client's answer to a request a REST call sent it
            http = HttpRequest(exchange.method, exchange.scope.get("path", ""), exchange.headers)
            return await self.respond(route.session_id, await exchange.json_body(), http, principal)
        if route.action == "delete":
            return await self.delete(route.session_id, principal)
        return await self.events(route.session_id, exchange)

    async def create(self, body: Any, principal: Principal | None) -> Reply:
        """Open a session; `body` ({} when empty) may declare the client's `capabilities`."""
        capabilities = body.get("capabilities", {}) if isinstance(body, dict) else None
        if not (isinstance(capabilities, dict) and all(isinstance(value, dict) for value in capabilities.values())):
            problem = "Bad Request: the body, if any, is an object whose capabilities (if any) map names to objects"
            return Reply(400, {"error": problem})
        session = SessionRecord(
            session_id=secrets.token_urlsafe(24),
            protocol_version=versions.LATEST_HANDSHAKE,
            client_capabilities=capabilities or {},
            principal=principal.key if principal else None,
            initialized=True,
        )
        try:
            await self.sessions.create(session)
        except TooManySessionsError as full:  # the deployment's limit, or the caller's quota: data names which
            return Reply(503, {"error": full.message, **full.data})
        except RecordTooLargeError as large:  # its capabilities: data names STRATUS_MAX_RECORD_BYTES and the limit
            return Reply(413, {"error": large.message, **large.data})
        return Reply(200, {"sessionId": session.session_id, "message": "Session created"})

    async def call(self, body: dict[str, Any], http: HttpRequest, principal: Principal | None) -> Reply:
        session_id, method, params = body.get("sessionId"), body.get("method"), body.get("params")
        if session_id is None:
            return _bad_call(None, "Bad Request: sessionId is required (open a session with POST /session)")
        if not (isinstance(session_id, str) and session_id and isinstance(method, str) and method) or not isinstance(
            params, dict | None
        ):
            return _bad_call(
                session_id,
                "Bad Request: a call needs non-empty sessionId and method strings, and params as an object if any",
            )
        if refusal := _not_a_rest_call(method):
            return _bad_call(session_id, refusal)
        message = {"jsonrpc": "2.0", "id": f"rest-{secrets.token_hex(6)}", "method": method, "params": params or {}}
        http = http._replace(outbound=SessionOutbound(self.notifications, session_id))
        reply = await self.handshake.post(message, {SESSION_HEADER: session_id}, http, principal)
        payload = reply.payload or {}
        if "error" not in payload:
            return Reply(200, {"sessionId": session_id, "result": payload.get("result", {})})
        error = payload["error"]
        code = error.get("code")
        headers = {}
        if code == RATE_LIMITED:
            retry = (error.get("data") or {}).get("retryAfterSeconds", 1)
            headers = {"retry-after": str(max(1, math.ceil(retry)))}
        status = reply.status if reply.status != 200 else rest_status(code, error.get("data"))
        return Reply(status, {"sessionId": session_id, "error": error}, headers)

    async def respond(self, session_id: str, body: Any, http: HttpRequest, principal: Principal | None) -> Reply:
        """Hand a call waiting on any container the client's answer to the request it sent (`{"type": "request"}`
        on `/events`): `{"id", "result"}` or `{"id", "error": {"code", "message"}}`."""
        answer = body if isinstance(body, dict) else {}
        request_id, result, error = answer.get("id"), answer.get("result"), answer.get("error")
        well_formed = isinstance(error, dict) and isinstance(error.get("code"), int) and "message" in error
        if not isinstance(request_id, str | int) or isinstance(request_id, bool) or (result is None) == (error is None):
            well_formed = False
        elif result is not None:
            well_formed = isinstance(result, dict)
        if not well_formed:
            problem = "Bad Request: an answer is {id, result} or {id, error: {code, message}} for a request of /events"
            return _bad_call(session_id, problem)
        message = {"jsonrpc": "2.0", "id": request_id, **({"result": result} if error is None else {"error": error})}
        reply = await self.handshake.post(message, {SESSION_HEADER: session_id}, http, principal)
        if reply.payload is None:
            return Reply(200, {"sessionId": session_id, "message": "Response delivered"})
        error = reply.payload.get("error") or {}
        status = reply.status if reply.status != 200 else rest_status(error.get("code"), error.get("data"))
        return Reply(status, {"sessionId": session_id, "error": error})

    async def events(self, session_id: str, exchange: Exchange) -> Reply | None:
        """The session's events after `last_event_id` (from now when None), as a poll that ends with a heartbeat
        carrying the id to come back with and a `retry:`."""
        after = None
        last_event_id = exchange.headers.get("last-event-id")
        if last_event_id is not None:
            token, _, position = last_event_id.partition("-")
            after = Position.parse(position) if token == GET_STREAM_PREFIX else None
            if after is None:
                return Reply(400, {"error": "Last-Event-ID must be an id this session's events carried"})
        with self.streams.reading_ahead(after) as ahead:
            session = await self._own_session(session_id, exchange.principal, consistent=False)  # a poll
            if session is None:
                return _unknown_session()
            refused = await self.streams.serve(
                session,
                after,
                exchange.send,
                exchange.receive,
                max_seconds=self.max_stream_seconds,
                framing=self.framing,
                buffered=exchange.buffered,
                ahead=ahead,
            )
        if refused is not None:  # a stream cap: 429 (503 for the process's) naming the setting that raises it
            return Reply(refused.http_status, {"error": refused.message, **(refused.data or {})}, refused.headers)
        return None

    async def delete(self, session_id: str, principal: Principal | None) -> Reply:
        if await self._own_session(session_id, principal) is None:
            return _unknown_session()
        await self.sessions.delete(session_id)
        await self.notifications.end(session_id)  # its open /events streams close now, on every container
        return Reply(200, {"message": "Session closed successfully"})

    async def _own_session(
        self, session_id: str, principal: Principal | None, *, consistent: bool = True
    ) -> SessionRecord | None:
        session = await self.sessions.load(session_id, consistent=consistent)
        if session is None or session.principal != (principal.key if principal else None):
            return None  # another principal's session is answered like an unknown one
        return session


def _bad_call(session_id: Any, problem: str) -> Reply:
    return Reply(400, {"sessionId": session_id, "error": {"code": INVALID_REQUEST, "message": problem}})


def _unknown_session() -> Reply:
    return Reply(404, {"error": "Session not found"})
