"""Parameter Store's throughput quota, as the emulated SSM applies it.

Parameter Store's standard throughput is 40 transactions a second, shared by `GetParameter`, `GetParameters` and
`GetParametersByPath`, per account and Region
(https://docs.aws.amazon.com/general/latest/gr/ssm.html#limits_ssm; the page "Changing Parameter Store
throughput", https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-throughput.html). A call
past it is answered as SSM answers it: HTTP 400, `__type` `ThrottlingException`, "Rate exceeded"
(https://repost.aws/knowledge-center/ssm-parameter-store-rate-exceeded). AWS does not say how it measures the
rate; here it is a token bucket holding one second's calls, refilled at the rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SSM_STANDARD_TPS = 40.0
"""Parameter Store's default ("standard") throughput, in transactions a second per account and Region."""
SSM_THROTTLED_OPERATIONS = frozenset({"GetParameter", "GetParameters", "GetParametersByPath"})


class Throughput:
    """At most `per_second` calls a second, a second's worth at once."""

    def __init__(self, per_second: float, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self._capacity = max(1.0, per_second)
        self._tokens = self._capacity
        self._monotonic = monotonic
        self._last = monotonic()

    def admits(self) -> bool:
        """Whether a call now is within the rate (and, when it is, counts it)."""
        now = self._monotonic()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True
