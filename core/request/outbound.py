"""What a running call sends its client before the result: notifications and, on the handshake-era wire,
requests (sampling, elicitation, roots) whose replies may reach any container.

The transport drains `messages` onto the call's SSE response; a reply the client POSTs later is handed over by
the pending-request store, keyed by session and request id, so the container that runs the call gets it
wherever the reply lands.

A client that does not read its stream must not grow the server's memory: at most `MAX_QUEUED` messages wait
unsent for one call. Past that, as a production MCP host expects of a stream it cannot deliver on time:

- progress and log notifications (`DROPPABLE`) are lossy by nature: the oldest one waiting is dropped to make room
  (or, when none waits, the new one is), and the call goes on. On a resumable stream each message was logged first,
  so a client that resumes with `Last-Event-ID` still gets every one.
- any other message (a request to the client, another notification) is never dropped: sending one to a full queue
  with nothing droppable in it fails the call with `ClientNotReadingError`, since the client would never see it
  in time. The call's result does not go through this queue: the transport writes it after the waiting messages.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import deque
from typing import Protocol

from stratus.errors import McpError, RecordTooLargeError, RequestTimeoutError
from stratus.types import JsonObject

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
MAX_QUEUED = 1000
"""Messages at most waiting unsent on one call's stream (a few hundred KB of progress notifications)."""
BUFFERED_HOLD_SECONDS = 20.0
"""The longest a buffered answer waits for something to carry (a poll, a relayed call's first answer):
API Gateway's HTTP API ends an integration after 30 s
(https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html)."""
DROPPABLE = frozenset({"notifications/progress", "notifications/message"})
"""Notifications a full queue drops, oldest first: progress and log messages, which a client can miss."""


class ReplyBox(Protocol):
    """Where the client's replies to this session's requests arrive (a `PendingRequestStore` scoped to it)."""

    async def open(self, request_id: str, ttl_seconds: float) -> None: ...

    async def wait(self, request_id: str, within: float) -> str | None: ...


class PendingReplies(Protocol):
    """The shared store where clients' replies to server requests land (`stratus.stores.base.PendingRequestStore`)."""

    async def open(self, request_key: str, ttl_seconds: float) -> None: ...

    async def wait(self, request_key: str, within: float) -> str | None: ...


class SessionReplies:
    """The replies of one session's client, by request id, through the shared pending-request store: a reply POSTed
    to any container reaches the call awaiting it, wherever that runs."""

    def __init__(self, pending: PendingReplies, session_id: str) -> None:
        self.pending = pending
        self.session_id = session_id

    async def open(self, request_id: str, ttl_seconds: float) -> None:
        await self.pending.open(f"{self.session_id}/{request_id}", ttl_seconds)

    async def wait(self, request_id: str, within: float) -> str | None:
        return await self.pending.wait(f"{self.session_id}/{request_id}", within)


class ClientError(McpError):
    """The client answered a server request with an error; its code and message are passed on."""

    def __init__(self, error: JsonObject) -> None:
        super().__init__(str(error.get("message", "The client refused the request")), data=error.get("data"))
        code = error.get("code")
        self.code = code if isinstance(code, int) else -32603


class ClientNotReadingError(McpError):
    """A call's stream holds `MAX_QUEUED` unsent messages and none of them may be dropped: the client is not reading
    it, so the call fails rather than queue without bound."""

    def __init__(self) -> None:
        super().__init__(
            f"The client is not reading this call's stream: {MAX_QUEUED} messages wait unsent, none of them "
            "droppable (stratus.request.outbound.MAX_QUEUED)",
            data={"maxQueued": MAX_QUEUED},
        )


class EventLog(Protocol):
    """Where a resumable stream's events are kept, so a client can resume it on any container."""

    async def append(self, stream: str, data: str) -> int: ...


class StreamLog:
    """One resumable stream: its events are appended to the session's event log under a random token, and each
    carries the id `<token>-<seq>`, which names the stream it belongs to."""

    def __init__(self, events: EventLog, session_id: str, *, priming: bool, token: str | None = None) -> None:
        self.events = events
        self.token = token or secrets.token_hex(8)
        """The stream's name among the session's: random, or the one a call run elsewhere was given."""
        self.key = f"{session_id}/{self.token}"
        self.priming = priming
        self._opened = False

    @property
    def priming_id(self) -> str:
        return f"{self.token}-0"

    async def open(self) -> None:
        """Make the stream exist in the log before the priming id goes out: a client resuming from `priming_id`
        before the call has sent anything (its stream cut while the call runs on) then finds it, where it would
        get 404. Unless something was logged already, that takes logging the priming event itself (empty data)."""
        if not self._opened:
            await self.events.append(self.key, "")
            self._opened = True

    async def record(self, message: JsonObject) -> str:
        try:
            seq = await self.events.append(self.key, _compact(message))
            self._opened = True
        except RecordTooLargeError as refused:
            if "id" not in message or "method" in message:  # a notification or request: the call sending it learns
                raise
            # The call's answer, past what the log keeps (STRATUS_MAX_RECORD_BYTES): the connected client still gets
            # it whole; a client resuming the stream gets this error for its request instead of waiting forever.
            seq = await self.events.append(
                self.key, _compact({"jsonrpc": "2.0", "id": message["id"], "error": refused.to_error()})
            )
        return f"{self.token}-{seq}"


def _compact(message: JsonObject) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


class Outbound:
    """The queue of messages (with their event ids, when the stream is resumable) for one call's response."""

    suspends = True
    """On Lambda, a question may suspend the call: the stream ends after it and its client polls for the rest
    (`stratus.protocol.relayed_calls`). False where no stream carries the call (the session API's REST calls)."""

    def __init__(self, replies: ReplyBox | None = None, *, buffered: bool = False) -> None:
        self.buffered = buffered
        """The response is sent whole once the call ends (a buffered front door): its messages arrive with the
        result, so the client cannot be asked anything mid-call, and nothing needs logging for a resumption."""
        self.messages: deque[tuple[str | None, JsonObject]] = deque()
        """Waiting to be written, oldest first (a plain deque: the writer waits on `arrival`, never on the queue)."""
        self.replies = replies
        self.log: StreamLog | None = None
        self.sent = 0
        self.dropped = 0
        """Droppable notifications left out of a full queue (`MAX_QUEUED`)."""
        self._arrival: asyncio.Future[None] | None = None

    async def _put(self, message: JsonObject) -> None:
        self.sent += 1
        event_id = await self.log.record(message) if self.log is not None else None
        if self._make_room(message):  # no await in between: the bound holds whatever runs concurrently
            self.messages.append((event_id, message))
        if self._arrival is not None and not self._arrival.done():
            self._arrival.set_result(None)

    def _make_room(self, message: JsonObject) -> bool:
        """Whether `message` joins the queue, after dropping the oldest droppable one waiting if it is full.

        Raises:
            ClientNotReadingError: the queue is full of messages none of which (nor `message`) may be dropped.
        """
        if len(self.messages) < MAX_QUEUED:
            return True
        waiting = list(self.messages)
        self.messages.clear()
        oldest = next((index for index, (_, queued) in enumerate(waiting) if _droppable(queued)), None)
        if oldest is not None:
            del waiting[oldest]
        for item in waiting:
            self.messages.append(item)
        if oldest is not None or _droppable(message):
            self.dropped += 1
            return oldest is not None
        raise ClientNotReadingError

    def arrival(self) -> asyncio.Future[None]:
        """A future done once a message is waiting (at once if one is): a plain future, cheaper to wait on than a
        task around `messages.get()`."""
        if self._arrival is None or self._arrival.done():
            self._arrival = asyncio.get_running_loop().create_future()
        if self.messages:
            self._arrival.set_result(None)
        return self._arrival

    async def record_final(self, message: JsonObject) -> str | None:
        """Log the call's final response (for a client that resumes after it was sent); its event id."""
        return await self.log.record(message) if self.log is not None else None

    @property
    def can_request(self) -> bool:
        """Whether the client can be asked something mid-call (a session to route its reply through)."""
        return self.replies is not None

    async def notify(self, method: str, params: JsonObject) -> None:
        await self._put({"jsonrpc": "2.0", "method": method, "params": params})

    async def send_request(self, request_id: str, method: str, params: JsonObject) -> None:
        """Send the client a request whose reply goes elsewhere than this call (a task's question, answered into the
        task or a suspended call: `stratus.protocol.questions`)."""
        await self._put({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def request(self, method: str, params: JsonObject, *, within: float) -> JsonObject:
        """Ask the client, and wait at most `within` seconds for its result.

        Raises:
            RequestTimeoutError: no reply in time.
            ClientError: the client answered with an error.
        """
        if self.replies is None:
            raise RuntimeError("this response cannot carry requests")  # callers check can_request first
        request_id = f"stratus-{secrets.token_urlsafe(12)}"
        await self.replies.open(request_id, ttl_seconds=within + 5)
        await self._put({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = await self.replies.wait(request_id, within=within)
        if reply is None:
            raise RequestTimeoutError(f"The client did not answer {method} in time")
        answer: JsonObject = json.loads(reply)
        if "error" in answer:
            raise ClientError(answer["error"] if isinstance(answer["error"], dict) else {})
        result = answer.get("result")
        return result if isinstance(result, dict) else {}


def _droppable(message: JsonObject) -> bool:
    return "id" not in message and message.get("method") in DROPPABLE


def level_allows(level: str, threshold: str | None) -> bool:
    """Whether a message at `level` passes the client's threshold (every level passes when none was set)."""
    if threshold is None or threshold not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold) if level in LOG_LEVELS else True
