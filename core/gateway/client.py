"""An MCP client of one upstream over Streamable HTTP, in whichever protocol era it speaks.

`connect` asks `server/discover` (2026-07-28) and, when the upstream does not know it, falls back to the
`initialize` handshake (2025-11-25 down to 2024-11-05), keeping the session it opens; an upstream may also be
pinned to a revision. Requests then carry what their era needs: the `_meta` envelope and mirrored `Mcp-*`
headers, or the session's headers. Answers may come as JSON or as an SSE stream (the response with our id is
taken from it). Every request is bounded by the timeout; transport failures are `UpstreamUnavailableError`,
JSON-RPC errors the upstream answered are `UpstreamError` carrying them unchanged. httpx is imported only here.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from core.gateway.config import Upstream
from core.protocol import versions

JsonObject = dict[str, Any]
CLIENT_INFO = {"name": "stratus-gateway", "version": "0.1.0"}
MAX_PAGES = 100
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class UpstreamError(Exception):
    """The upstream answered a JSON-RPC error; `error` is its error object, unchanged."""

    def __init__(self, error: JsonObject) -> None:
        super().__init__(str(error.get("message", "upstream error")))
        self.error = error


class UpstreamUnavailableError(Exception):
    """The upstream could not be reached, did not answer in time, or answered something that is not MCP."""


class UpstreamClient:
    """One upstream, connected on first use of `connect`."""

    def __init__(self, upstream: Upstream, *, timeout: float = 30.0, http: Any = None) -> None:
        import httpx

        self.upstream = upstream
        self.timeout = timeout
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)))
        self._errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError)
        self._ids = itertools.count(1)
        self.version: str | None = upstream.protocol_version
        self.session_id: str | None = None
        self.server_info: JsonObject = {}

    @property
    def modern(self) -> bool:
        return self.version is not None and versions.is_modern(self.version)

    async def connect(self) -> None:
        """Find the upstream's era (unless pinned) and, for a handshake-era one, open its session."""
        if self.version is None or self.modern:
            try:
                self.version = versions.MODERN_VERSIONS[0]
                found = await self.request("server/discover", {})
                if versions.MODERN_VERSIONS[0] in found.get("supportedVersions", []):
                    self.server_info = found.get("_meta", {}).get(versions.SERVER_INFO_META, {})
                    return
            except UpstreamError:
                if self.upstream.protocol_version is not None:
                    raise
            self.version = None
        await self._initialize()

    async def _initialize(self) -> None:
        asked = self.upstream.protocol_version or versions.LATEST_LEGACY
        params = {"protocolVersion": asked, "capabilities": {}, "clientInfo": CLIENT_INFO}
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": params}
        answer, headers = await self._post(body, {"mcp-protocol-version": asked})
        result = self._result(answer)
        agreed = result.get("protocolVersion")
        if agreed not in versions.LEGACY_VERSIONS:
            raise UpstreamUnavailableError(f"{self.upstream.name} agreed to no revision the gateway speaks: {agreed!r}")
        self.version, self.session_id = agreed, headers.get("mcp-session-id")
        self.server_info = result.get("serverInfo", {})
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._session_headers())

    async def request(self, method: str, params: JsonObject) -> JsonObject:
        """The upstream's result for `method`.

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no usable answer in time.
        """
        body: JsonObject = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": dict(params)}
        if self.modern:
            meta = {
                versions.PROTOCOL_VERSION_META: self.version,
                versions.CLIENT_CAPABILITIES_META: {},
                versions.CLIENT_INFO_META: CLIENT_INFO,
            }
            body["params"]["_meta"] = {**params.get("_meta", {}), **meta}
            headers = {"mcp-protocol-version": str(self.version), "mcp-method": method}
            named = params.get(_NAMED.get(method, ""))
            if isinstance(named, str):
                headers["mcp-name"] = named
        else:
            headers = self._session_headers()
        answer, _ = await self._post(body, headers)
        return self._result(answer)

    async def list_tools(self) -> list[JsonObject]:
        """Every page of the upstream's tools/list."""
        return await self.list_all("tools/list", "tools")

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

    async def call_tool(self, name: str, arguments: JsonObject) -> JsonObject:
        """The upstream's CallToolResult, `isError` results included, unchanged."""
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def close(self) -> None:
        """End the upstream session (handshake era) and release the connections."""
        try:
            if self.session_id is not None:
                await self.http.delete(self.upstream.url or "", headers=self._session_headers())
        except self._errors:
            pass  # the session expires on its own
        finally:
            self.session_id = None
            if self._owns_http:
                await self.http.aclose()

    def _session_headers(self) -> dict[str, str]:
        headers = {"mcp-protocol-version": str(self.version)}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        return headers

    async def _post(self, body: JsonObject, headers: dict[str, str]) -> tuple[JsonObject, dict[str, str]]:
        sent = {
            **self.upstream.headers,
            **headers,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        try:
            response = await self.http.post(self.upstream.url or "", content=json.dumps(body), headers=sent)
        except self._errors as error:
            raise UpstreamUnavailableError(f"{self.upstream.name} did not answer: {type(error).__name__}") from None
        received = {name.lower(): value for name, value in response.headers.items()}
        if "id" not in body:
            return {}, received  # a notification: 202, no body
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return _from_stream(response.text, body["id"], self.upstream.name), received
        try:
            answer = response.json()
        except ValueError:
            raise UpstreamUnavailableError(f"{self.upstream.name} answered HTTP {response.status_code}") from None
        if not isinstance(answer, dict) or ("result" not in answer and "error" not in answer):
            raise UpstreamUnavailableError(f"{self.upstream.name} answered HTTP {response.status_code}")
        return answer, received

    @staticmethod
    def _result(answer: JsonObject) -> JsonObject:
        if "error" in answer:
            error = answer["error"]
            raise UpstreamError(error if isinstance(error, dict) else {"code": -32603, "message": str(error)})
        result = answer.get("result")
        return result if isinstance(result, dict) else {}


def _from_stream(text: str, request_id: Any, upstream: str) -> JsonObject:
    """The JSON-RPC response to `request_id` among the events of an SSE body (notifications before it skipped)."""
    for block in text.split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.splitlines() if line.startswith("data:"))
        if not data:
            continue
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if (
            isinstance(message, dict)
            and message.get("id") == request_id
            and ("result" in message or "error" in message)
        ):
            return message
    raise UpstreamUnavailableError(f"{upstream} ended its stream without answering")
