"""Token-bucket arithmetic on explicit times."""

from __future__ import annotations

import pytest

from stratus.resilience.backoff import full_jitter
from stratus.resilience.deadline import Deadline
from stratus.resilience.limiter import RateLimit, take


def test_a_new_bucket_allows_a_burst_then_refuses_with_the_wait() -> None:
    limit = RateLimit(rate=2.0, burst=3.0)
    bucket = None
    for _ in range(3):
        decision, bucket = take(bucket, limit, now=10.0)
        assert decision.allowed
    decision, bucket = take(bucket, limit, now=10.0)
    assert not decision.allowed and decision.retry_after == 0.5


def test_tokens_refill_at_the_rate_up_to_the_burst() -> None:
    limit = RateLimit.per_minute(60, burst=2)
    _, bucket = take(None, limit, now=0.0)
    _, bucket = take(bucket, limit, now=0.0)
    decision, bucket = take(bucket, limit, now=1.0)
    assert decision.allowed
    _, full = take(bucket, limit, now=1000.0)
    assert full.tokens == 1.0  # capped at burst 2, minus the one just taken


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1.0), (1.0, 0.5)])
def test_nonsense_limits_are_refused(rate: float, burst: float) -> None:
    with pytest.raises(ValueError):
        RateLimit(rate, burst)


def test_full_jitter_is_bounded_by_the_capped_exponential() -> None:
    assert full_jitter(0, base=0.1, cap=1.0, rand=lambda: 0.5) == 0.05
    assert full_jitter(10, base=0.1, cap=1.0, rand=lambda: 0.999) == pytest.approx(0.999)


def test_deadline_is_the_tightest_limit_on_the_injected_clock() -> None:
    now = [100.0]
    deadline = Deadline.within(30.0, None, 5.0, clock=lambda: now[0])
    assert deadline.remaining() == 5.0 and deadline.allows(4.9) and not deadline.allows(5.0)
    now[0] = 106.0
    assert deadline.expired and deadline.remaining() == 0.0
    assert Deadline.within(clock=lambda: 0.0).remaining() == float("inf")
