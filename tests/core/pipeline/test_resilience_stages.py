"""Rate limits, circuit breaker around retry, timeouts and the Lambda deadline cap, on injected time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import pytest

from stratus import Context, McpServer, ToolError
from stratus.errors import CircuitOpenError, RateLimitedError, RequestTimeoutError
from stratus.pipeline.current import current_context
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.policy import RateLimits, RetryPolicy
from tests.fixtures.pipeline_harness import Harness

pytestmark = pytest.mark.anyio

IDEMPOTENT = {"idempotentHint": True}


@dataclass
class LambdaContext:
    remaining_ms: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


async def test_a_tool_rate_limit_refuses_past_the_burst_with_a_retry_hint(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("limits")

    @server.tool(rate_limit=RateLimit(rate=0.5, burst=2))
    def ping() -> str:
        return "pong"

    harness = harness_for(server)
    assert (await harness.call("ping"))["content"] == [{"type": "text", "text": "pong"}]
    await harness.call("ping")
    with pytest.raises(RateLimitedError) as refused:
        await harness.call("ping")
    assert refused.value.code == -31429
    assert refused.value.data == {"retryAfterSeconds": 2.0, "setting": "the tool's rate_limit, or RateLimits.per_tool"}
    harness.clock.advance(2.0)
    await harness.call("ping")
    assert harness.metrics.total("calls", item="ping", outcome="rate_limited") == 1


async def test_session_and_overall_limits_are_keyed_separately(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("limits", rate_limits=RateLimits(per_session=RateLimit(rate=1, burst=1)))

    @server.tool()
    def ping() -> str:
        return "pong"

    harness = harness_for(server)
    await harness.call("ping", session_id="a")
    await harness.call("ping", session_id="b")
    with pytest.raises(RateLimitedError) as refused:
        await harness.call("ping", session_id="a")
    assert "session" in refused.value.message


def failing_server(breaker: BreakerPolicy, retry: RetryPolicy | None) -> tuple[McpServer, list[int]]:
    server = McpServer("breaker", breaker=breaker, retry=retry)
    attempts: list[int] = []

    @server.tool(annotations=IDEMPOTENT)
    def flaky() -> str:
        attempts.append(1)
        raise ToolError("upstream unavailable", retryable=True)

    return server, attempts


async def test_the_breaker_wraps_the_retry_loop_so_one_call_counts_once(harness_for: Callable[..., Harness]) -> None:
    server, attempts = failing_server(BreakerPolicy(failure_threshold=2), RetryPolicy(attempts=3, base_delay=0.1))
    harness = harness_for(server)
    first = await harness.call("flaky")
    assert first["isError"] is True and len(attempts) == 3  # retried inside one breaker admission
    assert harness.sleeps.delays == [0.05, 0.1]  # full jitter at rand=0.5: 0.5 * 0.1 * 2**n
    second = await harness.call("flaky")
    assert second["isError"] is True and len(attempts) == 6  # threshold 2 reached only by the second call
    with pytest.raises(CircuitOpenError) as open_circuit:
        await harness.call("flaky")
    assert open_circuit.value.code == -31503 and len(attempts) == 6  # failed fast, tool not called
    assert harness.metrics.total("breaker_transitions", item="flaky", state="open") == 1


async def test_an_open_breaker_lets_one_trial_through_after_the_cooldown(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("breaker", breaker=BreakerPolicy(failure_threshold=1, cooldown_seconds=30))
    healthy = [False]

    @server.tool()
    def backend() -> str:
        if not healthy[0]:
            raise RuntimeError("connection refused")
        return "ok"

    harness = harness_for(server)
    assert (await harness.call("backend"))["isError"] is True
    with pytest.raises(CircuitOpenError) as refused:
        await harness.call("backend")
    assert refused.value.data == {"retryAfterSeconds": 30.0, "setting": CircuitOpenError.SETTING}
    harness.clock.advance(30)
    healthy[0] = True
    assert (await harness.call("backend"))["content"] == [{"type": "text", "text": "ok"}]
    assert (await harness.call("backend"))["content"] == [{"type": "text", "text": "ok"}]


async def test_plain_tool_errors_neither_retry_nor_trip_the_breaker(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("answers", breaker=BreakerPolicy(failure_threshold=1), retry=RetryPolicy(attempts=3))
    calls: list[int] = []

    @server.tool(annotations=IDEMPOTENT)
    def lookup() -> str:
        calls.append(1)
        raise ToolError("no such city")

    harness = harness_for(server)
    for _ in range(3):
        assert (await harness.call("lookup"))["content"] == [{"type": "text", "text": "no such city"}]
    assert len(calls) == 3


async def test_tools_not_declared_idempotent_are_never_retried(harness_for: Callable[..., Harness]) -> None:
    server, attempts = failing_server(BreakerPolicy(failure_threshold=99), RetryPolicy(attempts=5))
    server.tools["flaky"].annotations = None
    harness = harness_for(server)
    await harness.call("flaky")
    assert len(attempts) == 1 and harness.sleeps.delays == []


async def test_a_retry_policy_declared_on_a_tool_is_honoured_even_when_not_idempotent(
    harness_for: Callable[..., Harness],
) -> None:
    server = McpServer("declared", retry=RetryPolicy(attempts=5))
    attempts: list[int] = []

    @server.tool(retry=RetryPolicy(attempts=2, base_delay=0.1))
    def send_mail() -> str:
        attempts.append(1)
        raise ToolError("smtp busy", retryable=True)

    harness = harness_for(server)
    assert (await harness.call("send_mail"))["isError"] is True
    assert len(attempts) == 2 and harness.sleeps.delays == [0.05]  # the tool's own policy, not the server's


async def test_retries_stop_when_the_next_delay_would_pass_the_deadline(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("deadline", retry=RetryPolicy(attempts=10, base_delay=1.0, max_delay=8.0), timeout=3.0)
    attempts: list[int] = []

    @server.tool(annotations=IDEMPOTENT)
    def flaky() -> str:
        attempts.append(1)
        raise ToolError("busy", retryable=True)

    harness = harness_for(server)
    result = await harness.call("flaky")
    assert result["isError"] is True
    assert harness.sleeps.delays == [0.5, 1.0]  # a third delay of 2.0 would end at 3.5 s, past the 3 s deadline
    assert len(attempts) == 3


async def test_a_slow_tool_ends_with_a_timeout_error_and_metrics_record_it(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("slow")
    started = asyncio.Event()

    @server.tool(timeout=0)
    async def hang() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    harness = harness_for(server)
    with anyio.fail_after(5), pytest.raises(RequestTimeoutError) as timed_out:
        await harness.call("hang")
    assert timed_out.value.code == -31504
    assert harness.metrics.total("errors", item="hang", outcome="timeout") == 1


async def test_the_deadline_is_capped_by_lambda_time_left_minus_the_margin(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("lambda", timeout=60.0, deadline_margin=0.5)
    seen: list[float] = []

    @server.tool(timeout=30.0)
    def budget() -> str:
        deadline = current_context().deadline
        assert deadline is not None
        seen.append(deadline.remaining())
        return "ok"

    harness = harness_for(server)
    await harness.call("budget", lambda_context=LambdaContext(remaining_ms=1_200))
    await harness.call("budget", lambda_context=LambdaContext(remaining_ms=900_000))
    await harness.call("budget")
    assert seen == [pytest.approx(0.7), 30.0, 30.0]


async def test_client_cancellation_stops_the_handler(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("cancel")

    @server.tool()
    async def wait_forever(ctx: Context) -> str:
        ctx.signal.cancel("client")
        await asyncio.Event().wait()
        return "never"

    harness = harness_for(server)
    with anyio.fail_after(5), pytest.raises(RequestTimeoutError) as cancelled:
        await harness.call("wait_forever")
    assert "cancelled by the client" in cancelled.value.message


async def test_a_rate_limited_call_never_reaches_the_breaker_or_the_tool(harness_for: Callable[..., Harness]) -> None:
    server = McpServer("order", breaker=BreakerPolicy(failure_threshold=1))
    calls: list[int] = []

    @server.tool(rate_limit=RateLimit(rate=0.001, burst=1))
    def fragile() -> str:
        calls.append(1)
        raise RuntimeError("boom")

    harness = harness_for(server)
    assert (await harness.call("fragile"))["isError"] is True  # opens the breaker (threshold 1)
    with pytest.raises(RateLimitedError):
        await harness.call("fragile")  # refused by the limit before the open breaker is even asked
    assert len(calls) == 1
    assert harness.metrics.total("calls", item="fragile", outcome="rate_limited") == 1
    assert harness.metrics.total("calls", item="fragile", outcome="circuit_open") == 0
