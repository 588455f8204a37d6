"""The one line `stratus local` prints per request at a front door: the door, the HTTP method and path, the status,
how long the door took, what the request asked (the JSON-RPC method and, for a call, the tool, prompt or resource),
how it came out, and what Lambda billed for it (every invocation it took, the REPORT lines' billed durations summed):

    [StreamingFunctionUrl] POST /mcp 200 12 ms tools/call add ok, billed 9 ms

Outcomes: `ok`, `tool error` (a result with `isError`), `error <code>` (a JSON-RPC error), `asked` (the stream ended
with a question to the client: the call is suspended), `accepted` (202), `stream` (an SSE stream that carried no
response, a poll), or nothing when the body is no MCP message. Only the first `PEEK_BYTES` of a request and the last
`PEEK_BYTES` of a response are read for it.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

from stratus.types import Message

PEEK_BYTES = 64 * 1024
billed_here: ContextVar[list[int] | None] = ContextVar("stratus_local_billed", default=None)
"""The billed milliseconds of each invocation made for the request being served (`Bill.record` appends to it)."""


class RequestNote:
    """What one request asked and how it came out, as a front door sees it."""

    def __init__(self) -> None:
        self.asked = ""
        self.content_type = ""
        self.tail = b""
        self.billed: list[int] = []

    def request_body(self, body: bytes) -> None:
        if len(body) > PEEK_BYTES:
            return
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return
        if isinstance(message, list):
            self.asked = f"batch of {len(message)}"
        elif isinstance(message, dict) and isinstance(message.get("method"), str):
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            item = params.get("name", params.get("uri")) if params else None
            self.asked = f"{message['method']} {item}" if isinstance(item, str) else message["method"]
        elif isinstance(message, dict) and ("result" in message or "error" in message):
            self.asked = "reply"

    def response(self, message: Message) -> None:
        """An ASGI response message the door sent."""
        if message["type"] == "http.response.start":
            headers = dict(message.get("headers") or ())
            self.content_type = headers.get(b"content-type", b"").decode("latin-1")
        elif message["type"] == "http.response.body":
            self.tail = (self.tail + message.get("body", b""))[-PEEK_BYTES:]

    def outcome(self, status: int) -> str:
        if status == 202:
            return "accepted"
        if self.content_type.startswith("application/json"):
            try:
                return _outcome_of(json.loads(self.tail))
            except ValueError:
                return ""
        if self.content_type.startswith("text/event-stream"):
            messages = [
                _json(line[5:]) for line in self.tail.decode(errors="replace").splitlines() if line[:5] == "data:"
            ]
            last = next((message for message in reversed(messages) if isinstance(message, dict)), None)
            return _outcome_of(last) if last is not None else "stream"
        return ""

    def line(self, door: str, method: str, path: str, status: int, took_ms: float) -> str:
        line = f"[{door}] {method} {path} {status or '-'} {took_ms:.0f} ms"
        described = " ".join(part for part in (self.asked, self.outcome(status)) if part)
        if described:
            line += f" {described}"
        if self.billed:
            line += f", billed {sum(self.billed)} ms"
        return line


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _outcome_of(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    if "method" in message:
        return "asked" if "id" in message else "stream"
    if isinstance(message.get("error"), dict):
        return f"error {message['error'].get('code')}"
    result = message.get("result")
    if isinstance(result, dict):
        return "tool error" if result.get("isError") else "ok"
    return ""
