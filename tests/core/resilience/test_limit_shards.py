"""How a shared limit is split: small limits stay on one key (exact); large ones over at most 128 keys, each
allowing its share; one container takes a key's shards in turn."""

from __future__ import annotations

from stratus.resilience.limit_shards import MAX_SHARDS, MIN_SHARD_BURST, Rotation, shard_count, spread
from stratus.resilience.limiter import RateLimit


def test_a_limit_under_twice_the_minimum_share_stays_on_one_key() -> None:
    limit = RateLimit.per_second(10.0, burst=2 * MIN_SHARD_BURST - 1)
    assert spread("tool:t", limit) == ("tool:t", limit)


def test_a_large_limit_is_split_into_equal_shares_that_add_up_to_it() -> None:
    limit = RateLimit.per_second(100_000.0)
    assert shard_count(limit) == MAX_SHARDS
    key, share = spread("tool:t", limit, Rotation())
    assert key.startswith("tool:t#") and 0 <= int(key.rsplit("#", 1)[1]) < MAX_SHARDS
    assert share.rate * MAX_SHARDS == limit.rate and share.burst * MAX_SHARDS == limit.burst
    assert shard_count(RateLimit.per_second(1_000.0)) == 10


def test_one_container_takes_each_keys_shards_in_turn() -> None:
    rotation, limit = Rotation(), RateLimit.per_second(400.0)
    tool = [spread("tool:a", limit, rotation)[0] for _ in range(8)]
    overall = [spread("overall", limit, rotation)[0] for _ in range(4)]
    assert sorted(tool) == sorted(f"tool:a#{k}" for k in (0, 1, 2, 3, 0, 1, 2, 3))
    assert tool[:4] == tool[4:]
    assert sorted(overall) == [f"overall#{k}" for k in range(4)]
