"""The ASGI vocabulary the transport needs, and the app that routes requests to the MCP endpoint by a dict of paths."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from stratus.types import ASGIApp, Receive, Scope, Send

Headers = Mapping[str, str]


def route_path(scope: Scope) -> str:
    """The request's path below the app's mount point. ASGI's `path` includes `root_path` (where a host such as
    Starlette's `Mount` or uvicorn's `--root-path` put the app); older hosts strip it themselves, so the prefix is
    removed only where it is there."""
    path: str = scope["path"]
    root = str(scope.get("root_path") or "").rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


HEADERS_READ = "stratus.headers"
"""A scope key a Lambda front door's reader may set: the request's headers already read by lower-case name, every
name and value ASCII (so reading the ASGI list again would give the same), which `request_headers` then copies."""


BUFFERED = "stratus.buffered_response"
"""The ASGI scope extension (`scope["extensions"]`) a Lambda front door's reader declares: the response is collected
and sent whole once it ends, and nothing tells the app that the client has gone. Without it the connection is live
(uvicorn, a host's server): a response may stream, and a disconnect is reported."""


def buffered_scope(scope: Scope) -> Scope:
    """`scope` declaring the `BUFFERED` extension (a front door's reader calls this once per event)."""
    extensions = scope.get("extensions")
    scope["extensions"] = {**extensions, BUFFERED: {}} if extensions else {BUFFERED: {}}
    return scope


def is_buffered(scope: Scope) -> bool:
    """Whether the response to `scope` is buffered (`BUFFERED`)."""
    extensions = scope.get("extensions")
    return extensions is not None and BUFFERED in extensions


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; repeated headers joined with ", " as HTTP allows."""
    read: dict[str, str] | None = scope.get(HEADERS_READ)
    if read is not None:
        return dict(read)
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers") or ():
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


async def send_response(send: Send, status: int, body: bytes, headers: Mapping[str, str]) -> None:
    """Send one complete HTTP response."""
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# No web framework: a Lambda cold start pays for every import (docs/benchmarks.md, what Starlette cost here).
class Router:
    """Routes HTTP requests by exact path (a trailing slash ignored) or path prefix, answers 404 elsewhere, and
    lifespan events."""

    def __init__(
        self,
        routes: Mapping[str, ASGIApp],
        *,
        prefixes: Mapping[str, ASGIApp] | None = None,
        on_shutdown: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.routes = {path.rstrip("/") or "/": app for path, app in routes.items()}
        self.prefixes = dict(prefixes or {})
        self.on_shutdown = on_shutdown

    async def shutdown(self) -> None:
        """Release what the app holds (store connections); run by the ASGI lifespan's shutdown."""
        if self.on_shutdown is not None:
            await self.on_shutdown()

    @contextlib.asynccontextmanager
    async def lifespan(self, host: object = None) -> AsyncIterator[None]:
        """This app's lifespan, for a host that mounts it: hosts such as Starlette and FastAPI do not pass lifespan
        events to mounted apps. Pass it as the host's `lifespan=`, or enter it from the host's own lifespan
        (`async with mcp.lifespan(): yield`); `host` (the host app, which Starlette passes) is unused. Nothing
        needs starting (the stores connect on first use); leaving it releases the store connections."""
        try:
            yield
        finally:
            await self.shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = route_path(scope)
        route = self.routes.get(path.rstrip("/") or "/") or next(
            (app for prefix, app in self.prefixes.items() if path.startswith(prefix)), None
        )
        if route is None:
            body = json.dumps({"error": "Not Found"}).encode()
            await send_response(send, 404, body, {"content-type": "application/json"})
            return
        await route(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # Stores are built with the app, once per process; shutdown releases their connections.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def until_disconnected(receive: Receive) -> None:
    """Return once the server reports the client gone (the request body already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
