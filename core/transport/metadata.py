"""RFC 9728 protected-resource metadata, served at the well-known path and at its MCP-path-qualified form.

A deployment has one OAuth resource, `STRATUS_AUTH_AUDIENCE`, the URL of one front door. RFC 9728 section 3.3 has a
client reject a document whose `resource` is not the URL it derived the metadata URL from, so the document is
served only on that URL's host: another front door of the same function (the Function URL of a stack whose OAuth
front door is its REST API, say) answers 404 naming the resource, instead of a document that names another URL.
Local hosts are always served (development, and `stratus local`, whose front doors all listen on 127.0.0.1).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from stratus.transport.asgi import request_headers, send_response
from stratus.transport.http_guards import LOCAL_HOSTS
from stratus.types import Receive, Scope, Send

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _hostname(value: str) -> str:
    """The host of a Host header value or URL authority, lower-cased, without port or IPv6 brackets."""
    return (urlsplit(f"//{value.strip()}").hostname or "").lower()


class ProtectedResourceMetadata:
    """Answers GET with the metadata document on the resource's host; it is public, so any origin may read it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.body = json.dumps(document, separators=(",", ":")).encode()
        self.resource = str(document["resource"])
        self._host = _hostname(urlsplit(self.resource).netloc)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_response(send, 405, b"", {"allow": "GET"})
            return
        headers = {"content-type": "application/json", "access-control-allow-origin": "*"}
        if not self._serves(request_headers(scope).get("host")):
            message = (
                f"Not Found: this URL is not this server's OAuth protected resource, {self.resource} is "
                "(STRATUS_AUTH_AUDIENCE: one OAuth front door per deployment)"
            )
            await send_response(send, 404, json.dumps({"error": message}).encode(), headers)
            return
        await send_response(send, 200, self.body, {**headers, "cache-control": "max-age=3600"})

    def _serves(self, host: str | None) -> bool:
        if host is None:
            return True
        name = _hostname(host)
        return name == self._host or name in LOCAL_HOSTS or f"[{name}]" in LOCAL_HOSTS
