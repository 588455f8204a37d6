"""Upstream items dressed as the server's own: tools, prompts, resources and templates whose work is a request to
the upstream that owns them, and the peer that carries an upstream's messages to the gateway's client.

A proxy keeps the upstream's definition (renamed when namespaced) and validates nothing itself: the upstream's
schema is the authority and its answer, `isError` results included, is passed on unchanged. The dispatcher and
the pipeline treat proxies like any registered item, so auth, middleware, rate limits, the breaker, timeouts and
metrics apply to them as to local tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from stratus.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from stratus.gateway.aggregate import RoutedTool
from stratus.gateway.upstream_client import UpstreamError
from stratus.request.inputs import InputRequired
from stratus.request.outbound import level_allows
from stratus.server.context import CLIENT_REQUESTS, Context
from stratus.server.policy import Access, ToolPolicy
from stratus.server.prompts import Prompt
from stratus.server.resources import Resource, ResourceTemplate, compile_template
from stratus.server.tools import Tool
from stratus.types import JsonObject

Forward = Callable[[str, str, JsonObject, Context | None], Awaitable[JsonObject]]
"""(upstream, method, params, context) -> the upstream's result: the gateway's one way to an upstream."""
ListChanged = Callable[[str, str], Awaitable[None]]
"""(upstream, kind): an upstream said its list of `kind` changed."""


# Errors about the request itself that the 2026-07-28 wire answers with HTTP 400; any other error is answered 200.
_BAD_REQUEST_CODES = frozenset({HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


class UpstreamCallError(McpError):
    """A JSON-RPC error an upstream answered, passed to the gateway's client with its code, message and data
    (and the HTTP status Stratus gives that code)."""

    def __init__(self, error: JsonObject) -> None:
        code = error.get("code")
        code = code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR
        status = 400 if code in _BAD_REQUEST_CODES else 200
        super().__init__(str(error.get("message", "upstream error")), data=error.get("data"), http_status=status)
        self.code = code


class ContextPeer:
    """An upstream request's peer: the gateway call's context (its client, its stream, its input round)."""

    def __init__(self, upstream: str, context: Context, list_changed: ListChanged) -> None:
        self.upstream = upstream
        self.context = context
        self.list_changed = list_changed

    @property
    def capabilities(self) -> JsonObject:
        wanted = set(CLIENT_REQUESTS.values())
        return {name: {} for name in self.context.client_capabilities if name in wanted}

    @property
    def wants_progress(self) -> bool:
        return self.context.outbound is not None and self.context.progress_token is not None

    @property
    def log_level(self) -> str | None:
        if self.context.outbound is None or not self.context.log_opted_in:
            return None
        return self.context.log_level or "debug"

    async def notify(self, method: str, params: JsonObject) -> None:
        context = self.context
        if method == "notifications/progress":
            progress = params.get("progress")
            if isinstance(progress, int | float):
                await context.report_progress(progress, params.get("total"), params.get("message"))
        elif method == "notifications/message":
            outbound, level = context.outbound, str(params.get("level", "info"))
            if outbound is not None and context.log_opted_in and level_allows(level, context.log_level):
                await outbound.notify(method, params)
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            await context.notify_resource_updated(params["uri"])
        elif method.startswith("notifications/") and method.endswith("/list_changed"):
            await self.list_changed(self.upstream, method.removeprefix("notifications/").removesuffix("/list_changed"))

    async def ask(self, method: str, params: JsonObject, key: str | None = None) -> JsonObject:
        if method not in CLIENT_REQUESTS:
            raise UpstreamError({"code": -32601, "message": f"Method not found: {method}"})
        try:
            return await self.context.ask(method, params, key=key)
        except InputRequired:
            raise  # a 2026-07-28 client answers in its next round; the upstream request ends here
        except McpError as refused:
            raise UpstreamError(refused.to_error()) from None


class ProxyTool(Tool):
    """An upstream's tool as the gateway lists it; a call goes to the upstream under the tool's own name."""

    def __init__(self, routed: RoutedTool, policy: ToolPolicy, forward: Forward) -> None:
        # No Python function stands behind a proxy, so Tool's signature machinery is not set up: its definition
        # and `x-mcp-header` parameters are filled in from the upstream's definition, where Tool reads them.
        definition = routed.definition
        self.routed = routed
        self.policy = policy
        self.task_support = None
        self.name = routed.name
        annotations = definition.get("annotations")
        self.annotations = annotations if isinstance(annotations, dict) else None  # `idempotent` reads them
        self._definition = definition
        self._forward = forward
        schema = definition.get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        self._header_parameters = {
            name: str(spec["x-mcp-header"])
            for name, spec in (properties or {}).items()
            if isinstance(spec, dict) and "x-mcp-header" in spec
        }

    def validate(self, arguments: JsonObject) -> dict[str, Any]:
        return dict(arguments)

    async def run(self, kwargs: dict[str, Any], context: Context) -> Any:
        params = {"name": self.routed.original, "arguments": kwargs}
        return await self._forward(self.routed.upstream, "tools/call", params, context)

    def result(self, value: Any) -> JsonObject:
        return without_envelope(value)


class ProxyPrompt(Prompt):
    """An upstream's prompt, named like its tools; getting it asks the upstream."""

    def __init__(self, upstream: str, original: str, definition: JsonObject, forward: Forward) -> None:
        self.upstream = upstream
        self.original = original
        self.name = str(definition["name"])
        self.description = str(definition.get("description", ""))
        self.definition = definition
        self.access = Access()
        self._forward = forward

    async def get(self, arguments: dict[str, Any], context: Context) -> JsonObject:
        params = {"name": self.original, "arguments": arguments}
        return without_envelope(await self._forward(self.upstream, "prompts/get", params, context))


class ProxyResource(Resource):
    """An upstream's resource under its own URI; reading it asks the upstream."""

    def __init__(self, upstream: str, definition: JsonObject, forward: Forward) -> None:
        self.upstream = upstream
        self.uri = str(definition["uri"])
        self.name = str(definition.get("name", self.uri))
        self.mime_type = definition.get("mimeType")
        self.definition = definition
        self.access = Access()
        self._forward = forward

    async def read(self, context: Context) -> list[JsonObject]:
        return await _read(self._forward, self.upstream, self.uri, context)


class ProxyTemplate(ResourceTemplate):
    """An upstream's resource template; a URI it produces is read from the upstream."""

    def __init__(self, upstream: str, definition: JsonObject, forward: Forward) -> None:
        self.upstream = upstream
        self.uri_template = str(definition["uriTemplate"])
        self.pattern, self.variables = compile_template(self.uri_template)
        self.name = str(definition.get("name", self.uri_template))
        self.mime_type = definition.get("mimeType")
        self.definition = definition
        self.access = Access()
        self._forward = forward

    async def read(self, uri: str, variables: dict[str, str], context: Context) -> list[JsonObject]:
        return await _read(self._forward, self.upstream, uri, context)


def without_envelope(result: JsonObject) -> JsonObject:
    """An upstream's result without what its own wire era added (`resultType`, the protocol's `_meta` keys such
    as the upstream's `serverInfo`): the gateway's dispatcher adds its own for its client's era."""
    kept = {key: value for key, value in result.items() if key != "resultType"}
    meta = kept.get("_meta")
    if isinstance(meta, dict):
        own = {key: value for key, value in meta.items() if not key.startswith(PROTOCOL_META_PREFIX)}
        if own:
            kept["_meta"] = own
        else:
            del kept["_meta"]
    return kept


PROTOCOL_META_PREFIX = "io.modelcontextprotocol/"


async def _read(forward: Forward, upstream: str, uri: str, context: Context) -> list[JsonObject]:
    result = await forward(upstream, "resources/read", {"uri": uri}, context)
    contents = result.get("contents")
    return [item for item in contents if isinstance(item, dict)] if isinstance(contents, list) else []
