"""`build_app`: the one place a server, its settings and its stores are wired into an ASGI app."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from stratus.auth.setup import request_authenticator
from stratus.composition import build_serving, pipeline_for, stores_for, stream_slots_for
from stratus.metrics import MetricsSink
from stratus.protocol.capabilities import notifies_outside_calls
from stratus.protocol.notifications import NotificationLog
from stratus.server.hooks import hooks_of
from stratus.server.server import McpServer
from stratus.settings import Settings
from stratus.stores.base import Stores
from stratus.transport.asgi import Router
from stratus.transport.endpoint import McpEndpoint
from stratus.transport.handshake import BatchLimits, HandshakeTransport
from stratus.transport.health import LIVE_PATH, Health, live
from stratus.transport.http_guards import HostOriginGuard
from stratus.transport.metadata import WELL_KNOWN, ProtectedResourceMetadata
from stratus.transport.polling import Polling
from stratus.transport.session_api import REST_PREFIXES, SessionApi
from stratus.transport.session_stream import SessionStreams
from stratus.transport.stateless import StatelessTransport
from stratus.types import ASGIApp

if TYPE_CHECKING:
    from stratus.protocol.launchers import TaskLauncher
    from stratus.tracing import Tracing


def build_app(
    server: McpServer,
    settings: Settings | None = None,
    *,
    stores: Stores | None = None,
    metrics: MetricsSink | None = None,
    task_launcher: TaskLauncher | None = None,
    tracing: Tracing | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> Router:
    """An ASGI app serving `server` at `settings.mcp_path`.

    Args:
        server: the tools, resources and prompts to serve.
        settings: deployment settings (default: `Settings()`, the local defaults).
        stores: state backends; built from `settings.store` when not given.
        metrics: where the pipeline reports calls, errors and latency (default: in memory, logged at DEBUG).
        task_launcher: where tasks run (default: in this process).
        tracing: where requests' spans go (default: as `settings.tracing` says; off, nothing).
        monotonic: the clock of `/health`'s uptime and census cache (tests advance it).
    """
    settings = settings or Settings()
    stores = stores or stores_for(settings)
    hooks = hooks_of(server)
    authenticator, resource = request_authenticator(settings)
    guard = HostOriginGuard(
        settings.allowed_hosts,
        settings.allowed_origins,
        trust_request_context_header=settings.trust_request_context_header,
    )
    pipeline = pipeline_for(server, settings, stores, metrics)
    stream_slots = stream_slots_for(settings)
    serving = build_serving(
        server, settings, stores, pipeline, stream_slots=stream_slots, task_launcher=task_launcher, tracing=tracing
    )
    session_streams = SessionStreams(
        stores.sessions,
        stores.events,
        stores.cache,
        stream_slots,
        keepalive_seconds=settings.keepalive_seconds,
        polling=Polling(settings.stream_hold_seconds, settings.poll_retry_seconds, every_stream=settings.lambda_host),
    )
    handshake = HandshakeTransport(
        serving.dispatcher,
        stores,
        serving.tool_calls,
        session_streams,
        BatchLimits(settings.max_batch_length, settings.max_batch_response_bytes),
        relays=serving.relays if serving.starts_relays else None,
    )
    session_api = SessionApi(
        handshake,
        stores.sessions,
        session_streams,
        NotificationLog(stores.events),
        max_stream_seconds=settings.max_stream_seconds,
    )
    endpoint = McpEndpoint(
        StatelessTransport(serving.dispatcher, server),
        handshake,
        session_api,
        guard,
        max_body_bytes=settings.max_body_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        max_stream_seconds=settings.max_stream_seconds,
        keepalive_seconds=settings.keepalive_seconds,
        max_response_bytes=settings.max_response_bytes,
        authenticator=authenticator,
        server_authenticators=server.policy.authenticators,
        offers_get_stream=lambda: notifies_outside_calls(server),
    )
    health = Health(
        stores.sessions,
        backend=settings.store.split("://", 1)[0],
        max_sessions=settings.max_sessions,
        session_ttl_seconds=settings.session_ttl_seconds,
        guard=guard,
        authenticator=authenticator,
        monotonic=monotonic,
        details=hooks.health,
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
            await serving.dispatcher.aclose()
            await hooks.aclose()
        finally:
            await stores.aclose()

    return Router(routes, prefixes=dict.fromkeys(REST_PREFIXES, endpoint), on_shutdown=shutdown)
