"""`GET /health`: the process answers (the Lambda Web Adapter's readiness check, load balancers)."""

from __future__ import annotations

from core.transport.asgi import Receive, Scope, Send, send_response

_OK = b'{"status":"ok"}'


async def health(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_response(send, 405, b"", {"allow": "GET"})
        return
    await send_response(send, 200, _OK, {"content-type": "application/json", "cache-control": "no-store"})
