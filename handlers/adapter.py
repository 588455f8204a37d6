"""Wrap an `McpServer` as a buffered Lambda handler (Mangum, lifespan off)."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from mangum import Mangum

from core import McpServer, Settings, build_app
from core.pipeline.current import lambda_request_id
from handlers.tasks import task_launcher
from handlers.telemetry import build_telemetry

LambdaHandler = Any


def _tolerate_null_headers(event: dict[str, Any]) -> dict[str, Any]:
    # API Gateway sends "headers": null for requests without headers (console tests, some clients); Mangum's
    # HTTP API handler expects a map.
    if event.get("headers") is None:
        return {**event, "headers": {}}
    return event


def _ensure_event_loop() -> None:
    # One event loop per container, set before Mangum looks for it (which warns on 3.12+ when none is set) and
    # reused by every warm invocation, so connection pools bound to it survive between invocations.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            if not asyncio.get_event_loop().is_closed():
                return
        except RuntimeError:
            pass
    asyncio.set_event_loop(asyncio.new_event_loop())


def make_handler(server: McpServer, settings: Settings | None = None) -> LambdaHandler:
    """A Lambda handler serving `server`, built now: call it at module scope, once per cold start.

    Each invocation is tagged with its Lambda request id for the logs; metrics are flushed when it ends, and the
    first invocation of the container counts a `cold_start`.
    """
    settings = settings or Settings()
    _ensure_event_loop()
    metrics, flush = build_telemetry(settings, server.name)
    app = build_app(server, settings, metrics=metrics, task_launcher=task_launcher(settings))
    asgi = Mangum(app, lifespan="off")
    cold = [True]

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        token = lambda_request_id.set(getattr(context, "aws_request_id", None))
        try:
            if cold[0]:
                cold[0] = False
                metrics.count("cold_start")
            return asgi(_tolerate_null_headers(event), context)
        finally:
            flush()
            lambda_request_id.reset(token)

    def close() -> None:
        """Release the app's store connections (tests; a snapshot restore that must not share sockets)."""
        asyncio.get_event_loop().run_until_complete(app.shutdown())

    handler.close = close  # type: ignore[attr-defined]
    return handler
