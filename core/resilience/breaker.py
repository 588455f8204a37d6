"""The circuit-breaker state machine, as pure transitions over a `BreakerState`.

    CLOSED     calls flow; each failure is counted in a rolling window. `failure_threshold` failures within
               `window_seconds` -> OPEN.
    OPEN       calls fail fast until `cooldown_seconds` have passed since opening -> HALF_OPEN.
    HALF_OPEN  one trial call at a time is let through. Success -> CLOSED (counts reset); failure -> OPEN again.

A store applies `admit` before a call and `record` after it, each as one atomic step, so every container sees the
same state.
"""

import enum
from typing import NamedTuple

from stratus.frozen import Frozen


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class BreakerPolicy(Frozen):
    __slots__ = ("failure_threshold", "window_seconds", "cooldown_seconds")  # noqa: RUF023 (repr follows this order)
    failure_threshold: int
    window_seconds: float
    cooldown_seconds: float

    def __init__(
        self, failure_threshold: int = 5, window_seconds: float = 60.0, cooldown_seconds: float = 30.0
    ) -> None:
        if failure_threshold < 1 or window_seconds <= 0 or cooldown_seconds <= 0:
            raise ValueError("a breaker needs failure_threshold >= 1 and positive window and cooldown")
        self._set(failure_threshold=failure_threshold, window_seconds=window_seconds, cooldown_seconds=cooldown_seconds)


class BreakerState(NamedTuple):
    state: CircuitState = CircuitState.CLOSED
    failures: tuple[float, ...] = ()
    opened_at: float = 0.0
    trial_started_at: float | None = None


class Admission(NamedTuple):
    """Whether a call may proceed, the state it saw, and how long until an open circuit tries again.

    `trial_at` names the half-open trial this admission took, so a call refused for another reason can give it
    back (`release`) instead of holding the circuit for a cool-down.
    """

    allowed: bool
    state: CircuitState
    retry_after: float = 0.0
    trial_at: float | None = None


def admit(current: BreakerState, policy: BreakerPolicy, now: float) -> tuple[Admission, BreakerState]:
    """Decide whether a call may start."""
    if current.state is CircuitState.OPEN:
        reopen_at = current.opened_at + policy.cooldown_seconds
        if now < reopen_at:
            return Admission(False, CircuitState.OPEN, reopen_at - now), current
        trial = current._replace(state=CircuitState.HALF_OPEN, trial_started_at=now)
        return Admission(True, CircuitState.HALF_OPEN, trial_at=now), trial
    if current.state is CircuitState.HALF_OPEN:
        # A trial whose caller died (e.g. its container was frozen) must not hold the circuit half-open forever.
        stale = current.trial_started_at is None or now - current.trial_started_at >= policy.cooldown_seconds
        if stale:
            return Admission(True, CircuitState.HALF_OPEN, trial_at=now), current._replace(trial_started_at=now)
        return Admission(False, CircuitState.HALF_OPEN, policy.cooldown_seconds), current
    return Admission(True, CircuitState.CLOSED), current


def release(current: BreakerState, trial_at: float) -> BreakerState:
    """The state after an admitted trial gave its place back without running: the next call may be the trial."""
    if current.state is CircuitState.HALF_OPEN and current.trial_started_at == trial_at:
        return current._replace(trial_started_at=None)
    return current


def record(current: BreakerState, policy: BreakerPolicy, now: float, *, success: bool) -> BreakerState:
    """The state after a call that was admitted ended."""
    if current.state is CircuitState.HALF_OPEN:
        return BreakerState() if success else BreakerState(CircuitState.OPEN, (), now, None)
    if success or current.state is CircuitState.OPEN:
        # Successes do not forgive failures inside the window; a late result cannot change an open circuit.
        return current
    recent = (*(at for at in current.failures if now - at < policy.window_seconds), now)
    if len(recent) >= policy.failure_threshold:
        return BreakerState(CircuitState.OPEN, (), now, None)
    return current._replace(failures=recent)
