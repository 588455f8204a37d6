"""A point in time a request must finish by, on an injectable monotonic clock."""

import time
from collections.abc import Callable
from typing import NamedTuple

Clock = Callable[[], float]


class Deadline(NamedTuple):
    """The earliest of every limit that applies to a request (tool timeout, global timeout, Lambda's time left)."""

    expires_at: float
    clock: Clock = time.monotonic

    @classmethod
    def within(cls, *limits_seconds: float | None, clock: Clock = time.monotonic) -> "Deadline":
        """The deadline of the tightest limit given; no limits means no deadline (infinitely far)."""
        given = [limit for limit in limits_seconds if limit is not None]
        now = clock()
        return cls(now + min(given) if given else float("inf"), clock)

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.expires_at - self.clock())

    @property
    def expired(self) -> bool:
        return self.clock() >= self.expires_at

    def allows(self, seconds: float) -> bool:
        """Whether waiting `seconds` would still leave time before the deadline."""
        return self.clock() + seconds < self.expires_at
