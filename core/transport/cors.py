"""CORS for browser clients on another origin: preflights answered, and the headers a page may read exposed.

Which origins may call is the Host/Origin guard's decision (localhost and the request's own origin, plus
`STRATUS_ALLOWED_ORIGINS`); this only tells the browser what the guard already allowed.
"""

from __future__ import annotations

from stratus.transport.asgi import Headers
from stratus.types import Message, Scope, Send

ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
EXPOSED_HEADERS = "mcp-session-id, mcp-protocol-version, retry-after, www-authenticate"
PREFLIGHT_MAX_AGE_SECONDS = 600


def is_preflight(scope: Scope, headers: Headers) -> bool:
    return scope["method"] == "OPTIONS" and "origin" in headers and "access-control-request-method" in headers


def preflight_headers(headers: Headers) -> dict[str, str]:
    """The answer to an allowed preflight (its Origin already checked): the methods, the requested headers."""
    return {
        "access-control-allow-origin": headers["origin"],
        "access-control-allow-methods": ALLOWED_METHODS,
        "access-control-allow-headers": headers.get("access-control-request-headers", ""),
        "access-control-max-age": str(PREFLIGHT_MAX_AGE_SECONDS),
        "vary": "origin",
    }


def exposing_to(origin: str, send: Send) -> Send:
    """`send`, with the CORS headers of an allowed cross-origin request added to the response's start."""
    extra = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
        (b"vary", b"origin"),
    ]

    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return send_with_cors
