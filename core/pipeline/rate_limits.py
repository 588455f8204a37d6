"""Rate limits: a call that any of its buckets refused is refused, naming the bucket's scope and when to retry.

The buckets' decisions come from admission (asked together with the breaker, all or nothing); this stage only
turns a refusal into the client's error and counts it.
"""

from __future__ import annotations

from stratus.errors import RateLimitedError
from stratus.metrics import MetricsSink
from stratus.stores.records import CallAdmission, CallChecks


def enforce(item: str, checks: CallChecks, admission: CallAdmission, metrics: MetricsSink) -> None:
    """Raise for the first bucket that refused the call.

    Raises:
        RateLimitedError: a bucket refused; its scope (`tool`, `principal`, `session`, `overall`) and retry delay.
    """
    for (key, _), decision in zip(checks.limits, admission.decisions, strict=True):
        if not decision.allowed:
            scope = key.split(":", 1)[0]
            metrics.count("rate_limited", item=item, scope=scope)
            raise RateLimitedError(scope, decision.retry_after)
