"""What every entry point builds from its settings: the stores a store URL names, a server's pipeline with each
stage over the stores it uses, and its dispatcher. The HTTP app, the task worker, the sweeper and the operator
commands all start here, so none of them builds another's transport to get one, and nothing reaches one component's
stores through another."""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from stratus.metrics import LocalMetrics, MetricsSink
from stratus.pipeline.admission import Admitter
from stratus.pipeline.circuit import Circuit
from stratus.pipeline.pipeline import Pipeline
from stratus.pipeline.retries import Retries, Sleep
from stratus.protocol.dispatch import Dispatcher
from stratus.protocol.request_state import StateSealer
from stratus.resilience.closed_breakers import CLOSED_SECONDS, ClosedBreakers
from stratus.resilience.deadline import Clock
from stratus.resilience.stream_slots import StreamSlots
from stratus.server.pagination import Paginator
from stratus.server.policy import Authenticator, ServerPolicy
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


def build_pipeline(
    policy: ServerPolicy,
    stores: Stores,
    metrics: MetricsSink,
    *,
    fail_open: bool = True,
    authenticates: bool = True,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    closed_breaker_seconds: float = CLOSED_SECONDS,
    authenticators: Sequence[Authenticator] | None = None,
) -> Pipeline:
    """The pipeline of `policy`: admission over the stores' call gate, the circuit over their breakers (sharing
    what this container knows of closed breakers), retries on the injected sleep. It runs `authenticators` (by
    default the server's) before each call."""
    closed = ClosedBreakers(clock, closed_breaker_seconds)
    running = tuple(policy.authenticators if authenticators is None else authenticators)
    return Pipeline(
        policy,
        metrics,
        authenticators=running,
        admitter=Admitter(policy, stores.gate, metrics, closed, fail_open=fail_open, authenticates_first=bool(running)),
        circuit=Circuit(stores.breakers, metrics, closed),
        retries=Retries(policy, metrics, sleep=sleep, rand=rand),
        clock=clock,
        authenticates=authenticates,
    )


def pipeline_for(server: McpServer, settings: Settings, stores: Stores, metrics: MetricsSink | None = None) -> Pipeline:
    """`server`'s pipeline as the settings configure it; the server's own metrics (a tool's) go to the same sink.

    Its calls run no authenticators: the transport ran the server's for the request that made the call
    (`McpEndpoint`), and a task's run carries the principal its creator had."""
    pipeline = build_pipeline(
        server.policy,
        stores,
        metrics or LocalMetrics(),
        fail_open=settings.limits_on_store_failure == "open",
        authenticates=settings.auth_mode != "off",
        authenticators=(),
    )
    server.attach(pipeline.metrics)
    return pipeline


def stream_slots_for(settings: Settings) -> StreamSlots:
    """This process's caps on open streams (GET streams, `/events`, listens), shared by every part that opens one."""
    return StreamSlots(
        per_session=settings.max_streams_per_session,
        per_principal=settings.max_streams_per_principal,
        total=settings.max_streams,
    )


def build_dispatcher(
    server: McpServer,
    settings: Settings,
    stores: Stores,
    pipeline: Pipeline,
    *,
    stream_slots: StreamSlots | None = None,
    task_launcher: TaskLauncher | None = None,
) -> Dispatcher:
    """The dispatcher of `server` over `stores`, running calls through `pipeline`: what the app serves and a task
    worker runs."""
    # Without a configured key, cursors are still tamper-evident but forgeable; configure one in production.
    key = (settings.secret_key or f"stratus-cursor:{server.name}").encode()
    paginator = Paginator(hashlib.sha256(key).digest(), server.page_size)
    # Request state must be unforgeable: without a configured key (the in-memory store, one process) a random one
    # serves; a shared store refuses to start without STRATUS_SECRET_KEY, so every container holds the same.
    state_key = settings.secret_key.encode() if settings.secret_key else secrets.token_bytes(32)
    return Dispatcher(
        server,
        stores,
        paginator,
        pipeline,
        StateSealer(state_key, clock=time.time),
        max_stream_seconds=settings.max_stream_seconds,
        stream_slots=stream_slots or stream_slots_for(settings),
        task_launcher=task_launcher,
        max_tasks=settings.max_tasks,
        max_tasks_per_principal=settings.max_tasks_per_principal,
    )
