"""The composition root: what every entry point builds from its settings. The stores a store URL names, a server's
pipeline with each stage over the stores it uses, and its dispatcher with every part the dispatcher routes to
(`build_serving`). The HTTP app (`stratus.transport.app.build_app`, which adds the transport's own parts), the task
worker, the sweeper and the operator commands all start here, so no part builds another, none builds another's
transport to get one, and nothing reaches one component's stores through another."""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from stratus.metrics import LocalMetrics, MetricsSink
from stratus.pipeline.admission import Admitter
from stratus.pipeline.circuit import Circuit
from stratus.pipeline.pipeline import AuthenticationPlan, Pipeline
from stratus.pipeline.retries import Retries, Sleep
from stratus.protocol.cancellation import RunningCalls
from stratus.protocol.dispatch import BuiltOnUse, Dispatcher
from stratus.protocol.lifecycle import Lifecycle
from stratus.protocol.listing import Listings
from stratus.protocol.notifications import NotificationLog
from stratus.protocol.reads import Reads
from stratus.protocol.request_state import StateSealer
from stratus.protocol.rounds import InputRounds
from stratus.protocol.subscriptions import Listener
from stratus.protocol.tool_calls import ToolCalls
from stratus.resilience.closed_breakers import CLOSED_SECONDS, ClosedBreakers
from stratus.resilience.deadline import Clock
from stratus.resilience.stream_slots import StreamSlots
from stratus.server.hooks import hooks_of
from stratus.server.pagination import Paginator
from stratus.server.policy import ServerPolicy
from stratus.server.server import McpServer
from stratus.settings import Settings
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from stratus.tracing import Tracing, tracing_for

if TYPE_CHECKING:
    from stratus.protocol.launchers import TaskLauncher
    from stratus.protocol.relayed_calls import RelayedCalls
    from stratus.protocol.task_service import TaskService


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
    auth: AuthenticationPlan | None = None,
    clock: Clock = time.monotonic,
    sleep: Sleep = asyncio.sleep,
    rand: Callable[[], float] = random.random,
    closed_breaker_seconds: float = CLOSED_SECONDS,
) -> Pipeline:
    """The pipeline of `policy`: admission over the stores' call gate, the circuit over their breakers (sharing
    what this container knows of closed breakers), retries on the injected sleep. `auth` says who authenticates
    (by default the pipeline runs the server's authenticators before each call)."""
    closed = ClosedBreakers(clock, closed_breaker_seconds)
    return Pipeline(
        policy,
        metrics,
        admitter=Admitter(policy, stores.gate, metrics, closed, fail_open=fail_open),
        circuit=Circuit(stores.breakers, metrics, closed),
        retries=Retries(policy, metrics, sleep=sleep, rand=rand),
        clock=clock,
        auth=auth if auth is not None else AuthenticationPlan(tuple(policy.authenticators)),
    )


def authentication_plan(server: McpServer, settings: Settings) -> AuthenticationPlan:
    """Who authenticates the requests of an app serving `server`: the transport runs the deployment's authenticator
    and the server's own for each request (`McpEndpoint`), so the pipeline runs none; a task's run carries the
    principal its creator had."""
    return AuthenticationPlan((), anyone=settings.auth_mode != "off" or bool(server.policy.authenticators))


def pipeline_for(server: McpServer, settings: Settings, stores: Stores, metrics: MetricsSink | None = None) -> Pipeline:
    """`server`'s pipeline as the settings configure it."""
    return build_pipeline(
        server.policy,
        stores,
        metrics or LocalMetrics(),
        fail_open=settings.limits_on_store_failure == "open",
        auth=authentication_plan(server, settings),
    )


def stream_slots_for(settings: Settings) -> StreamSlots:
    """This process's caps on open streams (GET streams, `/events`, listens), shared by every part that opens one."""
    return StreamSlots(
        per_session=settings.max_streams_per_session,
        per_principal=settings.max_streams_per_principal,
        total=settings.max_streams,
    )


class Serving:
    """What answers a server's requests: the dispatcher, and the parts the transports and the task worker use
    directly (each built once, in `build_serving`)."""

    __slots__ = ("dispatcher", "relays", "starts_relays", "tasks", "tool_calls")

    def __init__(
        self,
        dispatcher: Dispatcher,
        tool_calls: ToolCalls,
        tasks: BuiltOnUse[TaskService],
        relays: BuiltOnUse[RelayedCalls],
        *,
        starts_relays: bool,
    ) -> None:
        self.dispatcher = dispatcher
        self.tool_calls = tool_calls
        """tools/call: the handshake transport asks it for a call's admission with the session; workers run calls."""
        self.tasks = tasks
        """The task service, built (and imported) on first use."""
        self.relays = relays
        """Calls relayed through the task worker, built (and imported) on first use."""
        self.starts_relays = starts_relays
        """Whether the launcher can start a relayed call in the task worker (a buffered front door then relays)."""


def build_serving(
    server: McpServer,
    settings: Settings,
    stores: Stores,
    pipeline: Pipeline,
    *,
    stream_slots: StreamSlots | None = None,
    task_launcher: TaskLauncher | None = None,
    tracing: Tracing | None = None,
) -> Serving:
    """The dispatcher of `server` over `stores` and every part it routes to, running calls through `pipeline`: what
    the app serves and a task worker runs."""
    # Without a configured key, cursors are still tamper-evident but forgeable; configure one in production.
    key = (settings.secret_key or f"stratus-cursor:{server.name}").encode()
    paginator = Paginator(hashlib.sha256(key).digest(), server.page_size)
    # Request state must be unforgeable: without a configured key (the in-memory store, one process) a random one
    # serves; a shared store refuses to start without STRATUS_SECRET_KEY, so every container holds the same.
    state_key = settings.secret_key.encode() if settings.secret_key else secrets.token_bytes(32)
    rounds = InputRounds(StateSealer(state_key, clock=time.time), stores.cache)
    running = RunningCalls(stores.pending)
    publish = NotificationLog(stores.events).publish
    hooks = hooks_of(server)
    reads = Reads(server, pipeline, rounds, publish, pipeline.auth)
    starts_relays = False
    if task_launcher is not None:
        from stratus.protocol.launchers import CallLauncher

        starts_relays = isinstance(task_launcher, CallLauncher)

    def task_service() -> TaskService:
        from stratus.protocol.task_service import TaskService

        return TaskService(
            server,
            stores,
            tool_calls.run,
            lambda task_id: running.cancel(None, task_id, "the task was cancelled"),
            task_launcher,
            max_tasks=settings.max_tasks,
            max_tasks_per_principal=settings.max_tasks_per_principal,
            anonymous_ttl_seconds=settings.anonymous_task_ttl_seconds,
        )

    def relayed_calls() -> RelayedCalls:
        from stratus.protocol.launchers import CallLauncher
        from stratus.protocol.relayed_calls import RelayedCalls

        launcher = task_launcher if isinstance(task_launcher, CallLauncher) else None
        return RelayedCalls(server, stores, tool_calls.run, launcher)

    tasks = BuiltOnUse(task_service)
    tool_calls = ToolCalls(server, pipeline, rounds, running, publish, tasks)
    listen = Listener(
        server,
        hooks,
        stores.events,
        stream_slots or stream_slots_for(settings),
        reads.readable,
        max_seconds=settings.max_stream_seconds,
    )
    dispatcher = Dispatcher(
        server,
        stores,
        hooks=hooks,
        lifecycle=Lifecycle(server, hooks, stores.sessions, reads.check_readable),
        listings=Listings(server, paginator),
        tool_calls=tool_calls,
        reads=reads,
        listen=listen,
        tasks=tasks,
        running=running,
        tracing=tracing if tracing is not None else tracing_for(settings.tracing),
    )
    return Serving(dispatcher, tool_calls, tasks, BuiltOnUse(relayed_calls), starts_relays=starts_relays)
