"""MCP's Streamable HTTP as the gateway's client speaks it: one POST per message, answers as JSON or SSE.

It runs on the gateway's own lean HTTP/1.1 client (core/net/http11.py: a tenth of httpx's CPU per forwarded call);
its keep-alive connections are the upstream's pooled connection. Given an `AddressGuard`, every new connection's
addresses are checked; a refusal fails the exchange with a message naming the setting that allows it, while the
refused address (internal) goes to the log only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator

from stratus.gateway.connectors.contract import ERRORS, SessionLostError, UpstreamUnavailableError, reason
from stratus.gateway.connectors.event_stream import SseEvents, bounded_body, json_object, messages
from stratus.net.addresses import AddressGuard
from stratus.net.http11 import Http11Pool
from stratus.protocol import versions
from stratus.protocol.mirrored_headers import ParameterHeaders, mirrored_headers
from stratus.tracing import TRACE_CONTEXT_KEYS
from stratus.types import JsonObject


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
        """A handshake-era session's GET stream (none without a session, or when the upstream offers none). An
        upstream that ends the stream after an event id and a `retry:` (a poll, 2025-11-25) is polled again after
        that delay with `Last-Event-ID`, so nothing it published meanwhile is missed."""
        events = SseEvents()
        while self.session_id is not None:
            headers = {**self._headers({}), "accept": "text/event-stream"}
            del headers["content-type"]
            if events.last_id is not None:
                headers["last-event-id"] = events.last_id
            try:
                async with self.pool.request("GET", self.url, headers) as response:  # no timeout: idle is not failed
                    if response.status != 200:
                        return  # 405: the upstream keeps no stream for its sessions
                    async with contextlib.aclosing(messages(response.chunks(), events=events)) as inbound:
                        async for message in inbound:
                            if "id" not in message:
                                yield message
            except ERRORS:
                return  # the stream broke: the watcher ends, and the next use checks the connection
            if events.last_id is None or events.retry_ms is None:
                return  # ended without a place to come back from: the watcher ends
            await asyncio.sleep(events.retry_ms / 1000)

    async def send(self, message: JsonObject) -> None:
        try:
            async with (
                asyncio.timeout(self.timeout),
                self.pool.request("POST", self.url, self._headers(message), json.dumps(message).encode()) as response,
            ):
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
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict):  # the trace context in `_meta`, as headers too: the HTTP request's own parent
            headers.update((key, value) for key in TRACE_CONTEXT_KEYS if isinstance(value := meta.get(key), str))
        return headers
