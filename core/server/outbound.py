"""What a running call sends its client before the result: notifications and, on the handshake-era wire,
requests (sampling, elicitation, roots) whose replies may reach any container.

The transport drains `messages` onto the call's SSE response; a reply the client POSTs later is handed over by
the pending-request store, keyed by session and request id, so the container that runs the call gets it
wherever the reply lands.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any, Protocol

from core.errors import McpError, RequestTimeoutError

JsonObject = dict[str, Any]
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class ReplyBox(Protocol):
    """Where the client's replies to this session's requests arrive (a `PendingRequestStore` scoped to it)."""

    async def open(self, request_id: str, ttl_seconds: float) -> None: ...

    async def wait(self, request_id: str, within: float) -> str | None: ...


class ClientError(McpError):
    """The client answered a server request with an error; its code and message are passed on."""

    def __init__(self, error: JsonObject) -> None:
        super().__init__(str(error.get("message", "The client refused the request")), data=error.get("data"))
        code = error.get("code")
        self.code = code if isinstance(code, int) else -32603


class Outbound:
    """The queue of messages for one call's response stream."""

    def __init__(self, replies: ReplyBox | None = None) -> None:
        self.messages: asyncio.Queue[JsonObject] = asyncio.Queue()
        self.replies = replies
        self.sent = 0

    @property
    def can_request(self) -> bool:
        """Whether the client can be asked something mid-call (a session to route its reply through)."""
        return self.replies is not None

    async def notify(self, method: str, params: JsonObject) -> None:
        self.sent += 1
        self.messages.put_nowait({"jsonrpc": "2.0", "method": method, "params": params})

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
        self.sent += 1
        self.messages.put_nowait({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        reply = await self.replies.wait(request_id, within=within)
        if reply is None:
            raise RequestTimeoutError(f"The client did not answer {method} in time")
        answer: JsonObject = json.loads(reply)
        if "error" in answer:
            raise ClientError(answer["error"] if isinstance(answer["error"], dict) else {})
        result = answer.get("result")
        return result if isinstance(result, dict) else {}


def level_allows(level: str, threshold: str | None) -> bool:
    """Whether a message at `level` passes the client's threshold (every level passes when none was set)."""
    if threshold is None or threshold not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold) if level in LOG_LEVELS else True
