"""The 2026-07-28 wire: every request is self-contained, described by its `_meta` and mirrored headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratus.errors import InvalidParamsError, InvalidRequestError, McpError, UnsupportedVersionError
from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.dispatch import Dispatcher
from stratus.protocol.jsonrpc import ClientResponse, Notification, parse_message, request_id_of, result_response
from stratus.request.http import HttpRequest
from stratus.server.principal import Principal
from stratus.server.server import McpServer
from stratus.server.tools import Tool
from stratus.transport.asgi import Headers
from stratus.transport.headers import check_stateless_headers
from stratus.transport.http_reply import ACCEPTED, Reply, error_reply


def request_meta_version(body: Any) -> Any:
    """The `_meta` protocol version of a decoded body, or None when it carries none (a handshake-era request)."""
    if isinstance(body, dict):
        params = body.get("params")
        if isinstance(params, dict):
            meta = params.get("_meta")
            if isinstance(meta, dict):
                return meta.get(versions.PROTOCOL_VERSION_META)
    return None


class StatelessTransport:
    """Answers 2026-07-28 POST bodies."""

    def __init__(self, dispatcher: Dispatcher, server: McpServer) -> None:
        self.dispatcher = dispatcher
        self.server = server
        """The served server: a tools/call mirrors its tool's declared parameter headers (`Mcp-Param-*`); a gateway
        rebuilds its tools as its upstreams change, so they are read per request."""

    async def post(self, body: Any, headers: Headers, http: HttpRequest, principal: Principal | None) -> Reply:
        """Answer one stateless POST body."""
        return await handle_stateless(body, headers, self.dispatcher, self.server.tools, http, principal)


async def handle_stateless(
    body: Any,
    headers: Headers,
    dispatcher: Dispatcher,
    tools: Mapping[str, Tool],
    http: HttpRequest,
    principal: Principal | None,
) -> Reply:
    """Answer one stateless POST body."""
    request_id = request_id_of(body)
    try:
        message = parse_message(body)
        if isinstance(message, Notification):
            return ACCEPTED
        if isinstance(message, ClientResponse):
            raise InvalidRequestError("Invalid request: clients do not send responses at 2026-07-28")
        meta = message.params.get("_meta")
        if not isinstance(meta, dict) or not isinstance(meta.get(versions.CLIENT_CAPABILITIES_META), dict):
            raise InvalidParamsError(
                f"Invalid params: _meta must carry {versions.PROTOCOL_VERSION_META} and "
                f"{versions.CLIENT_CAPABILITIES_META}",
                http_status=400,
            )
        version = meta.get(versions.PROTOCOL_VERSION_META)
        if not isinstance(version, str):
            raise InvalidParamsError(
                f"Invalid params: {versions.PROTOCOL_VERSION_META} must be a string", http_status=400
            )
        check_stateless_headers(headers, message.method, message.params, tools)
        if not versions.is_stateless(version):
            raise UnsupportedVersionError(version, list(versions.SUPPORTED_VERSIONS))
        client_info = meta.get(versions.CLIENT_INFO_META)
        call = Call(
            request=message,
            version=version,
            client_capabilities=meta[versions.CLIENT_CAPABILITIES_META],
            client_info=client_info if isinstance(client_info, dict) else None,
            http=http,
            principal=principal,
        )
        return Reply(200, result_response(message.id, await dispatcher.dispatch(call)))
    except McpError as error:
        return error_reply(request_id, error)
