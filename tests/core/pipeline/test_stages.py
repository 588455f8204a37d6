"""Each pipeline stage on its own, over the in-memory stores: what it refuses, records or retries, and nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stratus import McpServer, ToolError
from stratus.composition import build_pipeline
from stratus.errors import CircuitOpenError, RateLimitedError, RequestTimeoutError
from stratus.metrics import LocalMetrics
from stratus.pipeline import call_metrics, rate_limits
from stratus.pipeline.admission import NO_CHECKS, Admitter
from stratus.pipeline.circuit import Circuit
from stratus.pipeline.pipeline import AuthenticationPlan
from stratus.pipeline.retries import Retries
from stratus.pipeline.timeout import within_deadline
from stratus.resilience.breaker import Admission, BreakerPolicy, CircuitState
from stratus.resilience.closed_breakers import ClosedBreakers
from stratus.resilience.deadline import Deadline
from stratus.resilience.limiter import Decision, RateLimit
from stratus.server.context import Context
from stratus.server.policy import RateLimits, RetryPolicy
from stratus.server.principal import Principal
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from stratus.stores.records import CallAdmission, CallChecks
from tests.fixtures.clocks import FakeClock, RecordedSleeps

pytestmark = pytest.mark.anyio

POLICY = BreakerPolicy(failure_threshold=1, window_seconds=60, cooldown_seconds=30)


def _context(item: str, deadline: Deadline | None = None) -> Context:
    return Context(request_id=1, method="tools/call", protocol_version="2026-07-28", item=item, deadline=deadline)


def _admitter(server: McpServer) -> Admitter:
    clock = FakeClock()
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=60, clock=clock))
    return Admitter(server.policy, stores.gate, LocalMetrics(), ClosedBreakers(clock))


def test_admission_asks_nothing_for_a_tool_without_limits_or_breaker() -> None:
    server = McpServer("plain")

    @server.tool()
    def ping() -> str:
        return "pong"

    admitter = _admitter(server)
    assert admitter.checks_for(server.tools["ping"], None, "s") is NO_CHECKS


def test_admission_names_each_bucket_the_server_declares() -> None:
    limit = RateLimit(rate=1, burst=1)
    server = McpServer("limited", rate_limits=RateLimits(per_principal=limit, per_session=limit))

    @server.tool()
    def ping() -> str:
        return "pong"

    admitter = _admitter(server)
    checks = admitter.checks_for(server.tools["ping"], Principal("ann"), "s1")
    assert [key for key, _ in checks.limits] == [f"principal:{Principal('ann').key}", "session:s1"]
    assert checks.breaker is None


async def _nobody(context: Context) -> bool:
    return False


async def _anonymous(context: Context) -> Principal | None:
    return None


async def _passing(context: Context, call_next: Any) -> Any:
    return await call_next(context)


@pytest.mark.parametrize(
    ("case", "prefetched"),
    [
        ("open", True),
        ("guard", False),
        ("tool middleware", False),
        ("server middleware", False),
        ("authenticator before the call", False),
        ("scope the caller lacks", False),
        ("scope the caller holds", True),
    ],
)
def test_admission_is_asked_with_the_session_only_when_no_earlier_stage_could_refuse(
    case: str, prefetched: bool
) -> None:
    limit = RateLimits(per_session=RateLimit(rate=1, burst=1))
    server = McpServer("guarded", rate_limits=limit, middleware=[_passing] if case == "server middleware" else [])
    options: dict[str, dict[str, Any]] = {
        "guard": {"guards": [_nobody]},
        "tool middleware": {"middleware": [_passing]},
        "scope the caller lacks": {"scopes": ["admin"]},
        "scope the caller holds": {"scopes": ["read"]},
    }

    @server.tool(**options.get(case, {}))
    def ping() -> str:
        return "pong"

    plan = AuthenticationPlan((_anonymous,) if case == "authenticator before the call" else ())
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=60, clock=FakeClock()))
    pipeline = build_pipeline(server.policy, stores, LocalMetrics(), auth=plan)
    caller = Principal("ann", scopes=frozenset({"read"}))
    checks = pipeline.prefetch_checks(server.tools["ping"], caller, "s1")
    if prefetched:
        assert checks is not None and checks.session_id == "s1" and checks.owner == caller.key
    else:
        assert checks is None


def test_rate_limits_refuse_at_the_first_refusing_bucket_and_count_it() -> None:
    metrics = LocalMetrics()
    limit = RateLimit(rate=1, burst=1)
    checks = CallChecks(limits=(("principal:k", limit), ("session:s", limit)))
    rate_limits.enforce("ping", checks, CallAdmission(None, (Decision(True), Decision(True)), None), metrics)
    with pytest.raises(RateLimitedError) as refused:
        refused_second = CallAdmission(None, (Decision(True), Decision(False, 3.0)), None)
        rate_limits.enforce("ping", checks, refused_second, metrics)
    assert refused.value.data["retryAfterSeconds"] == 3.0
    assert metrics.total("rate_limited", item="ping", scope="session") == 1
    assert metrics.total("rate_limited", item="ping", scope="principal") == 0


async def test_retries_run_a_retryable_failure_again_after_the_backoff_and_stop_at_the_attempts() -> None:
    server = McpServer("flaky")
    attempts: list[int] = []

    @server.tool(retry=RetryPolicy(attempts=3, base_delay=0.1, max_delay=1.0))
    def flaky() -> str:
        attempts.append(1)
        raise ToolError("try again", retryable=True)

    clock = FakeClock()
    sleeps = RecordedSleeps(clock)
    metrics = LocalMetrics()
    retries = Retries(server.policy, metrics, sleep=sleeps, rand=lambda: 0.5)
    with pytest.raises(ToolError):
        await retries.run(server.tools["flaky"], _context("flaky"), {})
    assert len(attempts) == 3
    assert sleeps.delays == [0.05, 0.1]
    assert metrics.total("retries", item="flaky") == 2


async def test_retries_leave_a_plain_tool_error_alone() -> None:
    server = McpServer("refusing")
    attempts: list[int] = []

    @server.tool(retry=RetryPolicy(attempts=3))
    def refusing() -> str:
        attempts.append(1)
        raise ToolError("no")

    retries = Retries(server.policy, LocalMetrics(), sleep=RecordedSleeps(FakeClock()))
    with pytest.raises(ToolError):
        await retries.run(server.tools["refusing"], _context("refusing"), {})
    assert len(attempts) == 1


async def test_the_circuit_refuses_while_open_and_records_a_failure_in_the_store() -> None:
    server = McpServer("upstream")

    @server.tool(breaker=POLICY)
    def upstream() -> str:
        return "ok"

    clock = FakeClock()
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=60, clock=clock))
    closed = ClosedBreakers(clock)
    closed.saw("tool:upstream", Admission(True, CircuitState.CLOSED))
    circuit = Circuit(stores.breakers, LocalMetrics(), closed)
    tool = server.tools["upstream"]
    checks = CallChecks(breaker=("tool:upstream", POLICY))
    admitted = CallAdmission(None, (), Admission(True, CircuitState.CLOSED))

    async def failing() -> Any:
        raise RuntimeError("down")

    with pytest.raises(RuntimeError):
        await circuit.around(tool, _context("upstream"), checks, admitted, failing)
    assert not closed.closed("tool:upstream")  # a recorded failure: this container asks the store again
    assert (await stores.breakers.admit("tool:upstream", POLICY)).state is CircuitState.OPEN
    refused = CallAdmission(None, (), Admission(False, CircuitState.OPEN, 30.0))
    with pytest.raises(CircuitOpenError):
        await circuit.around(tool, _context("upstream"), checks, refused, failing)


async def test_the_deadline_ends_a_call_that_outlives_it_and_cancels_its_signal() -> None:
    clock = FakeClock()
    context = _context("slow", Deadline.within(0.0, clock=clock))
    with pytest.raises(RequestTimeoutError):
        await within_deadline(context, asyncio.Event().wait())
    assert context.signal.cancelled


async def test_a_client_cancellation_ends_the_call_as_cancelled() -> None:
    context = _context("slow")

    async def cancelled_while_running() -> None:
        context.signal.cancel("client")  # the client's notifications/cancelled arrives mid-call
        await asyncio.Event().wait()

    with pytest.raises(RequestTimeoutError) as ended:
        await asyncio.wait_for(within_deadline(context, cancelled_while_running()), 5)
    assert "cancelled by the client" in str(ended.value)


def test_metrics_label_each_refusal_and_count_every_call_with_its_latency() -> None:
    metrics = LocalMetrics()
    assert call_metrics.outcome_of(RateLimitedError("tool", 1.0)) == "rate_limited"
    assert call_metrics.outcome_of(ValueError("boom")) == "error"
    call_metrics.record(metrics, "tools/call", "ping", "timeout", started=0.0)
    assert metrics.total("calls", item="ping", outcome="timeout") == 1
    assert metrics.total("errors", item="ping", outcome="timeout") == 1


async def test_work_that_never_waits_is_answered_as_it_returns_or_raises() -> None:
    async def value() -> int:
        return 7

    async def failing() -> None:
        raise ToolError("refused")

    assert await within_deadline(_context("quick", Deadline.within(0.0, clock=FakeClock())), value()) == 7
    with pytest.raises(ToolError, match="refused"):
        await within_deadline(_context("quick"), failing())


async def test_work_that_waits_gets_what_it_awaited_and_its_cancellation() -> None:
    async def waits_twice() -> int:
        await asyncio.sleep(0)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, 4)
        return await future + 1

    assert await within_deadline(_context("waits"), waits_twice()) == 5
    cleaned: list[str] = []

    async def cleans_up() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("finally")

    running = asyncio.ensure_future(within_deadline(_context("waits"), cleans_up()))
    await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert cleaned == ["finally"]
