"""One rate limit shared by every caller (a tool's, the server's overall), spread over several store keys.

Every call of a tool counts against its tool-wide limit, so kept on one key that key takes every call: about 1,000
writes a second on a DynamoDB item, 100,000 commands on a Redis shard. Spread over N shards, each call counts on one
shard and each shard allows `1/N` of the limit (its rate and its burst), so together the shards never admit more
than the limit. The error is the other way: a call whose shard is full is refused while another may have room.

Each container takes a key's shards in turn, from a random one, so the calls one container counts differ by at most
one between shards, and those of C containers by at most C: at a demand equal to the limit the shards admit at most
`N * C / 2` fewer calls in a window than the limit (every shard fills at a demand of the limit plus `N * C`). Many
containers starting at random shards spread like random picks: about `0.4 * sqrt(N * burst)` fewer, at most
`0.4 / sqrt(MIN_SHARD_BURST)` (4%) of the limit, since a limit is split only so far that each shard keeps at least
MIN_SHARD_BURST. A limit with a burst under 2 * MIN_SHARD_BURST stays on one key, exact (docs/scale.md).
"""

from __future__ import annotations

import random

from stratus.resilience.limiter import RateLimit

MIN_SHARD_BURST = 100
"""Calls each shard allows at once, at least: keeps the refusals a full shard makes beside an emptier one small."""
MAX_SHARDS = 128
"""At 100,000 calls a second, 128 shards take about 780 each: under a DynamoDB item's 1,000 writes a second."""


def shard_count(limit: RateLimit) -> int:
    """How many keys `limit` is spread over: as many as keep MIN_SHARD_BURST each, at most MAX_SHARDS."""
    return max(1, min(MAX_SHARDS, int(limit.burst // MIN_SHARD_BURST)))


class Rotation:
    """Each key's shards in turn, starting at a random one (per process: per container)."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def pick(self, key: str, shards: int) -> int:
        turn = self._last.get(key, random.randrange(shards)) + 1  # noqa: S311 - spreading load, not a secret
        self._last[key] = turn % shards
        return turn % shards


_ROTATION = Rotation()


def spread(key: str, limit: RateLimit, rotation: Rotation = _ROTATION) -> tuple[str, RateLimit]:
    """The shard key this call counts on and that shard's share of the limit (`key` itself when not split)."""
    shards = shard_count(limit)
    if shards == 1:
        return key, limit
    return f"{key}#{rotation.pick(key, shards)}", RateLimit(limit.rate / shards, limit.burst / shards)
