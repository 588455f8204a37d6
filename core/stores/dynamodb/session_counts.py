"""The counts a DynamoDB session takes when it is created and gives back when it ends: a place in its shard's count
under the session limit, one in its principal's count under the quota (`{prefix}#principal#<principal>`), and its
roster entry. Each is a write of the session's own transaction, so the counts never drift from the sessions.

The counts a session took are named on its item and its roster entry (`counted`: a list of `shard` and `principal`,
empty when none): ending or sweeping it gives back those and no other, so a deployment that sets or lifts a limit
while sessions live never takes a count below what was added.
"""

from __future__ import annotations

import contextlib
from typing import Any

from stratus.stores.dynamodb.shards import Shards
from stratus.stores.dynamodb.table import ConditionFailedError, DynamoTable, Item, number
from stratus.stores.records import SessionRecord

ENDED = "ended"
"""The attribute of an ended session's tombstone (the ending write's token): it holds no data and counts nowhere."""
COUNTED = "counted"
"""The attribute naming the counts a session took (`SHARD`, `PRINCIPAL`)."""
SHARD, PRINCIPAL = "shard", "principal"


class SessionCounts:
    """The writes that count a session in and out of its shard's places and its principal's quota."""

    def __init__(self, table: DynamoTable, shards: Shards, *, max_sessions: int, max_per_principal: int) -> None:
        self.table = table
        self.shards = shards
        self.max_sessions = max_sessions
        self.max_per_principal = max_per_principal

    def taken(self, record: SessionRecord) -> list[str]:
        """The counts a new session takes: its shard's only under a limit, its principal's only under a quota."""
        counted = [SHARD] if self.max_sessions else []
        return [*counted, PRINCIPAL] if record.principal and self.max_per_principal else counted

    def count(self, shard: int, change: int, now: float | None = None) -> Item:
        """Count a session in (with its creation: the shard's newest, and its oldest if it has none) or out."""
        update: dict[str, Any] = {
            "Key": self.shards.counter(shard),
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        if now is not None:
            update["UpdateExpression"] += " SET newest = :now, oldest = if_not_exists(oldest, :now)"
            update["ExpressionAttributeValues"][":now"] = number(now)
        if change > 0 and self.max_sessions:
            update["ConditionExpression"] = "attribute_not_exists(#count) OR #count < :places"
            update["ExpressionAttributeValues"][":places"] = {"N": str(self.shards.places(shard))}
        return self.table.action("Update", **update)

    def principal_count(self, principal: str, change: int) -> Item:
        update: dict[str, Any] = {
            "Key": self.table.key("principal", principal),
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        if change > 0 and self.max_per_principal:
            update["ConditionExpression"] = "attribute_not_exists(#count) OR #count < :quota"
            update["ExpressionAttributeValues"][":quota"] = {"N": str(self.max_per_principal)}
        return self.table.action("Update", **update)

    def free_place(self, session_id: str, shard: int, principal: str | None, counted: list[str]) -> list[Item]:
        """Remove the session's roster entry (only once, however many race) and count it out of the counts it took:
        its shard's, its principal's."""
        writes = [
            self.table.action(
                "Delete", Key=self.shards.entry(shard, session_id), ConditionExpression="attribute_exists(PK)"
            )
        ]
        if SHARD in counted:
            writes.append(self.count(shard, -1))
        if principal:
            writes.append(self.principal_count(principal, -1))
        return writes

    async def tidy(self, principal: str | None) -> None:
        """Delete a principal's count once it counts no session (a later session writes it afresh)."""
        if principal:
            with contextlib.suppress(ConditionFailedError):  # a session of that principal came meanwhile
                await self.table.call(
                    "delete_item",
                    Key=self.table.key("principal", principal),
                    ConditionExpression="#count <= :none",
                    ExpressionAttributeNames={"#count": "count"},
                    ExpressionAttributeValues={":none": {"N": "0"}},
                )


def names(counted: list[str]) -> Item:
    return {"L": [{"S": name} for name in counted]}


def counts_of(item: Item) -> list[str]:
    """The counts a session item or roster entry says its session took (written before they said: the shard's,
    and the principal's when it has one)."""
    names = item.get(COUNTED)
    if names is None:
        return [SHARD, PRINCIPAL] if "principal" in item else [SHARD]
    return [name["S"] for name in names["L"]]


def principal_of(entry: Item | None) -> str | None:
    """The principal a session item or roster entry names (None: anonymous, or no such item)."""
    principal = (entry or {}).get("principal")
    return principal["S"] if principal else None
