"""Token-bucket arithmetic: a bucket refills at `rate` tokens a second up to `burst`; a request takes `cost`."""

import math
from typing import NamedTuple

from stratus.frozen import Frozen


class RateLimit(Frozen):
    """`rate` requests a second on average, `burst` at once."""

    __slots__ = ("rate", "burst")  # noqa: RUF023 (repr follows this order)
    rate: float
    burst: float

    def __init__(self, rate: float, burst: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate > 0 and burst >= 1")
        self._set(rate=rate, burst=burst)

    @classmethod
    def per_minute(cls, requests: float, *, burst: float | None = None) -> "RateLimit":
        return cls(requests / 60.0, burst if burst is not None else max(1.0, requests))

    @classmethod
    def per_second(cls, requests: float, *, burst: float | None = None) -> "RateLimit":
        return cls(requests, burst if burst is not None else max(1.0, requests))


class Bucket(NamedTuple):
    tokens: float
    updated_at: float


class Decision(NamedTuple):
    """Whether the request may proceed; if not, when a retry could succeed."""

    allowed: bool
    retry_after: float = 0.0


def take(bucket: Bucket | None, limit: RateLimit, now: float, cost: float = 1.0) -> tuple[Decision, Bucket]:
    """Refill the bucket to `now`, then take `cost` tokens if there are enough."""
    if bucket is None:
        tokens = limit.burst
    else:
        elapsed = max(0.0, now - bucket.updated_at)
        tokens = min(limit.burst, bucket.tokens + elapsed * limit.rate)
    if tokens >= cost:
        return Decision(True), Bucket(tokens - cost, now)
    return Decision(False, (cost - tokens) / limit.rate), Bucket(tokens, now)


def give_back(bucket: Bucket | None, limit: RateLimit, now: float, cost: float = 1.0) -> Bucket:
    """The bucket after a call that took `cost` was refused for another reason: as if it had never taken them."""
    if bucket is None:
        return Bucket(limit.burst, now)
    elapsed = max(0.0, now - bucket.updated_at)
    return Bucket(min(limit.burst, bucket.tokens + elapsed * limit.rate + cost), now)


def idle_seconds(limit: RateLimit) -> float:
    """How long until an untouched bucket is full again, i.e. how long its state is worth keeping."""
    return limit.burst / limit.rate


def window(limit: RateLimit, now: float) -> tuple[int, float]:
    """The fixed window `now` falls in and when it ends: at most `burst` calls per `burst / rate` seconds.

    Stores that cannot refill a bucket atomically (DynamoDB) count calls per window with an atomic counter
    instead: never more than the limit, however many writers race, at the cost of bursts at window edges.
    """
    length = limit.burst / limit.rate
    index = math.floor(now / length)
    return index, (index + 1) * length
