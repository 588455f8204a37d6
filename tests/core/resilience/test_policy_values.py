"""The policies a server declares are values: equal by their fields, hashable, shown by their fields, never changed
after construction, and refused at construction when they cannot work."""

import pytest

from stratus import BreakerPolicy, RateLimit, RetryPolicy


def test_policies_with_the_same_fields_are_equal_and_hash_alike() -> None:
    assert RetryPolicy(attempts=2) == RetryPolicy(attempts=2, base_delay=0.05, max_delay=1.0)
    assert len({RateLimit(5, 10), RateLimit(5.0, 10.0), RateLimit.per_second(5, burst=10)}) == 1
    assert BreakerPolicy() == BreakerPolicy(5, 60.0, 30.0)
    assert RetryPolicy(attempts=2) != RetryPolicy(attempts=3)
    assert RateLimit(1, 1) != BreakerPolicy(1, 1, 1)


def test_a_policy_shows_its_fields_in_declaration_order() -> None:
    assert repr(RateLimit.per_minute(60)) == "RateLimit(rate=1.0, burst=60)"
    assert repr(BreakerPolicy()) == "BreakerPolicy(failure_threshold=5, window_seconds=60.0, cooldown_seconds=30.0)"
    assert repr(RetryPolicy()) == "RetryPolicy(attempts=3, base_delay=0.05, max_delay=1.0)"


@pytest.mark.parametrize("policy", [RetryPolicy(), RateLimit(1, 1), BreakerPolicy()])
def test_a_policy_cannot_be_changed_after_construction(policy: object) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        policy.attempts = 9  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="immutable"):
        del policy.rate  # type: ignore[attr-defined]


def test_a_retry_policy_takes_keywords_only() -> None:
    with pytest.raises(TypeError):
        RetryPolicy(2)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RetryPolicy(attempts=0), "attempts >= 1"),
        (lambda: RateLimit(0, 1), "rate > 0"),
        (lambda: BreakerPolicy(window_seconds=0), "positive window"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_at_construction(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]
