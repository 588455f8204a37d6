"""The session count and roster of a DynamoDB table, spread over `SHARDS` partition keys so that no key is hot.

A session belongs to one shard, chosen when it is created and written on its item (`shard`): its roster entry sits
in that shard's roster partition (`{prefix}#roster#<k>`), and it counts in that shard's count item
(`{prefix}#sessions#<k>`). With a limit of L sessions, shard k holds `L // SHARDS` places, one more for the first
`L % SHARDS` shards: the places add up to exactly L and each is taken by a conditional write, so racing creates
never admit more than L sessions (the bound on overshoot is zero). The limit is approximate the other way only: a
create whose shard is full reads every shard's count and moves to the one with the most room, and is refused when
none had room at that read, or when racing creates took the room it found `ATTEMPTS` times; a place freed in a shard
after that read serves the next create.

One count item takes at most 1,000 write units a second, and a transactional write costs two
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html#bp-partition-key-throughput-bursting,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling):
64 shards carry 32,000 creates and ends a second (docs/scale.md). The census sums the shards' counts with one
`BatchGetItem` (at most 100 keys:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html), whatever the session count.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from stratus.stores.dynamodb.table import DynamoTable, Item, number_of
from stratus.stores.records import SessionCensus

SHARDS = 64
ATTEMPTS = 3
"""Creates a refused create tries, on the shard with the most room each time, before it sweeps."""
SEEN = ("seen", "seenOldest", "seenNewest")
"""The attributes of a count item where the sweeper records the live sessions it last saw in the shard."""


class Shards:
    """Keys and places of the session shards of one table prefix, for a limit of `limit` sessions (0: none)."""

    def __init__(self, table: DynamoTable, limit: int, count: int = SHARDS) -> None:
        self.table = table
        self.limit = limit
        self.count = count
        self.used = min(count, limit) if limit else count
        """How many shards hold places (with a limit below `count`, the first `limit` shards hold one each)."""

    def places(self, shard: int) -> int:
        """How many sessions `shard` may count (0: no limit)."""
        if not self.limit:
            return 0
        return self.limit // self.count + (1 if shard < self.limit % self.count else 0)

    def first(self, session_id: str) -> int:
        """The shard a session tries first: its id's hash, spreading random ids evenly over the shards in use."""
        return zlib.crc32(session_id.encode()) % self.used

    def counter(self, shard: int) -> Item:
        return {"PK": {"S": f"{self.table.prefix}#sessions#{shard}"}, "SK": {"S": "count"}}

    def partition(self, shard: int) -> dict[str, str]:
        return {"S": f"{self.table.prefix}#roster#{shard}"}

    def entry(self, shard: int, session_id: str) -> Item:
        return {"PK": self.partition(shard), "SK": {"S": session_id}}

    async def counters(self, *, consistent: bool) -> list[Item | None]:
        """Every shard's count item (None: never counted), in one request."""
        keys = [self.counter(shard) for shard in range(self.count)]
        return await self.table.get_many(keys, consistent=consistent)

    async def roomiest(self, exclude: Sequence[int] = ()) -> int | None:
        """The shard with the most free places by a strongly consistent read of all counts (None: all full)."""
        counters = await self.counters(consistent=True)
        room = {
            shard: self.places(shard) - int(number_of(item or {}, "count"))
            for shard, item in enumerate(counters[: self.used])
            if shard not in exclude
        }
        best = max(room, key=lambda shard: room[shard], default=None)
        return best if best is not None and room[best] > 0 else None

    async def census(self) -> SessionCensus:
        """The sum of the shards' counts; the oldest and newest creation over the shards that count a session. With
        no limit nothing is counted: the sum of what the sweeper last saw live in each shard (`seen`, `seenOldest`,
        `seenNewest`), as old as one sweeper cycle."""
        count, oldest_at, newest_at = ("count", "oldest", "newest") if self.limit else SEEN
        counted = [item for item in await self.counters(consistent=False) if item and number_of(item, count) > 0]
        oldest = [number_of(item, oldest_at) for item in counted if oldest_at in item]
        newest = [number_of(item, newest_at) for item in counted if newest_at in item]
        return SessionCensus(
            sum(int(number_of(item, count)) for item in counted),
            min(oldest, default=None),
            max(newest, default=None),
        )
