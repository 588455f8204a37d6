"""Warm ASGI latency child of bench/run.py: `python bench/asgi_warm.py SUBJECT CALLS WARMUP`.

Drives SUBJECT's ASGI app (asgi_apps.py) in-process, no HTTP server and no Lambda adapter: each call builds the
HTTP scope of the benchmark's tools/call and awaits the app. `stratus-legacy` opens a 2025-11-25 session first
and calls inside it. The SDK and FastMCP apps get their lifespan started first, as a server would. Prints one
Python literal with the median and p99 (us).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import asgi_apps
import wire
from lifespan_once import start_lifespan

Headers = list[tuple[bytes, bytes]]


def _scope(headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(name.encode(), value.encode()) for name, value in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("localhost", 80),
        "state": {},
    }


async def call(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, dict[bytes, bytes]]:
    """One request to the app: its status and response headers (the body is read and dropped)."""
    delivered = False
    status, headers = 0, {}

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never leaves while the app answers
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], dict(message.get("headers", []))

    await app(scope, receive, send)
    return status, headers


async def main() -> None:
    subject, calls, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    app = getattr(asgi_apps, "stratus" if subject == "stratus-legacy" else subject)
    if subject in ("sdk", "fastmcp"):
        await start_lifespan(app)
    scope, body = _scope(wire.STATELESS_HEADERS), wire.STATELESS_CALL_BODY.encode()
    if subject == "stratus-legacy":
        _, opened = await call(app, _scope(wire.BASE_HEADERS), wire.HANDSHAKE_INITIALIZE_BODY.encode())
        session = wire.handshake_headers(opened[b"mcp-session-id"].decode())
        await call(app, _scope(session), wire.HANDSHAKE_INITIALIZED_BODY.encode())
        scope, body = _scope(session), wire.HANDSHAKE_CALL_BODY.encode()
    status, _ = await call(app, scope, body)
    if status != 200:
        raise SystemExit(f"{subject} answered {status}")
    for _ in range(warmup):
        await call(app, scope, body)
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await call(app, scope, body)
        samples.append((time.perf_counter_ns() - start) / 1e3)
    samples.sort()
    print(repr({"median_us": statistics.median(samples), "p99_us": samples[int(len(samples) * 0.99)]}))


if __name__ == "__main__":
    asyncio.run(main())
