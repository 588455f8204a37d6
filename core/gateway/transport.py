"""How the gateway's upstream client moves JSON-RPC messages: the transport contract and Streamable HTTP.

A transport sends one request and yields what the upstream sends back about it, ending with the response: on
Streamable HTTP that is the POST's JSON body or its SSE stream (notifications and the upstream's own requests
first); on stdio and the HTTP+SSE (2024-11-05) transport it is the shared inbound stream, sorted by request. Anything
the client sends that expects no answer (notifications, the client's replies to the upstream's requests) goes
through `send`. Transport failures are `UpstreamUnavailableError`; a session the upstream no longer knows is
`SessionLostError`, so the client can open a new one and send again. Streamable HTTP runs on the gateway's own
lean HTTP/1.1 client (core/gateway/http11.py: a tenth of httpx's CPU per forwarded call); its keep-alive
connections are the upstream's pooled connection. Given an `AddressGuard`, the HTTP transports have every new
connection's addresses checked; a refusal fails the exchange with a message naming the setting that allows it,
while the refused address (internal) goes to the log only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Protocol

from stratus.gateway.addresses import AddressGuard, UpstreamAddressError
from stratus.gateway.event_stream import SseEventError, bounded_body, json_object, messages
from stratus.gateway.http11 import Http11Pool, HttpProtocolError, HttpRequestError
from stratus.gateway.mirror import ParameterHeaders, mirrored_headers
from stratus.protocol import versions

JsonObject = dict[str, Any]
ADDRESS_REFUSED = (
    "its address is not allowed (private, loopback, link-local or reserved; "
    "allow its network with STRATUS_GATEWAY_ALLOWED_NETWORKS)"
)
logger = logging.getLogger("stratus.gateway")


class UpstreamUnavailableError(Exception):
    """The upstream could not be reached, did not answer in time, or answered something that is not MCP."""


class UpstreamError(Exception):
    """The upstream answered a JSON-RPC error; `error` is its error object, unchanged."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "upstream error")))
        self.error = error


class SessionLostError(UpstreamUnavailableError):
    """The upstream no longer knows the session (HTTP 404 to a request carrying it): initialize again."""


class UpstreamTransport(Protocol):
    """The wire under one upstream client."""

    protocol_version: str | None
    """The revision agreed with the upstream; HTTP transports mirror it (and the era's headers) on requests."""

    def exchange(self, message: JsonObject) -> AsyncGenerator[JsonObject, None]:
        """Send a request; yield every message the upstream sends about it, the response to it last."""

    async def send(self, message: JsonObject) -> None:
        """Send a notification, or a reply to one of the upstream's requests."""

    def notifications(self) -> AsyncIterator[JsonObject]:
        """What the upstream sends about no request (its list changes), until the connection ends; nothing where
        the wire has no such channel."""

    async def open(self) -> None:
        """Get ready to exchange (start a process, open a stream); nothing for plain HTTP."""

    async def close(self) -> None:
        """End the session and release the connections or the process."""


ERRORS = (
    OSError,
    EOFError,
    HttpProtocolError,
    asyncio.LimitOverrunError,
    SseEventError,
    HttpRequestError,
    UpstreamAddressError,
)
"""What a failed or unreadable HTTP exchange raises (connection refused or reset, closed early, bad framing, an
oversized head or body, a request that cannot be written safely, an address the guard refused)."""


class StreamableHttpTransport:
    """MCP's Streamable HTTP, as a client, in either era: one POST per message, answers as JSON or SSE."""

    def __init__(self, url: str, headers: dict[str, str], *, timeout: float, guard: AddressGuard | None = None) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.protocol_version: str | None = None
        self.session_id: str | None = None
        self.parameter_headers: dict[str, ParameterHeaders] = {}
        """The upstream's tools whose parameters a 2026-07-28 `tools/call` mirrors in `Mcp-Param-*` headers."""
        self.pool = Http11Pool(url, connect_seconds=min(timeout, 5.0), guard=guard)

    async def open(self) -> None:
        return None

    async def exchange(self, message: JsonObject) -> AsyncGenerator[JsonObject, None]:
        try:
            async with self.pool.request(
                "POST", self.url, self._headers(message), json.dumps(message).encode()
            ) as response:
                headers = response.headers
                if message.get("method") == "initialize":
                    self.session_id = headers.get("mcp-session-id")
                if response.status == 404 and self.session_id and message.get("method") != "initialize":
                    self.session_id = None
                    raise SessionLostError("the upstream ended its session (HTTP 404)")
                if headers.get("content-type", "").startswith("text/event-stream"):
                    async with contextlib.aclosing(messages(response.chunks())) as inbound:
                        async for each in inbound:
                            yield each
                    return
                answer = json_object(await bounded_body(response.chunks()))
        except ERRORS as error:
            raise UpstreamUnavailableError(reason(error)) from None
        if answer is None or ("result" not in answer and "error" not in answer):
            raise UpstreamUnavailableError(f"answered HTTP {response.status} without a JSON-RPC response")
        yield answer

    async def notifications(self) -> AsyncIterator[JsonObject]:
        """A handshake-era session's GET stream (none without a session, or when the upstream offers none)."""
        if self.session_id is None:
            return
        headers = {**self._headers({}), "accept": "text/event-stream"}
        del headers["content-type"]
        try:
            async with self.pool.request("GET", self.url, headers) as response:  # no timeout: idle is not failed
                if response.status != 200:
                    return  # 405: the upstream keeps no stream for its sessions
                async with contextlib.aclosing(messages(response.chunks())) as inbound:
                    async for message in inbound:
                        if "id" not in message:
                            yield message
        except ERRORS:
            return  # the stream broke: the watcher ends, and the next use checks the connection

    async def send(self, message: JsonObject) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                async with self.pool.request(
                    "POST", self.url, self._headers(message), json.dumps(message).encode()
                ) as response:
                    await response.read()
        except TimeoutError:
            raise UpstreamUnavailableError(f"did not take a message within {self.timeout:g} s") from None
        except ERRORS as error:
            raise UpstreamUnavailableError(reason(error)) from None
        if response.status == 404 and self.session_id:
            self.session_id = None
            raise SessionLostError("the upstream ended its session (HTTP 404)")

    async def close(self) -> None:
        try:
            if self.session_id is not None:
                async with asyncio.timeout(min(self.timeout, 5.0)):
                    async with self.pool.request("DELETE", self.url, self._headers({})) as response:
                        await response.read()
        except (TimeoutError, *ERRORS):
            pass  # the session expires on its own
        finally:
            self.session_id = None
            await self.pool.aclose()

    def _headers(self, message: JsonObject) -> dict[str, str]:
        headers = {
            **self.headers,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        version = self.protocol_version
        if version is not None:
            headers["mcp-protocol-version"] = version
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if version is not None and versions.is_stateless(version):
            headers.update(mirrored_headers(message, self.parameter_headers))
        return headers


def reason(error: BaseException) -> str:
    """What a failed exchange tells the operator: an oversized message by its bound, a refused address as refused
    (the address itself is logged, never told: it may be internal), anything else by its kind."""
    if isinstance(error, UpstreamAddressError):
        logger.warning("upstream address refused", extra={"reason": str(error)})
        return ADDRESS_REFUSED
    if isinstance(error, HttpRequestError):
        return f"could not be sent the request: {error}"
    if isinstance(error, SseEventError):
        return str(error)
    return f"did not answer: {type(error).__name__}"
