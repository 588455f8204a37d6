"""`build_app`: the one place a server, its settings and its stores are wired into an ASGI app."""

from __future__ import annotations

import hashlib

from core.config import Settings
from core.pipeline.metrics import LocalMetrics, MetricsSink
from core.pipeline.pipeline import Pipeline
from core.protocol.dispatch import Dispatcher
from core.server.pagination import Paginator
from core.server.server import McpServer
from core.stores.factory import Stores, build_stores
from core.transport.asgi import Router
from core.transport.endpoint import McpEndpoint
from core.transport.guards import HostOriginGuard


def build_app(
    server: McpServer,
    settings: Settings | None = None,
    *,
    stores: Stores | None = None,
    metrics: MetricsSink | None = None,
) -> Router:
    """An ASGI app serving `server` at `settings.mcp_path`.

    Args:
        server: the tools, resources and prompts to serve.
        settings: deployment settings (default: `Settings()`, the local defaults).
        stores: state backends; built from `settings.store` when not given.
        metrics: where the pipeline reports calls, errors and latency (default: in memory, logged at DEBUG).
    """
    settings = settings or Settings()
    stores = stores or build_stores(settings.store, session_ttl_seconds=settings.session_ttl_seconds)
    # Without a configured key, cursors are still tamper-evident but forgeable; configure one in production.
    key = (settings.secret_key or f"stratus-cursor:{server.name}").encode()
    paginator = Paginator(hashlib.sha256(key).digest(), server.page_size)
    endpoint = McpEndpoint(
        Dispatcher(server, stores.sessions, paginator, Pipeline(server.policy, stores, metrics or LocalMetrics())),
        HostOriginGuard(settings.allowed_hosts, settings.allowed_origins),
        max_body_bytes=settings.max_body_bytes,
    )
    return Router({settings.mcp_path: endpoint})
