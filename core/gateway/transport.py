"""How the gateway's upstream client moves JSON-RPC messages: the transport contract and Streamable HTTP.

A transport sends one request and yields what the upstream sends back about it, ending with the response: on
Streamable HTTP that is the POST's JSON body or its SSE stream (notifications and the upstream's own requests
first); on stdio and the legacy HTTP+SSE transport it is the shared inbound stream, sorted by request. Anything
the client sends that expects no answer (notifications, the client's replies to the upstream's requests) goes
through `send`. Transport failures are `UpstreamUnavailableError`; a session the upstream no longer knows is
`SessionLostError`, so the client can open a new one and send again. httpx is imported only when a Streamable
HTTP transport is built.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Protocol

from core.protocol import versions

JsonObject = dict[str, Any]
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class UpstreamUnavailableError(Exception):
    """The upstream could not be reached, did not answer in time, or answered something that is not MCP."""


class SessionLostError(UpstreamUnavailableError):
    """The upstream no longer knows the session (HTTP 404 to a request carrying it): initialize again."""


class UpstreamTransport(Protocol):
    """The wire under one upstream client."""

    protocol_version: str | None
    """The revision agreed with the upstream; HTTP transports mirror it (and the era's headers) on requests."""

    def exchange(self, message: JsonObject) -> AsyncIterator[JsonObject]:
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


class SseEvents:
    """Turns an SSE body, fed line by line, into the JSON objects its events carry (other events skipped)."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> JsonObject | None:
        """The message an event carries once `line` ends it (a blank line), else None."""
        if line == "":
            data, self._data = self._data, []
            return _json_object("\n".join(data)) if data else None
        if line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        return None

    def end(self) -> JsonObject | None:
        """The last event, if the body ended without the blank line that closes it."""
        return self.feed("")


def _json_object(text: str) -> JsonObject | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class StreamableHttpTransport:
    """MCP's Streamable HTTP, as a client, in either era: one POST per message, answers as JSON or SSE."""

    def __init__(self, url: str, headers: dict[str, str], *, timeout: float, http: Any = None) -> None:
        import httpx

        self.url = url
        self.headers = headers
        self.protocol_version: str | None = None
        self.session_id: str | None = None
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))
        self._errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError)
        self._stream_timeout = httpx.Timeout(timeout, read=None)  # an idle GET stream is not a failure

    async def open(self) -> None:
        return None

    async def exchange(self, message: JsonObject) -> AsyncIterator[JsonObject]:
        try:
            async with self.http.stream(
                "POST", self.url, content=json.dumps(message), headers=self._headers(message)
            ) as response:
                self._note_session(message, response.headers)
                if response.status_code == 404 and self.session_id and message.get("method") != "initialize":
                    self.session_id = None
                    raise SessionLostError("the upstream ended its session (HTTP 404)")
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    events = SseEvents()
                    async for line in response.aiter_lines():
                        if (event := events.feed(line)) is not None:
                            yield event
                    if (event := events.end()) is not None:
                        yield event
                    return
                answer = _json_object((await response.aread()).decode("utf-8", "replace"))
        except self._errors as error:
            raise UpstreamUnavailableError(f"did not answer: {type(error).__name__}") from None
        if answer is None or ("result" not in answer and "error" not in answer):
            raise UpstreamUnavailableError(f"answered HTTP {response.status_code} without a JSON-RPC response")
        yield answer

    async def notifications(self) -> AsyncIterator[JsonObject]:
        """A handshake-era session's GET stream (none without a session, or when the upstream offers none)."""
        if self.session_id is None:
            return
        headers = {key: value for key, value in self._headers({}).items() if key != "content-type"}
        headers["accept"] = "text/event-stream"
        try:
            async with self.http.stream("GET", self.url, headers=headers, timeout=self._stream_timeout) as response:
                if response.status_code != 200:
                    return  # 405: the upstream keeps no stream for its sessions
                events = SseEvents()
                async for line in response.aiter_lines():
                    if (event := events.feed(line)) is not None and "id" not in event:
                        yield event
        except self._errors:
            return  # the stream broke: the watcher ends, and the next use checks the connection

    async def send(self, message: JsonObject) -> None:
        try:
            response = await self.http.post(self.url, content=json.dumps(message), headers=self._headers(message))
        except self._errors as error:
            raise UpstreamUnavailableError(f"did not answer: {type(error).__name__}") from None
        if response.status_code == 404 and self.session_id:
            self.session_id = None
            raise SessionLostError("the upstream ended its session (HTTP 404)")

    async def close(self) -> None:
        try:
            if self.session_id is not None:
                await self.http.delete(self.url, headers=self._headers({}))
        except self._errors:
            pass  # the session expires on its own
        finally:
            self.session_id = None
            if self._owns_http:
                await self.http.aclose()

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
        method = message.get("method")
        if version is not None and versions.is_modern(version) and isinstance(method, str):
            headers["mcp-method"] = method
            named = (message.get("params") or {}).get(_NAMED.get(method, ""))
            if isinstance(named, str):
                headers["mcp-name"] = named
        return headers

    def _note_session(self, message: JsonObject, headers: Any) -> None:
        if message.get("method") == "initialize":
            self.session_id = headers.get("mcp-session-id")
