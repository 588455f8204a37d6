"""Server-Sent Events on an ASGI response: the stream a call's notifications and requests travel on.

The stream starts only when a call first has something to say before its result; a call that has nothing to
say answers with plain JSON, so errors keep their HTTP status.
"""

from __future__ import annotations

import json
from typing import Any

from stratus.types import Send

KEEPALIVE_SECONDS = 15.0
RECONNECT_MS = 1000
"""The `retry:` a resumable stream suggests before the client reconnects with `Last-Event-ID`."""
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class SseWriter:
    """Writes events and keep-alive comments to an open SSE response."""

    def __init__(self, send: Send) -> None:
        self._send = send

    @classmethod
    async def start(cls, send: Send, headers: dict[str, str] | None = None) -> SseWriter:
        extra = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]})
        return cls(send)

    async def event(self, message: Any, *, event_id: str | None = None, retry_ms: int | None = None) -> None:
        lines = f"id: {event_id}\n" if event_id else ""
        if retry_ms is not None:
            lines += f"retry: {retry_ms}\n"
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        await self._write(f"{lines}event: message\ndata: {data}\n\n")

    async def prime(self, event_id: str, retry_ms: int) -> None:
        """An event with an id and empty data, which a client resumes from without passing anything on, and how soon
        to reconnect: the priming event of a call's stream, and the last event of a poll."""
        await self._write(f"id: {event_id}\nretry: {retry_ms}\ndata: \n\n")

    async def comment(self, text: str) -> None:
        await self._write(f": {text}\n\n")

    async def close(self) -> None:
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _write(self, chunk: str) -> None:
        await self._send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
