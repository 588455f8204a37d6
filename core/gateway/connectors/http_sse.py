"""MCP's HTTP+SSE transport of 2024-11-05, as a client: a GET opens the stream every upstream message arrives on.

The stream's first event, `endpoint`, names the URL to POST messages to (relative to the stream's URL, or
absolute); one on another origin (scheme, host, port) is refused, so an upstream cannot point the gateway's
requests, and the headers configured for it, at another host. Every later `message` event carries one JSON-RPC
message, sorted to the request it is about (`Demux`). Lines and events are bounded in size; `open` waits at most
the timeout for the endpoint. When the stream ends, every waiting request and every later one fails with
`UpstreamUnavailableError`. It runs on the gateway's HTTP/1.1 client (core/net/http11.py), which never
follows redirects and, given an `AddressGuard`, checks the addresses of the stream's connection and of every one a
message is posted on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from urllib.parse import urljoin, urlsplit

from stratus.gateway.connectors.contract import ERRORS, UpstreamUnavailableError, reason
from stratus.gateway.connectors.event_stream import SseEvents, bounded_body, bounded_lines, json_object
from stratus.gateway.demux import Demux
from stratus.net.addresses import AddressGuard, redacted
from stratus.net.http11 import Http11Pool
from stratus.types import JsonObject

CLOSE_SECONDS = 2.0

logger = logging.getLogger("stratus.gateway")


class HttpSseTransport:
    """One upstream stream, opened by `open` and closed by `close`; requests are POSTed to its endpoint."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        timeout: float,
        guard: AddressGuard | None = None,
        serialize_calls: bool = True,
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.protocol_version: str | None = None
        self.endpoint: str | None = None
        self.pool = Http11Pool(url, connect_seconds=min(timeout, 5.0), guard=guard)
        """The stream holds one connection (it may idle between events as long as no request waits: each request
        has its own timeout); messages are posted on others."""
        self._demux = Demux(serialize_calls=serialize_calls)
        self._reader: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        async with self._opening:
            self._demux.raise_if_ended()
            if self.endpoint is not None:
                return
            found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._reader = asyncio.create_task(self._listen(found), name=f"http-sse-{redacted(self.url)}")
            try:
                async with asyncio.timeout(self.timeout):
                    await found
            except TimeoutError:
                await self._stop_listening(f"sent no endpoint within {self.timeout:g} s")
                raise UpstreamUnavailableError(f"sent no endpoint within {self.timeout:g} s") from None
            except BaseException:  # refused, or the caller cancelled: the stream is of no use
                await self._stop_listening("was not opened")
                raise

    def notifications(self) -> AsyncIterator[JsonObject]:
        """The upstream's list changes, until the stream ends."""
        return self._demux.changes()

    def exchange(self, message: JsonObject) -> AsyncGenerator[JsonObject, None]:
        return self._demux.exchange(message, self._post)

    async def send(self, message: JsonObject) -> None:
        self._demux.raise_if_ended()
        await self._post(message)

    async def close(self) -> None:
        try:
            await self._stop_listening("was closed")
        finally:
            await self.pool.aclose()

    async def _stop_listening(self, reason: str) -> None:
        self._demux.fail(reason)
        reader = self._reader
        if reader is not None and not reader.done():
            reader.cancel()
            await asyncio.wait([reader], timeout=CLOSE_SECONDS)

    async def _post(self, message: JsonObject) -> None:
        if self.endpoint is None:
            raise UpstreamUnavailableError("is not connected")
        headers = {**self.headers, "content-type": "application/json"}
        try:
            async with asyncio.timeout(self.timeout):
                async with self.pool.request("POST", self.endpoint, headers, json.dumps(message).encode()) as answer:
                    body = await bounded_body(answer.chunks())
        except TimeoutError:
            raise UpstreamUnavailableError(f"did not take a message within {self.timeout:g} s") from None
        except ERRORS as error:
            raise UpstreamUnavailableError(reason(error)) from None
        if not 200 <= answer.status < 300:
            raise UpstreamUnavailableError(f"answered HTTP {answer.status} to a message")
        if answer.headers.get("content-type", "").startswith("application/json"):
            self._demux.route_response(json_object(body))  # some servers answer in the POST as well

    async def _listen(self, found: asyncio.Future[str]) -> None:
        """Read the stream: the endpoint first, then every message, until it ends (or `close` cancels it)."""
        ended = "ended its event stream"
        try:
            async with self.pool.request("GET", self.url, {**self.headers, "accept": "text/event-stream"}) as response:
                if response.status != 200:
                    raise UpstreamUnavailableError(f"answered HTTP {response.status} to the event stream request")
                events = SseEvents()
                async for line in bounded_lines(response.chunks()):  # ends with the stream
                    event = events.feed(line)
                    if event is None:
                        continue
                    name, data = event
                    if name == "endpoint" and not found.done():
                        self.endpoint = self._same_origin(data)
                        found.set_result(self.endpoint)
                    elif name == "message" and found.done():
                        await self._route(data)
        except UpstreamUnavailableError as error:
            ended = str(error)
        except ERRORS as error:
            ended = reason(error)
        finally:
            if not found.done():
                found.set_exception(UpstreamUnavailableError(ended))
            self._demux.fail(ended)

    async def _route(self, data: str) -> None:
        message = json_object(data)
        if message is None:
            logger.debug("upstream sent an event that is not a JSON object", extra={"gateway_url": redacted(self.url)})
        elif (reply := self._demux.route(message)) is not None:
            try:
                await self._post(reply)
            except UpstreamUnavailableError:
                logger.debug("upstream could not be answered", extra={"gateway_url": redacted(self.url)})

    def _same_origin(self, endpoint: str) -> str:
        """The endpoint resolved against the stream's URL, if it is on the stream's origin.

        Raises:
            UpstreamUnavailableError: it is on another origin (or not a URL).
        """
        try:
            resolved = urljoin(self.url, endpoint.strip())
            if _origin(resolved) != _origin(self.url):
                raise UpstreamUnavailableError("named an endpoint on another origin")
        except ValueError:
            raise UpstreamUnavailableError("named an endpoint that is not a URL") from None
        return resolved


def _origin(url: str) -> tuple[str, str | None, int | None]:
    """Scheme, host and port (the scheme's default when none is given).

    Raises:
        ValueError: the port is not a number.
    """
    parts = urlsplit(url)
    return (parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme))
