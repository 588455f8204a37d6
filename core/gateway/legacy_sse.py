"""MCP's HTTP+SSE transport of 2024-11-05, as a client: a GET opens the stream every upstream message arrives on.

The stream's first event, `endpoint`, names the URL to POST messages to (relative to the stream's URL, or
absolute); one on another origin (scheme, host, port) is refused, so an upstream cannot point the gateway's
requests, and the headers configured for it, at another host. Every later `message` event carries one JSON-RPC
message, sorted to the request it is about (`Demux`). Lines and events are bounded in size; `open` waits at most
the timeout for the endpoint. When the stream ends, every waiting request and every later one fails with
`UpstreamUnavailableError`. httpx is imported only when a transport is built; redirects are never followed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from core.gateway.demux import Demux
from core.gateway.event_stream import SseEventError, SseEvents, bounded_body, bounded_lines, json_object
from core.gateway.transport import UpstreamUnavailableError

if TYPE_CHECKING:
    import httpx

JsonObject = dict[str, Any]
CLOSE_SECONDS = 2.0

logger = logging.getLogger("stratus.gateway")


class LegacySseTransport:
    """One upstream stream, opened by `open` and closed by `close`; requests are POSTed to its endpoint."""

    def __init__(self, url: str, headers: dict[str, str], *, timeout: float, http: Any = None) -> None:
        import httpx

        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.protocol_version: str | None = None
        self.endpoint: str | None = None
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))
        self._stream_timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0), read=None)
        """The stream may idle between events for as long as no request waits; each request has its timeout."""
        self._errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError)
        self._url_type = httpx.URL
        self._demux = Demux()
        self._reader: asyncio.Task[None] | None = None
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        async with self._opening:
            self._demux.raise_if_ended()
            if self.endpoint is not None:
                return
            found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._reader = asyncio.create_task(self._listen(found), name=f"legacy-sse-{self.url}")
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

    async def exchange(self, message: JsonObject) -> AsyncIterator[JsonObject]:
        with self._demux.expecting(message.get("id")) as inbox:
            await self._post(message)
            async for inbound in inbox.messages():
                yield inbound

    async def send(self, message: JsonObject) -> None:
        self._demux.raise_if_ended()
        await self._post(message)

    async def close(self) -> None:
        try:
            await self._stop_listening("was closed")
        finally:
            if self._owns_http:
                await self.http.aclose()

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
            async with self.http.stream("POST", self.endpoint, content=json.dumps(message), headers=headers) as answer:
                if not 200 <= answer.status_code < 300:
                    raise UpstreamUnavailableError(f"answered HTTP {answer.status_code} to a message")
                if answer.headers.get("content-type", "").startswith("application/json"):
                    body = await bounded_body(answer.aiter_bytes())
                    self._demux.route_response(json_object(body))  # some servers answer in the POST as well
        except SseEventError as error:
            raise UpstreamUnavailableError(str(error)) from None
        except self._errors as error:
            raise UpstreamUnavailableError(f"did not answer: {type(error).__name__}") from None

    async def _listen(self, found: asyncio.Future[str]) -> None:
        """Read the stream: the endpoint first, then every message, until it ends (or `close` cancels it)."""
        reason = "ended its event stream"
        try:
            async with self.http.stream(
                "GET", self.url, headers={**self.headers, "accept": "text/event-stream"}, timeout=self._stream_timeout
            ) as response:
                if response.status_code != 200:
                    raise UpstreamUnavailableError(f"answered HTTP {response.status_code} to the event stream request")
                events = SseEvents()
                async for line in bounded_lines(response.aiter_bytes()):  # ends with the stream
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
            reason = str(error)
        except SseEventError as error:
            reason = str(error)
        except self._errors as error:
            reason = f"did not answer: {type(error).__name__}"
        finally:
            if not found.done():
                found.set_exception(UpstreamUnavailableError(reason))
            self._demux.fail(reason)

    async def _route(self, data: str) -> None:
        message = json_object(data)
        if message is None:
            logger.debug("upstream sent an event that is not a JSON object", extra={"gateway_url": self.url})
        elif (reply := self._demux.route(message)) is not None:
            try:
                await self._post(reply)
            except UpstreamUnavailableError:
                logger.debug("upstream could not be answered", extra={"gateway_url": self.url})

    def _same_origin(self, endpoint: str) -> str:
        """The endpoint resolved against the stream's URL, if it is on the stream's origin.

        Raises:
            UpstreamUnavailableError: it is on another origin (or not a URL).
        """
        stream = self._url_type(self.url)
        try:
            resolved = stream.join(endpoint.strip())
        except ValueError:
            raise UpstreamUnavailableError("named an endpoint that is not a URL") from None
        if _origin(resolved) != _origin(stream):
            raise UpstreamUnavailableError("named an endpoint on another origin")
        return str(resolved)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, url.port or default)
