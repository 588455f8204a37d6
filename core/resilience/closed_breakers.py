"""Breakers a container recently found closed, so that its calls skip asking the store for a few seconds.

A tool's breaker is one key that every call of the tool would read (DynamoDB: 1 strongly consistent read a call;
Redis: one script on its slot), so at 100,000 calls a second of one tool that key would bind. A container that found
the breaker closed admits its next calls as closed for CLOSED_SECONDS without asking: the store then sees about one
read per container every CLOSED_SECONDS (5,000 containers: 1,000 reads a second). Failures are still recorded in
the store at once, and a container that records one forgets what it knew, so the container that opens a breaker
refuses its next call; **another container learns that it opened at most CLOSED_SECONDS late**, letting calls
through meanwhile as a closed breaker would. Open and half-open circuits are never remembered: while a breaker is
not closed every call asks the store, as before.
"""

from __future__ import annotations

from stratus.resilience.breaker import Admission, CircuitState
from stratus.resilience.deadline import Clock

CLOSED_SECONDS = 5.0

CLOSED = Admission(True, CircuitState.CLOSED)
"""What a call admitted by a remembered closed breaker is told."""


class ClosedBreakers:
    """Per breaker key, until when this container takes it as closed without asking the store."""

    def __init__(self, clock: Clock, seconds: float = CLOSED_SECONDS) -> None:
        self.clock = clock
        self.seconds = seconds
        self._until: dict[str, float] = {}

    def closed(self, key: str) -> bool:
        until = self._until.get(key)
        if until is None:
            return False
        if self.clock() < until:
            return True
        del self._until[key]
        return False

    def saw(self, key: str, admission: Admission | None) -> None:
        """What the store answered for `key`: a closed breaker is remembered, anything else forgotten."""
        if self.seconds > 0 and admission is not None and admission.allowed and admission.state is CircuitState.CLOSED:
            self._until[key] = self.clock() + self.seconds
        else:
            self._until.pop(key, None)

    def forget(self, key: str) -> None:
        self._until.pop(key, None)
