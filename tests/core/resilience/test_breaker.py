"""The circuit-breaker state machine, transition by transition, on explicit times."""

from __future__ import annotations

from stratus.resilience.breaker import BreakerPolicy, BreakerState, CircuitState, admit, record

POLICY = BreakerPolicy(failure_threshold=3, window_seconds=10.0, cooldown_seconds=5.0)


def fail(state: BreakerState, at: float) -> BreakerState:
    return record(state, POLICY, at, success=False)


def test_threshold_failures_inside_the_window_open_the_circuit() -> None:
    state = fail(fail(fail(BreakerState(), 0.0), 1.0), 2.0)
    assert state.state is CircuitState.OPEN and state.opened_at == 2.0


def test_failures_older_than_the_window_do_not_count() -> None:
    state = fail(fail(BreakerState(), 0.0), 1.0)
    state = fail(state, 10.5)  # the failure at 0.0 has left the window
    assert state.state is CircuitState.CLOSED and state.failures == (1.0, 10.5)


def test_successes_do_not_forgive_failures_in_the_window() -> None:
    state = record(fail(fail(BreakerState(), 0.0), 1.0), POLICY, 1.5, success=True)
    assert fail(state, 2.0).state is CircuitState.OPEN


def test_open_circuit_fails_fast_with_time_until_the_trial() -> None:
    opened = BreakerState(CircuitState.OPEN, (), 100.0)
    admission, same = admit(opened, POLICY, 102.0)
    assert not admission.allowed and admission.retry_after == 3.0 and same == opened


def test_after_the_cooldown_one_trial_goes_through_and_others_wait() -> None:
    admission, trial = admit(BreakerState(CircuitState.OPEN, (), 100.0), POLICY, 105.0)
    assert admission.allowed and trial.state is CircuitState.HALF_OPEN
    second, _ = admit(trial, POLICY, 105.1)
    assert not second.allowed and second.state is CircuitState.HALF_OPEN


def test_trial_success_closes_and_trial_failure_reopens() -> None:
    trial = BreakerState(CircuitState.HALF_OPEN, (), 100.0, 105.0)
    assert record(trial, POLICY, 106.0, success=True) == BreakerState()
    reopened = record(trial, POLICY, 106.0, success=False)
    assert reopened.state is CircuitState.OPEN and reopened.opened_at == 106.0


def test_an_abandoned_trial_is_replaced_after_a_cooldown() -> None:
    trial = BreakerState(CircuitState.HALF_OPEN, (), 100.0, 105.0)
    admission, renewed = admit(trial, POLICY, 110.0)
    assert admission.allowed and renewed.trial_started_at == 110.0
