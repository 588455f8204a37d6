"""MCP over WebSocket, as a client: `ws://` and `wss://` upstreams, one JSON-RPC message per text frame, under
the `mcp` subprotocol.

The `websockets` library is imported when the first WebSocket upstream connects, never before: a deployment
without one pays nothing at cold start, and one with one needs the `stratus-mcp[websocket]` extra. One task reads
the socket and sorts every message to the request it is about (`Demux`), as on stdio. The connection is made
only to addresses the `AddressGuard` checked (the host's name is still the TLS server name), with no proxy, so a
name that answers differently later reaches nothing the guard refused; a cross-origin redirect is not followed.
When the socket closes, every waiting request and every later one fails with `UpstreamUnavailableError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from stratus.errors import UnencodableTextError
from stratus.gateway.connectors.contract import ERRORS, UpstreamUnavailableError, reason
from stratus.gateway.connectors.event_stream import json_object
from stratus.gateway.demux import Demux
from stratus.net.addresses import AddressGuard
from stratus.types import JsonObject

SUBPROTOCOL = "mcp"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
CONNECT_SECONDS = 5.0
logger = logging.getLogger("stratus.gateway")


class WebSocketTransport:
    """One WebSocket connection to an upstream, opened by `open` and closed by `close`."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        timeout: float,
        guard: AddressGuard | None = None,
        serialize_calls: bool = True,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.guard = guard
        self.max_message_bytes = max_message_bytes
        self.protocol_version: str | None = None
        self._socket: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._demux = Demux(serialize_calls=serialize_calls)
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        async with self._opening:
            self._demux.raise_if_ended()
            if self._socket is None:
                self._socket = await self._connect()
                self._reader = asyncio.create_task(self._read(self._socket), name="websocket-read")

    async def _connect(self) -> Any:
        try:
            from websockets.asyncio.client import connect
            from websockets.exceptions import InvalidHandshake
        except ImportError:
            raise UpstreamUnavailableError(
                "needs the websockets library for its ws:// URL: install stratus-mcp[websocket]"
            ) from None
        options: dict[str, Any] = {}
        try:
            if self.guard is not None:
                addresses = await self.guard.addresses(self.url)
                options["host"] = str(addresses[0])
                if urlsplit(self.url).scheme == "wss":
                    options["server_hostname"] = urlsplit(self.url).hostname
            socket = await connect(
                self.url,
                subprotocols=[SUBPROTOCOL],  # type: ignore[list-item]
                additional_headers=self.headers,
                proxy=None,
                open_timeout=min(self.timeout, CONNECT_SECONDS),
                max_size=self.max_message_bytes,
                **options,
            )
        except InvalidHandshake as error:
            raise UpstreamUnavailableError(f"refused the WebSocket handshake: {type(error).__name__}") from None
        except (TimeoutError, *ERRORS) as error:
            raise UpstreamUnavailableError(reason(error)) from None
        if socket.subprotocol != SUBPROTOCOL:
            await socket.close()
            raise UpstreamUnavailableError(f"did not agree to the {SUBPROTOCOL!r} WebSocket subprotocol")
        return socket

    def notifications(self) -> AsyncIterator[JsonObject]:
        """The upstream's list changes and resource updates, until the socket closes."""
        return self._demux.changes()

    def exchange(self, message: JsonObject) -> AsyncGenerator[JsonObject, None]:
        return self._demux.exchange(message, self.send)

    async def send(self, message: JsonObject) -> None:
        self._demux.raise_if_ended()
        if self._socket is None:
            raise UpstreamUnavailableError("is not connected")
        from websockets.exceptions import ConnectionClosed

        try:
            async with asyncio.timeout(self.timeout):
                await self._socket.send(json.dumps(message, ensure_ascii=False, separators=(",", ":")))
        except UnicodeEncodeError:  # by the socket, before a frame is written
            raise UnencodableTextError("the request") from None
        except TimeoutError:
            raise UpstreamUnavailableError(f"did not take a message within {self.timeout:g} s") from None
        except ConnectionClosed:
            raise UpstreamUnavailableError("closed the WebSocket") from None

    async def _read(self, socket: Any) -> None:
        """Sort every message the upstream sends to the request it is about, until the socket closes."""
        from websockets.exceptions import ConnectionClosed

        ended = "closed the WebSocket"
        try:
            async for frame in socket:
                message = json_object(frame)
                if message is None:
                    logger.debug("upstream sent a WebSocket message that is not a JSON object")
                elif (reply := self._demux.route(message)) is not None:
                    with contextlib.suppress(UpstreamUnavailableError):
                        await self.send(reply)
        except ConnectionClosed:
            ended = f"closed the WebSocket (code {socket.close_code})"
        finally:
            self._demux.fail(ended)

    async def close(self) -> None:
        socket, reader = self._socket, self._reader
        self._demux.fail("was closed")
        if socket is not None:
            with contextlib.suppress(TimeoutError, OSError):  # the connection is being dropped either way
                async with asyncio.timeout(CONNECT_SECONDS):
                    await socket.close()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
