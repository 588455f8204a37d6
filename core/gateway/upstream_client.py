"""An MCP client of one upstream, in whichever protocol era it speaks, over any of the gateway's transports.

`connect` asks `server/discover` (2026-07-28) and, when the upstream does not know it, falls back to the
`initialize` handshake (2025-11-25 down to 2024-11-05), keeping the session it opens; an upstream may also be
pinned to a revision (stdio and HTTP+SSE upstreams always shake hands). While a request runs, what the
upstream sends about it goes to the caller's `UpstreamPeer`: notifications (progress, log messages) are passed
on, the upstream's own requests (sampling, elicitation, roots) are asked of the peer and its answer (or error)
sent back. A request that outlives the timeout, or whose caller is cancelled, is cancelled upstream too
(`notifications/cancelled` on the handshake wire; the stream is closed either way). Transport failures are
`UpstreamUnavailableError`; JSON-RPC errors the upstream answered are `UpstreamError` carrying them unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Protocol

from stratus.errors import HEADER_MISMATCH
from stratus.gateway.config import Upstream
from stratus.gateway.connectors.contract import (
    SessionLostError,
    UpstreamError,
    UpstreamTransport,
    UpstreamUnavailableError,
)
from stratus.gateway.connectors.streamable_http import StreamableHttpTransport
from stratus.gateway.demux import LIST_CHANGES, RESOURCE_UPDATED
from stratus.gateway.listening import ResourceInterest, listen
from stratus.net.addresses import AddressGuard
from stratus.protocol import versions
from stratus.protocol.mirrored_headers import parameter_headers
from stratus.tracing import TRACE_CONTEXT_KEYS, current_trace_context, upstream_span
from stratus.types import JsonObject
from stratus.version import __version__

__all__ = ["UpstreamClient", "UpstreamError", "UpstreamPeer", "UpstreamUnavailableError", "make_transport"]

CLIENT_INFO = {"name": "stratus-gateway", "version": __version__}
MAX_PAGES = 100
MAX_INPUT_ROUNDS = 10
"""How many times a 2026-07-28 upstream may answer `input_required` to one call before the gateway gives up."""
CANCEL_SEND_SECONDS = 2.0
"""How long a cancellation notice to the upstream may take before the gateway gives up on telling it."""


class UpstreamPeer(Protocol):
    """Whoever a request runs for: told the upstream's notifications, asked the upstream's requests."""

    @property
    def capabilities(self) -> JsonObject:
        """The client capabilities to declare upstream on a 2026-07-28 request (sampling, elicitation, roots)."""

    @property
    def wants_progress(self) -> bool:
        """Whether progress notifications are wanted (the upstream is given a progress token)."""

    @property
    def log_level(self) -> str | None:
        """The lowest level of log messages wanted (None: none), asked of a 2026-07-28 upstream in `_meta`."""

    async def notify(self, method: str, params: JsonObject) -> None:
        """An upstream notification about the request (progress, a log message, a list change)."""

    async def ask(self, method: str, params: JsonObject, key: str | None = None) -> JsonObject:
        """Answer an upstream request (`key`: the upstream's name for it, at 2026-07-28). Raises UpstreamError to
        answer it with that error; anything else it raises ends the request."""


def make_transport(upstream: Upstream, *, timeout: float, guard: AddressGuard | None = None) -> UpstreamTransport:
    """The transport an upstream's configuration names; an HTTP one connects only where `guard` allows (anywhere
    without one)."""
    serialize = not upstream.concurrent_calls
    if upstream.transport == "stdio":
        from stratus.gateway.connectors.stdio import StdioTransport

        return StdioTransport(
            upstream.command or "", upstream.args, upstream.env, timeout=timeout, serialize_calls=serialize
        )
    if upstream.transport == "websocket":
        from stratus.gateway.connectors.websocket import (
            WebSocketTransport,  # imports `websockets` only when one connects
        )

        return WebSocketTransport(
            upstream.url or "", upstream.headers, timeout=timeout, guard=guard, serialize_calls=serialize
        )
    if upstream.transport == "sse":
        from stratus.gateway.connectors.http_sse import HttpSseTransport

        return HttpSseTransport(
            upstream.url or "", upstream.headers, timeout=timeout, guard=guard, serialize_calls=serialize
        )
    return StreamableHttpTransport(upstream.url or "", upstream.headers, timeout=timeout, guard=guard)


class UpstreamClient:
    """One upstream, connected on first use of `connect`."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        timeout: float = 30.0,
        transport: UpstreamTransport | None = None,
        guard: AddressGuard | None = None,
    ) -> None:
        self.upstream = upstream
        self.timeout = timeout
        self.transport = transport or make_transport(upstream, timeout=timeout, guard=guard)
        self._ids = itertools.count(1)
        self.version: str | None = upstream.protocol_version
        self.server_info: JsonObject = {}
        self.capabilities: JsonObject = {}

    @property
    def stateless(self) -> bool:
        return self.version is not None and versions.is_stateless(self.version)

    @property
    def session_id(self) -> str | None:
        """The upstream session of a handshake-era Streamable HTTP upstream, if one is open."""
        return getattr(self.transport, "session_id", None)

    async def connect(self) -> None:
        """Find the upstream's era (unless pinned) and, for a handshake-era one, open its session."""
        try:
            await self.transport.open()
        except UpstreamUnavailableError as error:
            raise UpstreamUnavailableError(f"{self.upstream.name} {error}") from None
        if self.upstream.transport == "http" and (self.version is None or self.stateless):
            try:
                self._agree(versions.STATELESS_VERSIONS[0])
                found = await self.request("server/discover", {})
                if versions.STATELESS_VERSIONS[0] in found.get("supportedVersions", []):
                    self.server_info = found.get("_meta", {}).get(versions.SERVER_INFO_META, {})
                    self.capabilities = found.get("capabilities", {})
                    return
            except UpstreamError:
                if self.upstream.protocol_version is not None:
                    raise
            self._agree(None)
        await self._initialize()

    def _agree(self, version: str | None) -> None:
        self.version = version
        self.transport.protocol_version = version

    async def _initialize(self) -> None:
        asked = self.upstream.protocol_version or versions.LATEST_HANDSHAKE
        capabilities: JsonObject = {"sampling": {}, "elicitation": {}, "roots": {}}
        params = {"protocolVersion": asked, "capabilities": capabilities, "clientInfo": CLIENT_INFO}
        self.transport.protocol_version = None
        result = await self._exchange(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": params}, None
        )
        agreed = result.get("protocolVersion")
        if agreed not in versions.HANDSHAKE_VERSIONS:
            raise UpstreamUnavailableError(f"{self.upstream.name} agreed to no revision the gateway speaks: {agreed!r}")
        self._agree(agreed)
        self.server_info = result.get("serverInfo", {})
        self.capabilities = result.get("capabilities", {})
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def request(
        self, method: str, params: JsonObject, *, peer: UpstreamPeer | None = None, within: float | None = None
    ) -> JsonObject:
        """The upstream's result for `method` within `within` seconds (the client's timeout by default); what it
        sends meanwhile goes to `peer`.

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no usable answer in time.
        """
        target = params.get("name")
        with upstream_span(method, target if isinstance(target, str) else "", self.upstream.name):
            body = self._body(method, params, peer)
            try:
                return await self._exchange(body, peer, within)
            except SessionLostError:
                if method == "initialize":
                    raise
                await self._initialize()  # the upstream forgot the session before running anything: open another
                return await self._exchange(self._body(method, params, peer), peer, within)

    def _body(self, method: str, params: JsonObject, peer: UpstreamPeer | None) -> JsonObject:
        request_id = next(self._ids)
        sent: JsonObject = dict(params)
        meta: JsonObject = dict(params.get("_meta") or {})
        if peer is not None and peer.wants_progress:
            meta["progressToken"] = request_id  # only when asked: a token makes the upstream stream its answer
        if self.stateless:
            meta[versions.PROTOCOL_VERSION_META] = self.version
            meta[versions.CLIENT_CAPABILITIES_META] = peer.capabilities if peer is not None else {}
            meta[versions.CLIENT_INFO_META] = CLIENT_INFO
            if peer is not None and peer.log_level is not None:
                meta[versions.LOG_LEVEL_META] = peer.log_level
        for key in TRACE_CONTEXT_KEYS:  # the caller's context is the gateway's parent, not the upstream's
            meta.pop(key, None)
        meta.update(current_trace_context())
        if meta:
            sent["_meta"] = meta
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": sent}

    async def _exchange(self, body: JsonObject, peer: UpstreamPeer | None, within: float | None = None) -> JsonObject:
        finished = False
        limit = self.timeout if within is None else within
        try:
            # Closed here, not left to the garbage collector: a Lambda container's loop is not running then.
            async with asyncio.timeout(limit), contextlib.aclosing(self.transport.exchange(body)) as inbound:
                async for message in inbound:
                    if message.get("id") == body["id"] and ("result" in message or "error" in message):
                        finished = True
                        return self._result(message)
                    await self._relay(message, peer)
        except TimeoutError:
            raise UpstreamUnavailableError(
                f"{self.upstream.name} did not answer {body['method']} within {limit:g} s"
            ) from None
        except UpstreamUnavailableError as error:
            if isinstance(error, SessionLostError):
                raise
            raise UpstreamUnavailableError(f"{self.upstream.name} {error}") from None
        finally:
            if not finished:
                await self._cancel_upstream(body)
        raise UpstreamUnavailableError(f"{self.upstream.name} ended its stream without answering {body['method']}")

    async def _relay(self, message: JsonObject, peer: UpstreamPeer | None) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return  # a stray response: not ours
        sent = message.get("params")
        params: JsonObject = sent if isinstance(sent, dict) else {}
        if "id" not in message:
            if peer is not None:
                await peer.notify(method, params)
            return
        if peer is None:
            reply: JsonObject = {"error": {"code": -32601, "message": f"{method} is not available here"}}
        else:
            try:
                reply = {"result": await peer.ask(method, params)}
            except UpstreamError as refused:
                reply = {"error": refused.error}
        await self._send({"jsonrpc": "2.0", "id": message["id"], **reply})

    async def _cancel_upstream(self, body: JsonObject) -> None:
        """Tell a handshake-era upstream to stop a request the gateway no longer waits for (best effort)."""
        if self.stateless or body["method"] == "initialize":
            return
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": body["id"], "reason": "the gateway's caller stopped waiting"},
        }
        try:
            async with asyncio.timeout(CANCEL_SEND_SECONDS):
                await asyncio.shield(self._send(notice))
        except (TimeoutError, UpstreamUnavailableError, asyncio.CancelledError):
            pass

    async def _send(self, message: JsonObject) -> None:
        try:
            await self.transport.send(message)
        except SessionLostError:
            raise
        except UpstreamUnavailableError as error:
            raise UpstreamUnavailableError(f"{self.upstream.name} {error}") from None

    async def list_tools(self) -> list[JsonObject]:
        """Every page of the upstream's tools/list (a Streamable HTTP transport learns from it which parameters of
        each tool its calls mirror in `Mcp-Param-*` headers)."""
        tools = await self.list_all("tools/list", "tools")
        if isinstance(self.transport, StreamableHttpTransport):
            mirrored = {str(tool.get("name")): parameter_headers(tool) for tool in tools}
            self.transport.parameter_headers = {name: found for name, found in mirrored.items() if found}
        return tools

    async def list_all(self, method: str, key: str) -> list[JsonObject]:
        """Every page of a list method (`tools/list`, `prompts/list`, `resources/list`, ...), at most MAX_PAGES."""
        items: list[JsonObject] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self.request(method, {"cursor": cursor} if cursor else {})
            items += [item for item in page.get(key, []) if isinstance(item, dict)]
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return items

    async def call_tool(self, name: str, arguments: JsonObject, *, peer: UpstreamPeer | None = None) -> JsonObject:
        """The upstream's CallToolResult, `isError` results included, unchanged (see `request_with_inputs`)."""
        return await self.request_with_inputs("tools/call", {"name": name, "arguments": arguments}, peer=peer)

    async def request_with_inputs(
        self, method: str, params: JsonObject, *, peer: UpstreamPeer | None = None
    ) -> JsonObject:
        """`request`, for the methods whose handler may ask the client (`tools/call`, `prompts/get`,
        `resources/read`): a 2026-07-28 upstream that answers `input_required` has its questions asked of `peer`
        (each under the upstream's key) and the request sent again with every answer so far, up to
        MAX_INPUT_ROUNDS times."""
        sent = dict(params)
        answers: JsonObject = {}
        for _ in range(MAX_INPUT_ROUNDS):
            result = await self._request_mirroring(method, sent, peer)
            asked = result.get("inputRequests")
            if result.get("resultType") != "input_required" or peer is None or not isinstance(asked, dict):
                return result
            await self._answer_all(asked, answers, peer)
            sent = {**params, "inputResponses": dict(answers)}
            if isinstance(result.get("requestState"), str):
                sent["requestState"] = result["requestState"]
        raise UpstreamUnavailableError(f"{self.upstream.name} kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    async def _request_mirroring(self, method: str, params: JsonObject, peer: UpstreamPeer | None) -> JsonObject:
        """`request`; a `tools/call` a 2026-07-28 upstream refuses for its headers (`HeaderMismatch`, before it ran
        anything) is sent once more after listing the tools again, as the spec asks: the tool's `x-mcp-header`
        parameters were unknown (lists served from the shared cache) or changed."""
        try:
            return await self.request(method, params, peer=peer)
        except UpstreamError as error:
            if method != "tools/call" or not self.stateless or error.error.get("code") != HEADER_MISMATCH:
                raise
            if not isinstance(self.transport, StreamableHttpTransport):
                raise
        await self.list_tools()
        return await self.request(method, params, peer=peer)

    @staticmethod
    async def _answer_all(asked: JsonObject, answers: JsonObject, peer: UpstreamPeer) -> None:
        """Ask the peer every question of one round, even when one of them ends the peer's own round, so all of
        them reach its client together."""
        stopped: BaseException | None = None
        for key, question in asked.items():
            if not isinstance(question, dict) or not isinstance(question.get("method"), str):
                continue
            try:
                answers[key] = await peer.ask(question["method"], question.get("params") or {}, key)
            except Exception as error:  # noqa: BLE001 - re-raised below once every question was asked
                stopped = stopped or error
        if stopped is not None:
            raise stopped

    async def changes(self, interest: ResourceInterest | None = None) -> AsyncIterator[tuple[str, str | None]]:
        """What the upstream says changed, until the connection ends: `(kind, None)` for a list (`tools`,
        `prompts`, `resources`), `("updated", uri)` for a resource the gateway subscribed to. From a 2026-07-28
        upstream's `subscriptions/listen` streams (asking for the URIs of `interest`), else from what the
        transport receives about no request (a session's GET stream, stdio, the HTTP+SSE stream)."""
        source = listen(self, interest or ResourceInterest()) if self.stateless else self.transport.notifications()
        try:
            async for message in source:
                method = message.get("method")
                kind = LIST_CHANGES.get(method)  # type: ignore[arg-type]
                params = message.get("params")
                if kind is not None:
                    yield kind, None
                elif method == RESOURCE_UPDATED and isinstance(params, dict) and isinstance(params.get("uri"), str):
                    yield "updated", params["uri"]
        except (UpstreamError, UpstreamUnavailableError):
            return  # the upstream does not offer it, or went away: the watch ends

    async def close(self) -> None:
        """End the upstream session (handshake era) and release the connections or the process."""
        await self.transport.close()

    @staticmethod
    def _result(answer: JsonObject) -> JsonObject:
        if "error" in answer:
            error = answer["error"]
            raise UpstreamError(error if isinstance(error, dict) else {"code": -32603, "message": str(error)})
        result = answer.get("result")
        return result if isinstance(result, dict) else {}
