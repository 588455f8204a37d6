"""What every entry point builds from its settings: the stores a store URL names, and a server's dispatcher (with
its pipeline) over them. The HTTP app, the task worker, the sweeper and the operator commands all start here, so
none of them builds another's transport to get one."""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import TYPE_CHECKING

from stratus.metrics import LocalMetrics, MetricsSink
from stratus.pipeline.pipeline import Pipeline
from stratus.protocol.dispatch import Dispatcher
from stratus.protocol.request_state import StateSealer
from stratus.resilience.stream_slots import StreamSlots
from stratus.server.pagination import Paginator
from stratus.server.server import McpServer
from stratus.settings import Settings
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores

if TYPE_CHECKING:
    from stratus.protocol.task_service import TaskLauncher


def stores_for(settings: Settings) -> Stores:
    """The stores `settings.store` names, configured by the other settings."""
    options = StoreOptions(
        settings.session_ttl_seconds,
        settings.store_prefix,
        settings.store_timeout_seconds,
        settings.max_sessions,
        settings.max_sessions_per_principal,
    )
    return build_stores(settings.store, options, max_record_bytes=settings.max_record_bytes)


def build_dispatcher(
    server: McpServer,
    settings: Settings,
    stores: Stores,
    metrics: MetricsSink | None = None,
    task_launcher: TaskLauncher | None = None,
) -> Dispatcher:
    """The dispatcher (and its pipeline) of `server` over `stores`: what the app serves and a task worker runs."""
    # Without a configured key, cursors are still tamper-evident but forgeable; configure one in production.
    key = (settings.secret_key or f"stratus-cursor:{server.name}").encode()
    paginator = Paginator(hashlib.sha256(key).digest(), server.page_size)
    # Request state must be unforgeable: without a configured key (the in-memory store, one process) a random one
    # serves; a shared store refuses to start without STRATUS_SECRET_KEY, so every container holds the same.
    state_key = settings.secret_key.encode() if settings.secret_key else secrets.token_bytes(32)
    fail_open = settings.limits_on_store_failure == "open"
    authenticates = settings.auth_mode != "off"
    pipeline = Pipeline(
        server.policy, stores, metrics or LocalMetrics(), fail_open=fail_open, authenticates=authenticates
    )
    server.attach(pipeline.metrics)
    return Dispatcher(
        server,
        stores.sessions,
        paginator,
        pipeline,
        StateSealer(state_key, clock=time.time),
        max_stream_seconds=settings.max_stream_seconds,
        stream_slots=StreamSlots(
            per_session=settings.max_streams_per_session,
            per_principal=settings.max_streams_per_principal,
            total=settings.max_streams,
        ),
        task_launcher=task_launcher,
    )
