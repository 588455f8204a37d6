"""A server-wide event log kept under many partition keys, so that the streams following it spread their reads.

Every open stream follows the `*/` logs (`stratus.stores.base.EventLogStore`). On Lambda each open stream is a
container of its own polling the log, so 100,000 streams would ask one partition key for about 400,000 reads a
second, where one partition serves 3,000 read units
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html#bp-partition-key-throughput-bursting).

Instead an event is numbered once, on the log's own counter item, then put under each of MIRRORS keys
(BatchWriteItem, 25 a request), and each process reads the one mirror it picked when its store was built: 100,000
streams polling 4 times a second make about 1,600 reads a second per mirror (docs/scale.md). Server-wide
notifications are rare (list changes, resource updates), so the MIRRORS writes each costs are the cheap side of the
trade; what one session alone needs goes to its own log.
"""

from __future__ import annotations

import secrets

from stratus.stores.dynamodb.table import DynamoTable, Item

MIRRORS = 256
"""Keys each server-wide event is written under."""

SERVER_WIDE_PREFIX = "*/"


def is_server_wide(stream: str) -> bool:
    return stream.startswith(SERVER_WIDE_PREFIX)


class Mirrors:
    """Where a server-wide log's events are written (every mirror) and read (this process's one)."""

    def __init__(self, table: DynamoTable, count: int = MIRRORS) -> None:
        self.table = table
        self.count = count
        self.mine = secrets.randbelow(count)
        """The mirror this process reads, picked at random so that processes spread evenly."""

    def _key(self, stream: str, mirror: int) -> Item:
        return self.table.key("stream", f"{stream}#{mirror}")

    def read_key(self, stream: str) -> Item:
        return self._key(stream, self.mine)

    async def put(self, stream: str, fields: Item) -> None:
        """Write one event (`fields`: its sort key and attributes) under every mirror of the log."""
        await self.table.put_many([{**self._key(stream, mirror), **fields} for mirror in range(self.count)])
