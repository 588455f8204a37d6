"""The streaming Lambda entry point: uvicorn behind the AWS Lambda Web Adapter in response-stream mode.

`run.sh` (the function's handler) starts this module; the adapter (a layer, started by
`AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap`) forwards each invocation to it over HTTP on 127.0.0.1 and streams the
response back, so SSE reaches the client as it is written. The app, its stores and its telemetry are built once,
when the container starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from stratus import McpServer, Settings, build_app
from stratus.handlers.loading import load_served
from stratus.handlers.secrets import settings_from_env
from stratus.handlers.serving import serve
from stratus.handlers.task_worker import task_launcher
from stratus.handlers.telemetry import build_telemetry
from stratus.types import ASGIApp, Receive, Scope, Send

DEFAULT_PORT = 8080  # the adapter's default AWS_LWA_PORT


def adapter_port() -> int:
    """The port the adapter forwards to (`AWS_LWA_PORT`)."""
    return int(os.environ.get("AWS_LWA_PORT", DEFAULT_PORT))


def serve_for_adapter(
    server: McpServer, settings: Settings, *, host: str = "127.0.0.1", port: int | None = None
) -> None:
    """Run the app as the adapter expects it: its telemetry, its lifespan, uvicorn on the adapter's port."""
    metrics, flush = build_telemetry(settings, server.name)
    app = build_app(server, settings, metrics=metrics, task_launcher=task_launcher(settings))
    served = flushing_after_each_request(app, flush)
    serve(served, settings, host=host, port=port or adapter_port(), lifespan="on")


def flushing_after_each_request(app: ASGIApp, flush: Callable[[], None]) -> ASGIApp:
    """`app`, writing its metrics after each HTTP request (one Lambda invocation behind the adapter), so their data
    points never pile up in a long-lived container."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                flush()

    return served


def main() -> None:
    settings = settings_from_env()
    serve_for_adapter(load_served(settings), settings)


if __name__ == "__main__":
    main()
