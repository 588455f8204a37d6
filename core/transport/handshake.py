"""The handshake-era wire (2024-11-05 to 2025-11-25): `initialize`, `Mcp-Session-Id` sessions, batches.

Sessions live in the injected `SessionStore`, so any container can serve any request of a session.
"""

import json
import secrets
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from stratus.errors import InvalidParamsError, InvalidRequestError, McpError, RecordTooLargeError
from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.dispatch import BuiltOnUse, Dispatcher
from stratus.protocol.jsonrpc import (
    ClientResponse,
    Notification,
    Request,
    encode,
    error_response,
    parse_message,
    request_id_of,
    result_response,
)
from stratus.protocol.notifications import NotificationLog, Position
from stratus.protocol.questions import CALL, PREFIXES, TASK, parse_question_id
from stratus.request.http import HttpRequest
from stratus.request.outbound import SessionReplies, StreamLog
from stratus.server.principal import Principal
from stratus.stores.records import CallAdmission, CallChecks, SessionRecord
from stratus.transport.asgi import Headers
from stratus.transport.http_reply import ACCEPTED, SUSPENDED, Reply, error_reply
from stratus.transport.polling import parse_call_position
from stratus.transport.session_stream import GET_STREAM_PREFIX, SessionStreams
from stratus.types import JsonObject, Receive, Send

if TYPE_CHECKING:
    from stratus.protocol.relayed_calls import RelayedCalls, RelayedStream
    from stratus.server.tools import Tool
    from stratus.stores.base import Stores
    from stratus.transport.exchange import Exchange

SESSION_HEADER = "mcp-session-id"


class CallAdmissions(Protocol):
    """A tools/call's admission asked together with loading its session (`stratus.protocol.tool_calls.ToolCalls`)."""

    def prefetch_checks(
        self, params: JsonObject, principal: Principal | None, session_id: str
    ) -> CallChecks | None: ...

    async def admit_with_session(self, checks: CallChecks) -> CallAdmission: ...


class SessionNotFoundError(McpError):
    """The session id is unknown, ended or expired."""

    code = -32600
    http_status = 404


def _session_id(headers: Headers) -> str:
    session_id = headers.get(SESSION_HEADER)
    if not session_id:
        raise InvalidRequestError("Bad Request: Mcp-Session-Id header is required after initialize")
    return session_id


class BatchLimits(NamedTuple):
    """How much one 2025-03-26 batch may ask: a small body of cheap requests must not buy a huge answer."""

    max_length: int = 100
    """More messages than this: the batch is refused (`STRATUS_MAX_BATCH_LENGTH`)."""
    max_response_bytes: int = 4 * 1024 * 1024
    """Once the answers reach this size, the remaining requests are not run (`STRATUS_MAX_BATCH_RESPONSE_BYTES`)."""


class HandshakeTransport:
    """Answers handshake-era POST bodies and session DELETEs."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        stores: "Stores",
        admissions: CallAdmissions,
        session_streams: SessionStreams,
        batch_limits: BatchLimits | None = None,
        *,
        relays: "BuiltOnUse[RelayedCalls] | None" = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.admissions = admissions
        self.batch_limits = batch_limits or BatchLimits()
        self.sessions = stores.sessions
        self.pending = stores.pending
        self.events = stores.events
        self.session_streams = session_streams
        self.relays = relays
        """Where a call that may ask its client runs when a buffered front door answers it (the task worker); None
        when no launcher can start a call there."""

    async def post(self, body: Any, headers: Headers, http: HttpRequest, principal: Principal | None) -> Reply:
        header_version = headers.get("mcp-protocol-version")
        try:
            if header_version is not None and header_version not in versions.HANDSHAKE_VERSIONS:
                raise InvalidRequestError(
                    f"Bad Request: unsupported MCP-Protocol-Version {header_version!r}",
                    data={"supported": list(versions.SUPPORTED_VERSIONS), "requested": header_version},
                )
            if isinstance(body, list):
                return await self._batch(body, headers, http, principal)
            message = parse_message(body)
            if isinstance(message, Request) and message.method == "initialize":
                return await self._initialize(message, principal, http)
            checks = None
            if isinstance(message, Request) and message.method == "tools/call":
                checks = self.admissions.prefetch_checks(message.params, principal, _session_id(headers))
            admitted = None if checks is None else await self.admissions.admit_with_session(checks)
            if admitted is not None:
                session = self._check_owner(admitted.session, principal)
            else:
                session = await self._session(headers, principal)
            return await self._one(message, session, http, principal, admitted) or ACCEPTED
        except McpError as error:
            return error_reply(request_id_of(body), error)

    async def stream(self, exchange: "Exchange", *, max_seconds: float) -> Reply | None:
        """GET: the session's own stream of notifications, or with `Last-Event-ID` the resumption of a stream.

        Returns a Reply only to refuse (unknown session or stream: 404; a stream cap reached: 429, or 503 for the
        process's, with Retry-After; a buffered answer for a session whose client does not poll: 405); None once the
        stream was served. A buffered response (behind API Gateway's HTTP API) is sent whole, once it ends.
        """
        headers, principal = exchange.headers, exchange.principal
        send, receive, buffered = exchange.send, exchange.receive, exchange.buffered
        last_event_id = headers.get("last-event-id")
        token, _, seq = (last_event_id or "").partition("-")
        after = Position.parse(seq) if token == GET_STREAM_PREFIX else None
        with self.session_streams.reading_ahead(after) as ahead:
            try:
                session = await self._session(headers, principal, consistent=False)  # a poll: half a read on DynamoDB
            except McpError as error:
                return error_reply(None, error)
            if last_event_id is None or after is not None:
                refused = await self.session_streams.serve(
                    session, after, send, receive, max_seconds=max_seconds, buffered=buffered, ahead=ahead
                )
                return error_reply(None, refused) if refused else None
        resumed = parse_call_position(seq)  # a call stream's event id is `<token>-<number>[.<polls>]`
        if not token or resumed is None:
            return error_reply(
                None, InvalidRequestError("Bad Request: Last-Event-ID must be an event id of this session")
            )
        return await self._resume(session, token, resumed, send, receive, max_seconds=max_seconds, buffered=buffered)

    async def _resume(
        self,
        session: SessionRecord,
        token: str,
        after: tuple[int, int],
        send: Send,
        receive: Receive,
        *,
        max_seconds: float,
        buffered: bool,
    ) -> Reply | None:
        """Replay a call's stream after the event `after` names, then follow it until its final response (404 when
        the session has no such stream; a refusal when a stream cap is reached)."""
        key = f"{session.session_id}/{token}"
        if not await self.events.read_after(key, max(after[0] - 1, 0)):  # the event named, or any when it is 0
            return error_reply(None, SessionNotFoundError("Not Found: no such stream in this session"))
        refused = await self.session_streams.resume(
            session, key, token, after, send, receive, max_seconds=max_seconds, buffered=buffered
        )
        return error_reply(None, refused) if refused else None

    async def relay(
        self, body: Any, headers: Headers, http: HttpRequest, principal: Principal | None
    ) -> "tuple[SessionRecord, RelayedStream] | None":
        """Through a buffered front door, start a tools/call that may ask its client something mid-call in the task
        worker (`stratus.protocol.relayed_calls`): its session and where its stream is kept; None for any other
        request, which is answered as usual (its refusals included)."""
        if self.relays is None or http.outbound is None or not http.outbound.buffered:
            return None
        from stratus.protocol.relayed_calls import may_ask  # loaded with the relays

        relays = self.relays()
        try:
            message = parse_message(body)
            if not isinstance(message, Request) or message.method != "tools/call":
                return None
            tool = relays.candidate(message.params)
            if tool is None:
                return None
            session = await self._session(headers, principal)
        except McpError:
            return None
        call = Call.in_session(message, session, http, principal)
        if not may_ask(call, tool):
            return None
        with self.dispatcher.span(call):  # the launch carries it: the run in the task worker is its child
            return session, await relays.start(call, tool)

    async def follow_relayed(
        self, relayed: "tuple[SessionRecord, RelayedStream]", exchange: "Exchange", *, max_seconds: float
    ) -> McpError | None:
        """A buffered answer to a relayed call: its stream relayed from the store until it asks something or ends (at
        most 20 s), then an event to come back from; the refusal when a stream cap is reached."""
        session, (key, token) = relayed
        return await self.session_streams.resume(
            session,
            key,
            token,
            (0, 0),
            exchange.send,
            exchange.receive,
            max_seconds=max_seconds,
            buffered=True,
            until_asked=True,
        )

    async def delete(self, headers: Headers, principal: Principal | None) -> Reply:
        try:
            session = await self._session(headers, principal)
        except McpError as error:
            return error_reply(None, error)
        await self.sessions.delete(session.session_id)
        await NotificationLog(self.events).end(session.session_id)  # its GET streams close now, on every container
        return Reply(200)

    async def _answer_question(self, session: SessionRecord, request_id: str, reply: JsonObject) -> bool:
        """Keep a reply to a question of a task or a suspended call with it (`stratus.protocol.questions`); whether
        one of this session's waited for it."""
        asked = parse_question_id(request_id)
        if asked is None:
            return False
        kind, record_id, key = asked
        if kind == TASK:
            return await self.dispatcher.answer_task(session.principal, record_id, key, reply)
        return kind == CALL and self.relays is not None and await self.relays().answer(session, record_id, key, reply)

    async def _deliver(self, request_key: str, reply: str) -> bool:
        """Hand a client's reply to the call awaiting it. A reply past what the store keeps is refused, and the call
        gets the refusal as its reply at once rather than waiting out its timeout."""
        try:
            return await self.pending.deliver(request_key, reply)
        except RecordTooLargeError as refused:
            await self.pending.deliver(request_key, json.dumps({"error": refused.to_error()}))
            raise

    async def _session(
        self, headers: Headers, principal: Principal | None, *, consistent: bool = True
    ) -> SessionRecord:
        """The live session the request names, if it belongs to the caller (`consistent`: `SessionStore.load`).

        A session presented by another principal is answered exactly like an unknown one (404), so ids cannot be
        probed.
        """
        return self._check_owner(await self.sessions.load(_session_id(headers), consistent=consistent), principal)

    @staticmethod
    def _check_owner(session: SessionRecord | None, principal: Principal | None) -> SessionRecord:
        if session is None or session.principal != (principal.key if principal else None):
            raise SessionNotFoundError("Session not found")
        return session

    async def _initialize(self, request: Request, principal: Principal | None, http: HttpRequest | None) -> Reply:
        params = request.params
        capabilities, client_info = params.get("capabilities"), params.get("clientInfo")
        if not isinstance(params.get("protocolVersion"), str) or not isinstance(capabilities, dict):
            raise InvalidParamsError("Invalid params: initialize needs protocolVersion and capabilities")
        version = versions.negotiate_handshake(params["protocolVersion"])
        with self.dispatcher.span(Call(request=request, version=version, http=http)):
            session = SessionRecord(
                session_id=secrets.token_urlsafe(24),
                protocol_version=version,
                client_capabilities=capabilities,
                client_info=client_info if isinstance(client_info, dict) else {},
                principal=principal.key if principal else None,
                opened_by=self.dispatcher.tracing.inject().get("traceparent"),
            )
            await self.sessions.create(session)
        result = self.dispatcher.initialize_result(version)
        return Reply(200, result_response(request.id, result), {"mcp-session-id": session.session_id})

    async def _one(
        self,
        message: Request | Notification | ClientResponse,
        session: SessionRecord,
        http: HttpRequest,
        principal: Principal | None,
        admitted: CallAdmission | None = None,
    ) -> Reply | None:
        """The reply to one message of a session; None for notifications and client responses."""
        if isinstance(message, Notification):
            if message.method == "notifications/initialized" and not session.initialized:
                session.initialized = True
                await self.sessions.save(session)
            elif message.method == "notifications/cancelled":
                reason = message.params.get("reason")
                await self.dispatcher.cancel(
                    session.session_id, message.params.get("requestId"), reason if isinstance(reason, str) else None
                )
            return None
        if isinstance(message, ClientResponse):
            reply = {"result": message.result} if message.error is None else {"error": message.error}
            if isinstance(message.id, str) and message.id.startswith(PREFIXES):
                if not await self._answer_question(session, message.id, reply):
                    raise InvalidRequestError(f"Invalid request: nothing of this session awaits {message.id!r}")
                return None
            if not await self._deliver(f"{session.session_id}/{message.id}", json.dumps(reply)):
                raise InvalidRequestError(f"Invalid request: no request {message.id!r} of this session awaits a reply")
            return None
        if message.method == "initialize":
            raise InvalidRequestError("Invalid request: initialize cannot be sent inside a session or a batch")
        if http.outbound is not None and not http.outbound.buffered:
            http.outbound.replies = SessionReplies(self.pending, session.session_id)
            priming = versions.at_least(session.protocol_version, versions.PRIMING_SINCE)
            http.outbound.log = StreamLog(self.events, session.session_id, priming=priming)
        call = Call.in_session(message, session, http, principal, admitted)
        suspendable = self._suspendable(call)
        try:
            result = await self.dispatcher.dispatch(call)
            if suspendable is not None and result.get("resultType") == "input_required":
                assert http.outbound is not None
                relays, call_id, tool = suspendable
                await relays.suspend(call, call_id, tool, result["inputRequests"], http.outbound)
                return SUSPENDED
        except McpError as error:
            return error_reply(message.id, error)
        return Reply(200, result_response(message.id, result))

    def _suspendable(self, call: Call) -> "tuple[RelayedCalls, str, Tool] | None":
        """On Lambda, a live call that may ask its client something runs with its questions answered from the store,
        so that a question suspends it (`RelayedCalls.suspend`) instead of holding the invocation: its relays, the id
        it is kept under, and its tool. None for any other call, and where nothing bills a wait (no task worker)."""
        outbound = call.http.outbound if call.http is not None else None
        if self.relays is None or outbound is None or outbound.buffered or call.request.method != "tools/call":
            return None
        if not outbound.suspends:
            return None
        if outbound.log is None or not outbound.log.priming:  # before 2025-11-25 a client cannot poll for the rest
            return None
        from stratus.protocol.relayed_calls import may_ask, new_call_id  # loaded with the relays

        relays = self.relays()
        tool = relays.candidate(call.params)
        if tool is None or not may_ask(call, tool):
            return None
        call_id = new_call_id()
        call.steps = relays.journal(call_id, tool)
        return relays, call_id, tool

    async def _batch(self, body: list[Any], headers: Headers, http: HttpRequest, principal: Principal | None) -> Reply:
        if not body:
            raise InvalidRequestError("Invalid request: empty batch")
        limits = self.batch_limits
        if len(body) > limits.max_length:
            raise InvalidRequestError(
                f"Invalid request: a batch holds at most {limits.max_length} messages (STRATUS_MAX_BATCH_LENGTH)"
            )
        session = await self._session(headers, principal)
        # The session's negotiated version decides: leaving the header out must not open batches to a later version.
        version = session.protocol_version
        if version != versions.BATCH_VERSION or headers.get("mcp-protocol-version", version) != version:
            raise InvalidRequestError(
                f"Invalid request: batches are only allowed at protocol version {versions.BATCH_VERSION}"
            )
        responses = []
        size = 0
        for item in body:
            if size >= limits.max_response_bytes and _is_request(item):
                responses.append(error_response(request_id_of(item), _unanswered(limits.max_response_bytes)))
                continue
            try:
                reply = await self._one(parse_message(item), session, http, principal)
            except McpError as error:
                reply = error_reply(request_id_of(item), error)
            if reply is not None:
                responses.append(reply.payload)
                size += len(encode(reply.payload))
        return Reply(200, responses) if responses else ACCEPTED


def _is_request(item: Any) -> bool:
    """Whether a batch item expects an answer. Past the size limit only these are skipped: notifications and client
    responses add nothing to the answer, so they are still handled."""
    return isinstance(item, dict) and "method" in item and "id" in item


def _unanswered(limit: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"Invalid request: not run, the batch's answers reached {limit} bytes (STRATUS_MAX_BATCH_RESPONSE_BYTES); "
        "send it again"
    )
