"""What every emulated front door shares: reading a request under a payload limit, invoking a function within its
timeout through its container pool, reading its answer back whole, renaming the response headers the door does not
pass through, and writing a buffered or a streamed answer; and, for the two API Gateway doors, the function pool a
route's integration may invoke.

A streamed invocation goes on after its client leaves: Lambda does not stop a function whose caller disconnected
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html), so the container stays busy
until the function ends or times out.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from typing import IO, Any

from stratus.emulator.access_line import RequestNote, billed_here
from stratus.emulator.containers import FunctionError, FunctionPool, Invoked, Streamed
from stratus.emulator.events import Answer, Request
from stratus.emulator.intrinsics import ACCOUNT_ID
from stratus.emulator.resource_policy import api_gateway_may_invoke
from stratus.emulator.stack import Stack
from stratus.handlers.serving import redact_path
from stratus.net.request_body import BodyTooLargeError, read_body
from stratus.types import Message, Receive, Scope, Send

REMAPPED_PREFIX = "x-amzn-Remapped-"
REST_API_REMAPPED = ("Authorization", "Connection", "Content-MD5", "Date", "Server", "WWW-Authenticate")
"""The function's response headers a REST API's Lambda proxy integration renames `x-amzn-Remapped-<name>`, as
documented (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html;
https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html#api-gateway-known-issues-rest-apis)."""
REPORTED_REMAPPED = ("WWW-Authenticate",)
"""What the Function URL and the HTTP API are reported to rename as well, though AWS documents no renaming for either:
deployments of MCP servers have seen their 401's challenge arrive as `x-amzn-Remapped-WWW-Authenticate` there. Off
by default (`Options.remap_www_authenticate`); a client must find the metadata either way (the 401 body's
`resource_metadata`, the RFC 9728 well-known URLs)."""


def remap(headers: list[tuple[str, str]], names: tuple[str, ...]) -> list[tuple[str, str]]:
    """`headers` with each of `names` (any case) renamed `x-amzn-Remapped-<name>`, the rest as they are."""
    canonical = {name.lower(): name for name in names}
    return [
        (f"{REMAPPED_PREFIX}{canonical[name.lower()]}", value) if name.lower() in canonical else (name, value)
        for name, value in headers
    ]


def listening_address(scope: Scope) -> str:
    """The emulated API's domain: the address the client connected to (never the Host the client wrote)."""
    server = scope.get("server")
    address = str(server[0]) if server else "127.0.0.1"
    return f"[{address}]" if ":" in address else address


async def read_limited(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The request body, and whether it went past `limit` bytes (then reading stops there)."""
    try:
        return await read_body(receive, limit), False
    except BodyTooLargeError:
        return b"", True


async def send_answer(send: Send, answer: Answer) -> None:
    headers = [(name.encode(), value.encode()) for name, value in answer.headers if name.lower() != "content-length"]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


class Invocation:
    """One invocation of a function through its pool, within the function's timeout (after which Lambda stops it
    and resets its environment: https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html)."""

    def __init__(self, pool: FunctionPool) -> None:
        self.pool = pool
        self.deadline = 0.0

    async def run(self, container: Any, event: Any) -> Invoked:
        timeout = self.pool.function.timeout_seconds
        self.deadline = asyncio.get_running_loop().time() + timeout
        try:
            async with asyncio.timeout_at(self.deadline):
                invoked: Invoked = await container.invoke(event, self.pool.context(timeout, container.request_id))
                return invoked
        except TimeoutError:
            await container.stop()
            raise FunctionError("Sandbox.Timedout", f"Task timed out after {timeout:.2f} seconds") from None

    async def chunks(
        self, container: Any, stream: Streamed, *, idle_seconds: float | None = None, limit: int | None = None
    ) -> AsyncIterator[bytes]:
        """The stream's chunks until it ends, the function times out (the container is then stopped), no chunk
        comes for `idle_seconds`, or `limit` bytes have passed."""
        loop = asyncio.get_running_loop()
        iterator = aiter(stream.chunks)
        sent = 0
        while True:
            limit_at = self.deadline if idle_seconds is None else min(self.deadline, loop.time() + idle_seconds)
            try:
                async with asyncio.timeout_at(limit_at):
                    chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if loop.time() >= self.deadline:
                    await container.stop()
                return
            sent += len(chunk)
            if limit is not None and sent > limit:
                return
            yield chunk


async def collect(invocation: Invocation, container: Any, stream: Streamed) -> bytes:
    return b"".join([chunk async for chunk in invocation.chunks(container, stream)])


async def read_whole(invocation: Invocation, container: Any, invoked: Invoked, read: Callable[[Any], Answer]) -> Answer:
    """The invocation's answer, whole: its stream collected, else its payload as `read` reads it (a proxy response
    of payload format 1.0 or 2.0)."""
    stream = invoked.stream
    if stream is not None:
        return Answer(stream.status, stream.headers, await collect(invocation, container, stream))
    return read(invoked.payload)


def api_gateway_pool(
    stack: Stack,
    pools: Mapping[str, FunctionPool],
    function: str,
    qualifier: str | None,
    *,
    api_id: str,
    stage: str,
    method: str,
    path: str,
) -> FunctionPool | None:
    """The pool of `function` when API Gateway may invoke it for this request (its execute-api ARN allowed by the
    function's resource-based policy), else None: the API then answers 500."""
    source_arn = f"arn:aws:execute-api:{stack.region}:{ACCOUNT_ID}:{api_id}/{stage}/{method}{path}"
    pool = pools.get(function)
    if pool is None or not api_gateway_may_invoke(stack.policy(function), qualifier, source_arn):
        return None
    return pool


async def send_stream(
    send: Send,
    invocation: Invocation,
    container: Any,
    stream: Streamed,
    headers: list[tuple[str, str]],
    *,
    idle_seconds: float | None = None,
    limit: int | None = None,
) -> None:
    """Relay a streamed answer as it is written; once the client is gone the rest is still drained (the function
    runs on), within the function's timeout."""
    start = [(name.encode(), value.encode()) for name, value in headers]
    await send({"type": "http.response.start", "status": stream.status, "headers": start})
    async for chunk in invocation.chunks(container, stream, idle_seconds=idle_seconds, limit=limit):
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    async for _ in invocation.chunks(container, stream):
        pass


def preflight(cors: Mapping[str, Any] | None, request: Request) -> Answer | None:
    """The answer to a CORS preflight when the front door's CORS configuration says it answers them itself
    (HTTP API: https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html; Function URL:
    https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html#urls-cors); None sends the request on."""
    if not cors or request.method != "OPTIONS":
        return None
    origin = request.header("origin")
    if origin is None or request.header("access-control-request-method") is None:
        return None
    config = {str(key).lower(): value for key, value in cors.items()}
    headers: list[tuple[str, str]] = []
    origins = [str(value) for value in config.get("alloworigins") or ()]
    if "*" in origins or origin in origins:
        headers.append(("access-control-allow-origin", "*" if "*" in origins else origin))
        if config.get("allowmethods"):
            headers.append(("access-control-allow-methods", ",".join(config["allowmethods"])))
        if config.get("allowheaders"):
            headers.append(("access-control-allow-headers", ",".join(config["allowheaders"])))
        if config.get("maxage") is not None:
            headers.append(("access-control-max-age", str(config["maxage"])))
        if config.get("allowcredentials"):
            headers.append(("access-control-allow-credentials", "true"))
    return Answer(204, headers, b"")


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


_note: ContextVar[RequestNote | None] = ContextVar("stratus_local_note", default=None)


class FrontDoor(ABC):
    """An ASGI app playing one AWS front door."""

    kind = "front door"
    max_request_bytes = 10 * 1024 * 1024

    def __init__(self, logical_id: str, pools: Mapping[str, FunctionPool], *, remapped: tuple[str, ...] = ()) -> None:
        self.logical_id = logical_id
        self.pools = pools
        self.remapped = remapped
        """The function's response headers this door answers as `x-amzn-Remapped-<name>` (`REST_API_REMAPPED`,
        `REPORTED_REMAPPED`); the door's own answers keep theirs."""
        self.access_log: IO[bytes] | None = None
        """Where a line per request goes (`stratus.emulator.access_line`, ids in paths redacted); None: nowhere."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self.access_log is None:
            await self._serve(scope, receive, send)
            return
        status = 0
        started = time.monotonic()
        note = RequestNote()
        noting = _note.set(note)
        billing = billed_here.set(note.billed)

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            note.response(message)
            await send(message)

        try:
            await self._serve(scope, receive, watched)
        finally:
            billed_here.reset(billing)
            _note.reset(noting)
            took = (time.monotonic() - started) * 1000
            line = note.line(self.logical_id, scope["method"], redact_path(scope["path"]), status, took)
            self.access_log.write(f"{line}\n".encode())
            self.access_log.flush()

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, too_large = await read_limited(receive, self.max_request_bytes)
        if (note := _note.get()) is not None:
            note.request_body(body)
        # A field value's leading and trailing whitespace is not part of it (RFC 9110 section 5.5): AWS's front doors
        # parse HTTP that way, while the local server hands the raw bytes over.
        headers = tuple(
            (name.decode("latin-1").lower(), value.decode("latin-1").strip(" \t")) for name, value in scope["headers"]
        )
        gone = asyncio.ensure_future(_until_disconnected(receive))
        request = Request(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=body,
            domain=listening_address(scope),
            source_ip=(scope.get("client") or ("127.0.0.1", 0))[0],
            gone=gone,
        )
        try:
            if too_large:
                await send_answer(send, self.too_large())
                return
            await self.handle(request, send)
        finally:
            gone.cancel()

    def integration_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The function's response headers as this door answers them: `remapped` renamed."""
        return remap(headers, self.remapped) if self.remapped else headers

    @abstractmethod
    async def handle(self, request: Request, send: Send) -> None:
        """Answer `request` (its body already read)."""

    @abstractmethod
    def too_large(self) -> Answer:
        """The front door's own answer to a request over its payload limit."""
