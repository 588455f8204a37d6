"""A lean HTTP/1.1 client for the gateway's hot path (and the authorization front's document fetch): keep-alive
connections to one origin, one write per request.

The gateway spends most of a forwarded call in its HTTP client, so this one does only what an MCP upstream
needs: a request (line, headers and body) goes out in a single write; the response head is read in one
`readuntil`, and its body is framed by `Content-Length`, chunked transfer coding or the connection's end, and
handed out as it arrives (an SSE body streams). A connection is reused when its response was read to the end and
the server did not ask to close; an idle one is dropped after `idle_seconds` (below the usual 5 s server
keep-alive) or when the server has closed it, and a request that finds its reused connection closed before any
answer is sent once more on a new one. Heads are bounded by the stream reader's limit; everything else by the
caller (timeouts, body sizes). TLS comes from the standard library, imported only for https.

What it writes is checked first: a method or header name that is not an HTTP token, a target with spaces or
control characters, or a header value with a control character (CR, LF, NUL, any C0 but HTAB, DEL) is refused
with `HttpRequestError` before any connection is used, so no value can end a header line and start another. With
an `AddressGuard`, each new connection resolves the host once, has every address checked, and connects to a
checked address (the name still goes in the Host header and, for TLS, the server name and certificate check), so
a name that answers differently later (DNS rebinding) reaches nothing the guard refused.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import NamedTuple
from urllib.parse import urlsplit

from stratus.net.addresses import AddressGuard

# The gateway spends most of a forwarded call in its HTTP client: measured on loopback beside httpx/httpcore this one
# costs about a tenth of their CPU per request (bench/gateway.py, docs/benchmarks.md).

HEAD_LIMIT = 64 * 1024
"""The longest response head (status line and headers) accepted."""
READ_SIZE = 64 * 1024
NO_BODY_STATUSES = frozenset({204, 304})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(r"[!-~]+")
_UNSAFE_VALUE = re.compile(r"[^\t -~\x80-\xff]")
"""A control character (C0 but HTAB, DEL) or one Latin-1 cannot carry: never written into a header value."""


class HttpProtocolError(Exception):
    """The server's answer is not HTTP/1.1 this client can read (or it closed the connection mid-answer)."""


class HttpRequestError(ValueError):
    """A request this client will not write: it would break the request's framing (its message names the header,
    never its value, which may be a secret)."""


class _Connection(NamedTuple):
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float


class HttpResponse:
    """A response whose head has been read; its body is read through `chunks` or `read`."""

    def __init__(self, status: int, headers: dict[str, str], body: AsyncIterator[bytes]) -> None:
        self.status = status
        self.headers = headers
        self._body = body

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        return self._body

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self._body])


class Http11Pool:
    """Keep-alive HTTP/1.1 connections to the origin of `url`."""

    def __init__(
        self,
        url: str,
        *,
        connect_seconds: float = 5.0,
        idle_seconds: float = 4.0,
        max_idle: int = 8,
        clock: Callable[[], float] = time.monotonic,
        guard: AddressGuard | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = parts.scheme == "https"
        self.authority = parts.netloc.rpartition("@")[2]
        self.url = url
        self.guard = guard
        """Checks the addresses of each new connection; None connects to whatever the name resolves to."""
        self.connect_seconds = connect_seconds
        self.idle_seconds = idle_seconds
        self.max_idle = max_idle
        self._clock = clock
        self._idle: list[_Connection] = []

    @asynccontextmanager
    async def request(
        self, method: str, url: str, headers: dict[str, str], body: bytes = b""
    ) -> AsyncIterator[HttpResponse]:
        """Send a request; the response, its body readable inside the block.

        Raises:
            HttpRequestError: the request cannot be written safely (nothing was sent).
            UpstreamAddressError: the guard refused the host's addresses (no connection was made).
            OSError, HttpProtocolError, asyncio.IncompleteReadError: the connection failed or the answer is not
                readable HTTP/1.1.
        """
        wire = _request_bytes(method, url, self.authority, headers, body)
        connection, reused = await self._connection()
        try:
            try:
                status, head = await self._exchange(connection, wire)
            except (asyncio.IncompleteReadError, ConnectionError) as error:
                partial = getattr(error, "partial", b"")
                if not reused or partial:
                    raise
                _close(connection)  # the server closed the idle connection as the request went out: once more
                connection, reused = await self._open(), False
                status, head = await self._exchange(connection, wire)
            frames, reusable = _framing(method, status, head, connection.reader)
        except BaseException:
            _close(connection)
            raise
        finished = _Finished(frames)
        try:
            yield HttpResponse(status, head, finished)
        except BaseException:
            _close(connection)
            await finished.aclose()
            raise
        if finished.done and reusable:
            self._release(connection)
        else:
            _close(connection)
            await finished.aclose()

    async def _exchange(self, connection: _Connection, wire: bytes) -> tuple[int, dict[str, str]]:
        connection.writer.write(wire)
        await connection.writer.drain()
        while True:
            raw = await connection.reader.readuntil(b"\r\n\r\n")
            status, head = _parse_head(raw)
            if status != 100:
                return status, head

    async def _connection(self) -> tuple[_Connection, bool]:
        now = self._clock()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.idle_since < self.idle_seconds and not connection.reader.at_eof():
                return connection, True
            _close(connection)
        return await self._open(), False

    async def _open(self) -> _Connection:
        ssl_context = None
        if self.tls:
            import ssl

            ssl_context = ssl.create_default_context()
        async with asyncio.timeout(self.connect_seconds):
            if self.guard is None:
                hosts: tuple[str, ...] = (self.host,)
            else:
                hosts = tuple(str(address) for address in await self.guard.addresses(self.url))
            failure: OSError | None = None
            for host in hosts:  # in the resolver's order, as the system's own connect would try them
                try:
                    reader, writer = await asyncio.open_connection(
                        host,
                        self.port,
                        ssl=ssl_context,
                        limit=HEAD_LIMIT,
                        server_hostname=self.host if self.tls else None,
                    )
                except OSError as error:
                    failure = error
                    continue
                return _Connection(reader, writer, self._clock())
        assert failure is not None  # the guard returns at least one address
        raise failure

    def _release(self, connection: _Connection) -> None:
        if len(self._idle) >= self.max_idle:
            _close(connection)
        else:
            self._idle.append(connection._replace(idle_since=self._clock()))

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            _close(connection)


class _Finished:
    """An async iterator over a body that remembers whether it was read to the end (so the connection can stay)."""

    def __init__(self, frames: AsyncIterator[bytes]) -> None:
        self.frames = frames
        self.done = False

    def __aiter__(self) -> _Finished:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await anext(self.frames)
        except StopAsyncIteration:
            self.done = True
            raise

    async def aclose(self) -> None:
        """Finish the frames' generator now (its connection is already closed), not in the garbage collector."""
        await self.frames.aclose()  # type: ignore[attr-defined]


def _request_bytes(method: str, url: str, authority: str, headers: dict[str, str], body: bytes) -> bytes:
    """The request's line, headers and body as written, once every part was checked.

    Raises:
        HttpRequestError: the method or a header name is not a token, the target or a header value holds a
            character that would end its line (or any other control character).
    """
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not _TOKEN.fullmatch(method):
        raise HttpRequestError(f"the method {method[:40]!r} is not an HTTP token")
    if not _TARGET.fullmatch(target) or not _TARGET.fullmatch(authority):
        raise HttpRequestError("the URL holds a space, a control character or non-ASCII")
    lines = [f"{method} {target} HTTP/1.1", f"host: {authority}"]
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise HttpRequestError(f"{name[:40]!r} is not a header name")
        if _UNSAFE_VALUE.search(value):
            raise HttpRequestError(f"the value of header {name!r} holds a control character (or is not Latin-1)")
        lines.append(f"{name}: {value}")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _framing(
    method: str, status: int, head: dict[str, str], reader: asyncio.StreamReader
) -> tuple[AsyncIterator[bytes], bool]:
    """The body's frames, and whether the connection can carry another request after it."""
    reusable = head.get("connection", "").lower() != "close"
    if method == "HEAD" or status in NO_BODY_STATUSES or 100 <= status < 200:
        return _nothing(), reusable
    if "chunked" in head.get("transfer-encoding", "").lower():
        return _chunked(reader), reusable
    if "content-length" in head:
        return _sized(reader, _length(head["content-length"])), reusable
    return _until_closed(reader), False


def _parse_head(raw: bytes) -> tuple[int, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise HttpProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    head: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise HttpProtocolError("a header line without a colon")
        key = name.strip().lower()
        head[key] = f"{head[key]}, {value.strip()}" if key in head else value.strip()
    return int(code), head


def _length(value: str) -> int:
    if not value.strip().isdigit():
        raise HttpProtocolError(f"a bad content-length: {value[:40]!r}")
    return int(value)


async def _nothing() -> AsyncIterator[bytes]:
    empty: tuple[bytes, ...] = ()
    for chunk in empty:
        yield chunk


async def _sized(reader: asyncio.StreamReader, length: int) -> AsyncIterator[bytes]:
    left = length
    while left > 0:
        chunk = await reader.read(min(left, READ_SIZE))
        if not chunk:
            raise HttpProtocolError("the connection closed before the body's end")
        left -= len(chunk)
        yield chunk


async def _chunked(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise HttpProtocolError("a bad chunk size") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailers: not used
            return
        async for piece in _sized(reader, size):
            yield piece
        if await reader.readexactly(2) != b"\r\n":
            raise HttpProtocolError("a chunk without its closing line break")


async def _until_closed(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await reader.read(READ_SIZE):
        yield chunk


def _close(connection: _Connection) -> None:
    connection.writer.close()
