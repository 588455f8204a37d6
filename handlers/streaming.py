"""The streaming Lambda entry point: uvicorn behind the AWS Lambda Web Adapter in response-stream mode.

`run.sh` (the function's handler) starts this module; the adapter (a layer, started by
`AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap`) forwards each invocation to it over HTTP on 127.0.0.1 and streams the
response back, so SSE reaches the client as it is written. The app, its stores and its telemetry are built once,
when the container starts. When a secret's service (SSM) does not answer then, the process starts anyway and its
readiness path answers; the app is built on a later request, which answers 503 until then, as the buffered function
does (`stratus.handlers.deferred`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from stratus import McpServer, Settings, build_app
from stratus.handlers.deferred import ResolvedSettings, start_or_defer_app
from stratus.handlers.loading import at_start, load_served
from stratus.handlers.secrets import settings_without_secrets
from stratus.handlers.serving import serve
from stratus.handlers.task_worker import task_launcher
from stratus.handlers.telemetry import build_telemetry
from stratus.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_PORT = 8080  # the adapter's default AWS_LWA_PORT


def adapter_port() -> int:
    """The port the adapter forwards to (`AWS_LWA_PORT`)."""
    return int(os.environ.get("AWS_LWA_PORT", DEFAULT_PORT))


def adapter_app(
    server: McpServer,
    named: Settings,
    settings: Callable[[], Settings],
    *,
    monotonic: Callable[[], float] = time.monotonic,
) -> ASGIApp:
    """The app the adapter forwards to, its metrics written after each request: built now from `settings()` (the
    settings with their secrets read), or, when a secret's service does not answer, by a later request.

    Args:
        server: the server to serve.
        named: the settings that need no secret read (`settings_without_secrets()`): telemetry and task worker.
        settings: the settings with their secrets (`ResolvedSettings()`: read once, until a read succeeds).
        monotonic: the clock of the deferred start's retries (tests advance it).

    Raises:
        SettingsError: a secret is refused, or a setting is malformed.
    """
    metrics, flush = build_telemetry(named, server.name)
    launcher = task_launcher(named)
    app = start_or_defer_app(
        lambda: build_app(server, on_lambda(settings()), metrics=metrics, task_launcher=launcher), monotonic=monotonic
    )
    return flushing_after_each_request(app, flush)


def on_lambda(settings: Settings) -> Settings:
    """`settings` for a process Lambda runs: its streams end as polls (`Settings.lambda_host`). `from_env` has set it
    already where Lambda named the function; otherwise the settings are checked again (at start, once)."""
    return settings if settings.lambda_host else dataclasses.replace(settings, lambda_host=True)


def flushing_after_each_request(app: ASGIApp, flush: Callable[[], None]) -> ASGIApp:
    """`app`, writing its metrics and sending its spans with each HTTP request (one Lambda invocation behind the
    adapter), so their data points never pile up in a long-lived container. They go before the response's last
    bytes: once the adapter has passed those on, the invocation is over and Lambda may freeze the container, so a
    flush after them could stop halfway, its spans sent only when the container is next thawed, or never. What is
    made after the last bytes is flushed once the request is done."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def flushing_before_the_end(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                flush()  # blocking, as the adapter sends one invocation at a time: nothing else waits on the loop
            await send(message)

        try:
            await app(scope, receive, flushing_before_the_end)
        finally:
            flush()

    return served


def main() -> None:
    named = at_start(settings_without_secrets)
    app = adapter_app(at_start(lambda: load_served(named)), named, ResolvedSettings())
    # No access log: behind the adapter every request comes from 127.0.0.1, and a line per poll would be most of
    # what an idle client puts into the function's logs (docs/deploy.md, "What it costs").
    serve(app, named, host="127.0.0.1", port=adapter_port(), lifespan="on", access_log=False)


if __name__ == "__main__":
    main()
