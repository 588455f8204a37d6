"""Reading what an upstream sends over HTTP, within bounds: bodies, lines and Server-Sent Events.

Both HTTP transports read through here: a body as bytes chunks becomes text lines (CR, LF or CRLF ended, UTF-8
decoded across chunk boundaries), lines become `(event name, data)` pairs, and a plain body is read whole. A line,
an event or a body over `MAX_EVENT_CHARS` raises `SseEventError`, so an upstream cannot make the gateway hold an
unbounded message.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator

from stratus.types import JsonObject

MAX_EVENT_CHARS = 16 * 1024 * 1024
"""The longest line, event or body an upstream may send: longer ends the request (or the transport)."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SseEventError(ValueError):
    """The upstream sent a line, an event or a body over the size bound."""


class SseEvents:
    """Turns an SSE body, fed line by line, into `(event name, data)` pairs (the name `message` by default)."""

    def __init__(self, limit: int = MAX_EVENT_CHARS) -> None:
        self.limit = limit
        self.last_id: str | None = None
        """The last event id the stream carried: where a client resumes it from (`Last-Event-ID`)."""
        self.retry_ms: int | None = None
        """The last `retry:` the stream suggested: how long to wait before resuming it."""
        self._name = ""
        self._data: list[str] = []
        self._size = 0

    def feed(self, line: str) -> tuple[str, str] | None:
        """The event `line` ends (a blank line), if it carried data; else None.

        Raises:
            SseEventError: the event's data outgrew the bound.
        """
        if line == "":
            event = (self._name or "message", "\n".join(self._data)) if self._data else None
            self._name, self._data, self._size = "", [], 0
            return event
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "id" and "\0" not in value:
            self.last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        elif field == "data":
            self._size += len(value) + 1
            if self._size > self.limit:
                raise SseEventError(f"sent an event over {self.limit} characters")
            self._data.append(value)
        return None  # a comment (keep-alive), or a field SSE does not define

    def end(self) -> tuple[str, str] | None:
        """The last event, if the body ended without the blank line that closes it."""
        return self.feed("")


async def messages(
    chunks: AsyncIterator[bytes], limit: int = MAX_EVENT_CHARS, *, events: SseEvents | None = None
) -> AsyncGenerator[JsonObject, None]:
    """The JSON objects of an SSE body's `message` events (anything else skipped), read through `events` when given
    (its `last_id` and `retry_ms` then tell the caller where and when to resume).

    Raises:
        SseEventError: a line or an event outgrew the bound.
    """
    events = events or SseEvents(limit)
    async with contextlib.aclosing(bounded_lines(chunks, limit)) as lines:
        async for line in lines:
            event = events.feed(line)
            if event is not None and event[0] == "message" and (message := json_object(event[1])) is not None:
                yield message
    last = events.end()
    if last is not None and last[0] == "message" and (message := json_object(last[1])) is not None:
        yield message


async def bounded_lines(chunks: AsyncIterator[bytes], limit: int = MAX_EVENT_CHARS) -> AsyncGenerator[str, None]:
    """The lines of a UTF-8 byte stream (CR, LF or CRLF ended), refusing any longer than `limit` characters.

    Raises:
        SseEventError: a line outgrew the bound.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending: list[str] = []
    size = 0
    after_cr = False
    async for raw in chunks:  # ends with the body
        text = decoder.decode(raw)
        if after_cr and text.startswith("\n"):
            text, after_cr = text[1:], False  # the LF of a CRLF split across chunks
        if not text:
            continue
        after_cr = text.endswith("\r")
        *ended, rest = _LINE_BREAK.split(text)
        if ended:
            ended[0] = "".join([*pending, ended[0]])
            pending, size = [], 0
        for line in ended:
            if len(line) > limit:
                raise SseEventError(f"sent a line over {limit} characters")
            yield line
        pending.append(rest)
        size += len(rest)
        if size > limit:
            raise SseEventError(f"sent a line over {limit} characters")
    if pending and (last := "".join(pending) + decoder.decode(b"", final=True)):
        yield last


async def bounded_body(chunks: AsyncIterator[bytes], limit: int = MAX_EVENT_CHARS) -> str:
    """A whole body as text.

    Raises:
        SseEventError: it is longer than `limit` bytes.
    """
    pieces: list[bytes] = []
    size = 0
    async for chunk in chunks:  # ends with the body
        size += len(chunk)
        if size > limit:
            raise SseEventError(f"answered a message over {limit} bytes")
        pieces.append(chunk)
    return b"".join(pieces).decode("utf-8", "replace")


def json_object(text: str | bytes) -> JsonObject | None:
    """`text` parsed, if it is a JSON object."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
