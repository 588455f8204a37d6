"""`make_handler`: an `McpServer` as a buffered Lambda handler, built once per cold start.

The app is built now, with no ASGI lifespan (its stores connect on first use); each invocation runs on the
container's one event loop (`stratus.handlers.invocation`), tagged with its Lambda request id, and its metrics are
flushed when it ends. An event that no front door sent is answered 400, never with its contents."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import secrets
import warnings
from typing import Any

from stratus import McpServer, Settings, build_app
from stratus.handlers.invocation import ContainerLoop, invoke
from stratus.handlers.task_worker import task_launcher
from stratus.handlers.telemetry import build_telemetry
from stratus.pipeline.current import lambda_request_id
from stratus.types import ASGIApp

LambdaHandler = Any
logger = logging.getLogger("stratus.lambda")


def _answer(app: ASGIApp, event: Any, context: Any) -> dict[str, Any]:
    """The front door's answer to the event; a 400 for an event it cannot read as an HTTP request (a malformed or
    foreign payload invoking the function directly). The app itself never raises (the endpoint answers every error), so
    anything raised here comes from reading the event; it is logged with a reference, never with the event."""
    if not isinstance(event, dict):
        return _not_an_http_event(TypeError("the event is not an object"))
    try:
        answer = invoke(app, event, context)
    except (LookupError, TypeError, ValueError, AttributeError, RuntimeError) as error:  # reading the event
        return _not_an_http_event(error)
    return answer


def _not_an_http_event(error: Exception) -> dict[str, Any]:
    reference = secrets.token_hex(8)
    logger.warning("unreadable event", extra={"error_ref": reference, "error_type": type(error).__name__})
    body = {"error": f"Bad Request: not an HTTP event this function can serve (reference {reference})"}
    return {"statusCode": 400, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _ensure_event_loop(eager: bool) -> None:
    # One event loop per container, set once and reused by every warm invocation, so connection pools bound to it
    # survive between invocations. A loop set before (a test's, the caller's) is kept; otherwise the container's is
    # a ContainerLoop (a plain loop with STRATUS_EAGER_INVOCATIONS=false), not the one asyncio makes when asked with
    # none set (with a warning, on 3.12 and later).
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always", DeprecationWarning)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
        except RuntimeError:
            loop = None
    made = any(issubclass(warning.category, DeprecationWarning) for warning in warned)
    if loop is not None and not loop.is_closed() and not made:
        return
    if loop is not None and made:
        loop.close()
    asyncio.set_event_loop(ContainerLoop() if eager else asyncio.new_event_loop())


def make_handler(server: McpServer, settings: Settings | None = None) -> LambdaHandler:
    """A Lambda handler serving `server`, built now: call it at module scope, once per cold start.

    Each invocation is tagged with its Lambda request id for the logs; metrics are flushed when it ends, and the
    first invocation of the container counts a `cold_start`.
    """
    settings = settings or Settings(lambda_host=True)
    if not settings.lambda_host:  # streams end as polls here (Settings.lambda_host); from_env has set it on Lambda
        settings = dataclasses.replace(settings, lambda_host=True)
    _ensure_event_loop(settings.eager_invocations)
    metrics, flush = build_telemetry(settings, server.name)
    app = build_app(server, settings, metrics=metrics, task_launcher=task_launcher(settings))
    cold = [True]

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        token = lambda_request_id.set(getattr(context, "aws_request_id", None))
        try:
            if cold[0]:
                cold[0] = False
                metrics.count("cold_start")
            return _answer(app, event, context)
        finally:
            flush()
            lambda_request_id.reset(token)

    def close() -> None:
        """Release the app's store connections (tests; a snapshot restore that must not share sockets)."""
        asyncio.get_event_loop().run_until_complete(app.shutdown())

    handler.close = close  # type: ignore[attr-defined]
    return handler
