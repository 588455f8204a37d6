"""Exponential backoff with full jitter: the delay before retry number `attempt` (0-based)."""

from __future__ import annotations

import random
from collections.abc import Callable


def full_jitter(attempt: int, *, base: float, cap: float, rand: Callable[[], float] = random.random) -> float:
    """A delay drawn uniformly from [0, min(cap, base * 2**attempt)) seconds."""
    return rand() * min(cap, base * 2.0 ** max(attempt, 0))
