"""RFC 9728 protected-resource metadata, served at the well-known path and at its MCP-path-qualified form."""

from __future__ import annotations

import json
from typing import Any

from stratus.transport.asgi import Receive, Scope, Send, send_response

WELL_KNOWN = "/.well-known/oauth-protected-resource"


class ProtectedResourceMetadata:
    """Answers GET with the metadata document; it is public, so any origin may read it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.body = json.dumps(document, separators=(",", ":")).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_response(send, 405, b"", {"allow": "GET"})
            return
        headers = {
            "content-type": "application/json",
            "access-control-allow-origin": "*",
            "cache-control": "max-age=3600",
        }
        await send_response(send, 200, self.body, headers)
