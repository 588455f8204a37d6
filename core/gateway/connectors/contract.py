"""What every upstream connector promises the gateway's client: the transport contract and its errors.

A transport sends one request and yields what the upstream sends back about it, ending with the response: on
Streamable HTTP that is the POST's JSON body or its SSE stream (notifications and the upstream's own requests
first); on stdio and the HTTP+SSE (2024-11-05) transport it is the shared inbound stream, sorted by request. Anything
the client sends that expects no answer (notifications, the client's replies to the upstream's requests) goes
through `send`. Transport failures are `UpstreamUnavailableError`; a session the upstream no longer knows is
`SessionLostError`, so the client can open a new one and send again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Protocol

from stratus.gateway.connectors.event_stream import SseEventError
from stratus.net.addresses import UpstreamAddressError
from stratus.net.http11 import HttpProtocolError, HttpRequestError
from stratus.types import JsonObject

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
