"""`build_app`: the one place a server, its settings and its stores are wired into an ASGI app."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from stratus.auth.setup import request_authenticator
from stratus.composition import build_dispatcher, pipeline_for, stores_for, stream_slots_for
from stratus.metrics import MetricsSink
from stratus.server.server import McpServer
from stratus.settings import Settings
from stratus.stores.base import Stores
from stratus.transport.asgi import Router
from stratus.transport.endpoint import REST_PREFIXES, McpEndpoint
from stratus.transport.handshake import BatchLimits, HandshakeTransport
from stratus.transport.health import LIVE_PATH, Health, live
from stratus.transport.http_guards import HostOriginGuard
from stratus.transport.metadata import WELL_KNOWN, ProtectedResourceMetadata
from stratus.transport.polling import Polling
from stratus.types import ASGIApp

if TYPE_CHECKING:
    from stratus.protocol.task_service import TaskLauncher


def build_app(
    server: McpServer,
    settings: Settings | None = None,
    *,
    stores: Stores | None = None,
    metrics: MetricsSink | None = None,
    task_launcher: TaskLauncher | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Router:
    """An ASGI app serving `server` at `settings.mcp_path`.

    Args:
        server: the tools, resources and prompts to serve.
        settings: deployment settings (default: `Settings()`, the local defaults).
        stores: state backends; built from `settings.store` when not given.
        metrics: where the pipeline reports calls, errors and latency (default: in memory, logged at DEBUG).
        task_launcher: where tasks run (default: in this process).
        monotonic: the clock of `/health`'s uptime and census cache (tests advance it).
    """
    settings = settings or Settings()
    stores = stores or stores_for(settings)
    authenticator, resource = request_authenticator(settings)
    guard = HostOriginGuard(
        settings.allowed_hosts,
        settings.allowed_origins,
        trust_request_context_header=settings.trust_request_context_header,
    )
    pipeline = pipeline_for(server, settings, stores, metrics)
    stream_slots = stream_slots_for(settings)
    dispatcher = build_dispatcher(
        server, settings, stores, pipeline, stream_slots=stream_slots, task_launcher=task_launcher
    )
    handshake = HandshakeTransport(
        dispatcher,
        stores,
        pipeline.admitter,
        stream_slots,
        BatchLimits(settings.max_batch_length, settings.max_batch_response_bytes),
        keepalive_seconds=settings.keepalive_seconds,
        polling=Polling(settings.poll_hold_seconds, settings.poll_retry_seconds),
    )
    endpoint = McpEndpoint(
        dispatcher,
        handshake,
        guard,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        max_stream_seconds=settings.max_stream_seconds,
        keepalive_seconds=settings.keepalive_seconds,
        max_response_bytes=settings.max_response_bytes,
        authenticator=authenticator,
        server_authenticators=server.policy.authenticators,
    )
    health = Health(
        stores.sessions,
        backend=settings.store.split("://", 1)[0],
        max_sessions=settings.max_sessions,
        session_ttl_seconds=settings.session_ttl_seconds,
        guard=guard,
        authenticator=authenticator,
        monotonic=monotonic,
        details=server.health,
    )
    routes: dict[str, ASGIApp] = {
        settings.mcp_path: endpoint,
        "/session": endpoint,
        "/health": health,
        LIVE_PATH: live,
    }
    if resource is not None:
        metadata = ProtectedResourceMetadata(resource.metadata())
        routes[WELL_KNOWN] = metadata
        routes[WELL_KNOWN + settings.mcp_path] = metadata
    if settings.auth_mode == "front":
        from stratus.transport.oauth.routes import front_routes

        routes.update(front_routes(settings, stores))

    async def shutdown() -> None:
        try:
            await dispatcher.aclose()
            await server.aclose()
        finally:
            await stores.aclose()

    return Router(routes, prefixes=dict.fromkeys(REST_PREFIXES, endpoint), on_shutdown=shutdown)
