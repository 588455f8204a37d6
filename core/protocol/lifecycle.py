"""The methods about the connection rather than the server's items: `server/discover` (2026-07-28), the
handshake-era `initialize` result, `ping`, `logging/setLevel` and resource subscriptions.

A `resources/subscribe` is refused as a `resources/read` of its URI would be (`check_readable`: an unknown URI, or
one the caller may not read), so no one learns when a resource they may not read changes and the session keeps
only URIs the server serves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from stratus.errors import InvalidParamsError
from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.capabilities import server_capabilities
from stratus.request.outbound import LOG_LEVELS
from stratus.server.hooks import ServerHooks
from stratus.server.server import McpServer
from stratus.stores.base import SessionStore
from stratus.types import JsonObject

LIST_TTL_MS = 300_000
"""How long a 2026-07-28 client may cache discovery and lists."""


class Lifecycle:
    def __init__(
        self,
        server: McpServer,
        hooks: ServerHooks,
        sessions: SessionStore,
        check_readable: Callable[[Call, str], Awaitable[None]],
    ) -> None:
        self.server = server
        self.hooks = hooks
        """Told of each subscription (a gateway passes it on to the upstream owning the resource)."""
        self.sessions = sessions
        self.check_readable = check_readable
        """Raises what a `resources/read` of the URI by the call's caller would, before reading (reads.py)."""

    def capabilities(self, *, stateless: bool, version: str | None = None) -> JsonObject:
        return server_capabilities(self.server, stateless=stateless, version=version)

    async def discover(self, call: Call) -> JsonObject:
        result: JsonObject = {
            "supportedVersions": list(versions.SUPPORTED_VERSIONS),
            "capabilities": self.capabilities(stateless=True),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    def initialize_result(self, version: str) -> JsonObject:
        result: JsonObject = {
            "protocolVersion": version,
            "capabilities": self.capabilities(stateless=False, version=version),
            "serverInfo": self.server.info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def ping(self, call: Call) -> JsonObject:
        return {}

    async def set_level(self, call: Call) -> JsonObject:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParamsError(f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        session = call.require_session()
        session.log_level = level
        await self.sessions.save(session)
        return {}

    async def subscribe(self, call: Call) -> JsonObject:
        uri = call.string_param("uri")
        session = call.require_session()
        await self.check_readable(call, uri)
        await self.hooks.subscribed(uri)
        if uri not in session.subscriptions:
            session.subscriptions.append(uri)
            await self.sessions.save(session)
        return {}

    async def unsubscribe(self, call: Call) -> JsonObject:
        uri = call.string_param("uri")
        session = call.require_session()
        if uri in session.subscriptions:
            session.subscriptions.remove(uri)
            await self.sessions.save(session)
            await self.hooks.unsubscribed(uri)
        return {}
