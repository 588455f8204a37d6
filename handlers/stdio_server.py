"""Serve a Stratus app over stdio, for desktop hosts that start their MCP servers as child processes.

MCP's stdio transport is newline-delimited JSON-RPC: each line of stdin is one message, each line written to stdout
one message, and nothing else may reach stdout (logs go to stderr). Each message read is carried to the same ASGI
app `stratus serve` runs, as a POST of one handshake-era session, so a tool behaves exactly as it does over HTTP:
its progress, log messages and requests to the client stream back as lines while it runs, and the client's replies
(read as lines too) reach it. The session's GET stream carries the notifications that belong to no call.

A 2026-07-28 request carries its version in `_meta` and has no session; over HTTP it must also mirror its method,
name and marked parameters in headers for intermediaries. A pipe has no intermediary and no headers, so the bridge
writes them from the message itself, as the gateway does for the requests it sends upstream.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from stratus.errors import InternalError, InvalidRequestError, ParseError
from stratus.protocol import versions
from stratus.protocol.jsonrpc import RequestId, decode, error_response, request_id_of
from stratus.server.server import McpServer
from stratus.types import ASGIApp, Message

logger = logging.getLogger("stratus.stdio")
Write = Callable[[bytes], Awaitable[None]]
MAX_LINE_BYTES = 2**24
"""The longest line (one message) read from stdin; a longer one is dropped and answered with an error."""
TOO_LONG = f"Invalid request: a message longer than {MAX_LINE_BYTES} bytes (one line of stdin) is not read"
SHUTDOWN_SECONDS = 5.0
"""How long calls still running when stdin closes may take to answer before they are cancelled."""


class _SseLines:
    """Splits an SSE body into the JSON messages of its `data:` fields, as chunks arrive."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[Any]:
        self._buffer += chunk
        messages = []
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if line.startswith(b"data:"):
                self._data.append(line[5:].lstrip(b" "))
            elif not line and self._data:
                data, self._data = b"\n".join(self._data), []
                if data.strip():  # a priming event carries empty data
                    messages.append(json.loads(data))
        return messages


class StdioBridge:
    """Carries newline-delimited JSON-RPC between a pair of streams and an app's MCP endpoint."""

    def __init__(self, app: ASGIApp, server: McpServer, write: Write, *, path: str = "/mcp") -> None:
        self.app = app
        self.server = server
        self.write = write
        self.path = path
        self.session: dict[str, str] = {}
        """The handshake-era session `initialize` opened: its id and negotiated version, sent with every message."""
        self._listening: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()

    async def run(self, lines: asyncio.StreamReader) -> None:
        """Serve until stdin closes; then let running calls answer (bounded), and stop."""
        calls: set[asyncio.Task[None]] = set()
        try:
            while (line := await _next_line(lines)) != b"":
                if line is None:
                    logger.warning("a stdin line over the limit was dropped", extra={"limit": MAX_LINE_BYTES})
                    await self._send(error_response(None, InvalidRequestError(TOO_LONG)))
                    continue
                if not line.strip():
                    continue
                if b'"initialize"' in line and not self.session:
                    await self._post(line)  # the session must exist before the messages that follow it
                    continue
                call = asyncio.create_task(self._post(line))
                calls.add(call)
                call.add_done_callback(calls.discard)
            if calls:
                await asyncio.wait(calls, timeout=SHUTDOWN_SECONDS)
        finally:
            for task in [*calls, *([self._listening] if self._listening else [])]:
                task.cancel()

    async def _post(self, body: bytes) -> None:
        """One message to the app, its answer written; a failure of the bridge itself is answered too (with a
        reference in the log), so a caller never waits for a line that will not come, and the next line is read."""
        try:
            headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
            headers.update(self.session)
            headers.update(self._mirrored(body))
            status, answer = await self._exchange("POST", headers, body)
        except Exception:  # the bridge's top level: one line must never end the process
            reference = secrets.token_hex(8)
            logger.exception("a stdin message could not be carried to the app", extra={"error_ref": reference})
            failed = InternalError(f"Internal error (reference {reference})")
            await self._send(error_response(_request_id(body), failed))
            return
        if status == 202 or not answer:
            return
        for message in answer if isinstance(answer, list) else [answer]:
            await self._send(message)

    async def _exchange(self, method: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        """One request to the app; SSE events are written as they arrive, a JSON answer is returned."""
        start: dict[str, Any] = {}
        sse = _SseLines()
        chunks: list[bytes] = []
        sent = False
        done = asyncio.Event()

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # the client stays until the answer is complete
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunk = message.get("body", b"")
            if self._is_stream(start):
                for event in sse.feed(chunk):
                    await self._send(event)
            else:
                chunks.append(chunk)
            if not message.get("more_body", False):
                done.set()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"localhost"), *((k.encode(), v.encode()) for k, v in headers.items())],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        await self.app(scope, receive, send)
        status = int(start.get("status", 500))
        body_read = b"".join(chunks)
        if self._is_stream(start) or not body_read.strip():
            return status, None
        answer = json.loads(body_read)
        self._remember_session(start, answer)
        return status, answer

    def _mirrored(self, body: bytes) -> dict[str, str]:
        """The headers a 2026-07-28 request mirrors over HTTP, written from the message (none for other messages)."""
        try:
            message = decode(body)
        except ParseError:
            return {}  # the endpoint answers it with the parse error
        params = message.get("params") if isinstance(message, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(versions.PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
        if not isinstance(version, str):
            return {}
        from stratus.protocol.mirrored_headers import mirrored_headers, parameter_headers

        tools = {name: parameter_headers(tool.definition()) for name, tool in self.server.tools.items()}
        return {"mcp-protocol-version": version, **mirrored_headers(message, tools)}

    @staticmethod
    def _is_stream(start: dict[str, Any]) -> bool:
        headers = dict(start.get("headers", []))
        content_type: bytes = headers.get(b"content-type", b"")
        return content_type.startswith(b"text/event-stream")

    def _remember_session(self, start: dict[str, Any], answer: Any) -> None:
        session_id = dict(start.get("headers", [])).get(b"mcp-session-id")
        if session_id is None or self.session or not isinstance(answer, dict):
            return
        result = answer.get("result", {})
        self.session = {"mcp-session-id": session_id.decode(), "mcp-protocol-version": result["protocolVersion"]}
        self._listening = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        """The session's GET stream: list changes and resource updates that belong to no call."""
        headers = {"accept": "text/event-stream", **self.session}
        await self._exchange("GET", headers, b"")

    async def _send(self, message: Any) -> None:
        async with self._writing:
            await self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")


async def _next_line(lines: asyncio.StreamReader) -> bytes | None:
    """The next line of stdin (b"" once it closes), or None for one over the reader's limit, which is read to its end
    and dropped, however long, holding at most the limit in memory: the line after it is read as it is."""
    try:
        return await lines.readuntil(b"\n")
    except asyncio.IncompleteReadError as ended:
        return ended.partial  # stdin closed: its last line, unterminated (or b"")
    except asyncio.LimitOverrunError as overrun:
        while True:
            await lines.readexactly(overrun.consumed)  # the buffered part of the line, dropped
            try:
                await lines.readuntil(b"\n")  # the rest of it, if now within the limit
            except asyncio.IncompleteReadError:
                pass  # stdin closed within the line: nothing of it is left
            except asyncio.LimitOverrunError as again:
                overrun = again
                continue
            return None


def _request_id(body: bytes) -> RequestId | None:
    try:
        return request_id_of(decode(body))
    except ParseError:
        return None


async def serve_stdio(app: ASGIApp, server: McpServer, *, path: str = "/mcp") -> None:
    """Serve `app` (serving `server`) on this process's stdin and stdout until stdin closes."""
    loop = asyncio.get_running_loop()
    lines = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), sys.stdin)
    out = sys.stdout.buffer

    async def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    await StdioBridge(app, server, write, path=path).run(lines)
