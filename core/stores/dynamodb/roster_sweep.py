"""The sweep of the DynamoDB session roster: re-reading the sessions whose roster entry says they are due, moving
the live ones forward and removing the rest (also the sessions DynamoDB's TTL already deleted), each removal a
transaction that frees its places. The scheduled sweeper works a bounded slice per run (`step`: at most
`STEP_PAGES` pages of roster, resumed next run from a cursor item), so every expired session is removed within one
cycle over the shards; `everything` goes over every shard (tests, operators).
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any, NamedTuple

from stratus.stores.dynamodb.session_counts import ENDED, PRINCIPAL, SessionCounts, counts_of, principal_of
from stratus.stores.dynamodb.shards import SEEN, Shards
from stratus.stores.dynamodb.table import ConditionFailedError, DynamoTable, Item, number, number_of

SWEEP_BATCH = 100  # BatchGetItem's limit
STEP_PAGES = 64
"""Roster pages (up to 1 MB each) one `step` reads: a sweeper run's work, whatever the session count."""
REFUSAL_SWEEPS = 4
"""Shards a refused create sweeps before it gives up (bounded: a create at the limit costs no full sweep)."""


class Seen(NamedTuple):
    """The live sessions a sweep kept in (part of) one roster partition: how many, the oldest and newest creation."""

    live: int = 0
    oldest: float | None = None
    newest: float | None = None

    def add(self, other: Seen) -> Seen:
        return Seen(
            self.live + other.live,
            _earliest(self.oldest, other.oldest),
            _latest(self.newest, other.newest),
        )


class SweepSlice(NamedTuple):
    """What sweeping part of one roster partition found: how many it removed, what it kept, where to resume (None:
    the partition's end), and how many pages it read."""

    removed: int
    seen: Seen
    resume: Item | None
    pages: int


class RosterSweep:
    """Sweeps the roster partitions of one table's sessions, whole or a bounded slice at a time."""

    def __init__(
        self,
        table: DynamoTable,
        counts: SessionCounts,
        *,
        step_pages: int = STEP_PAGES,
        page_entries: int | None = None,
    ) -> None:
        self.table = table
        self.counts = counts
        self.shards: Shards = counts.shards
        self.step_pages = step_pages
        """Roster pages one `step` reads."""
        self.page_entries = page_entries
        """Entries per roster page (None: DynamoDB's 1 MB pages); tests make a slice smaller than their sessions."""
        self.cursor = table.key("sweep", "cursor")

    async def everything(self) -> int:
        removed = 0
        for shard in range(self.shards.count):
            removed += await self.shard(shard)
        return removed

    async def step(self) -> int:
        """Sweep the next `step_pages` pages of roster, resuming where the last step stopped (a cursor item); after
        the last shard the next step begins again at the first."""
        cursor = await self.table.get(self.cursor) or {}
        shard = int(number_of(cursor, "shard")) % self.shards.count
        resume: Item | None = cursor.get("resume", {}).get("M")
        seen = Seen(
            int(number_of(cursor, "live")),
            number_of(cursor, "oldest") if "oldest" in cursor else None,
            number_of(cursor, "newest") if "newest" in cursor else None,
        )
        removed, pages = 0, self.step_pages
        for _ in range(self.shards.count):
            found = await self._pages(shard, resume, pages)
            removed += found.removed
            seen = seen.add(found.seen)
            pages -= found.pages
            resume = found.resume
            if resume is not None:
                break  # the budget ran out inside this shard: the next step resumes here
            await self._record(shard, seen)
            shard, seen = (shard + 1) % self.shards.count, Seen()
            if pages <= 0:
                break
        position: Item = {**self.cursor, "shard": {"N": str(shard)}, "live": {"N": str(seen.live)}}
        if resume is not None:
            position["resume"] = {"M": resume}
        if seen.oldest is not None:
            position["oldest"] = number(seen.oldest)
        if seen.newest is not None:
            position["newest"] = number(seen.newest)
        await self.table.call("put_item", Item=position)
        return removed

    async def for_room(self) -> int:
        """Sweep `REFUSAL_SWEEPS` shards, starting at a random one; how many sessions that removed."""
        start = secrets.randbelow(self.shards.used)
        removed = 0
        for step in range(min(REFUSAL_SWEEPS, self.shards.used)):
            removed += await self.shard((start + step) % self.shards.used)
        return removed

    async def shard(self, shard: int) -> int:
        """Sweep one roster partition to its end and record what it kept on the shard's count item."""
        removed, seen, resume = 0, Seen(), None
        while True:
            found = await self._pages(shard, resume, self.step_pages)
            removed, seen, resume = removed + found.removed, seen.add(found.seen), found.resume
            if resume is None:
                break
        await self._record(shard, seen)
        return removed

    async def _pages(self, shard: int, resume: Item | None, pages: int) -> SweepSlice:
        """Read up to `pages` pages of a roster partition from `resume`, removing the expired sessions."""
        now = self.table.clock()
        params: dict[str, Any] = {
            "KeyConditionExpression": "PK = :roster",
            "ExpressionAttributeValues": {":roster": self.shards.partition(shard)},
        }
        if self.page_entries:
            params["Limit"] = self.page_entries
        removed, seen, read = 0, Seen(), 0
        while read < max(pages, 1):
            if resume is not None:
                params["ExclusiveStartKey"] = resume
            page = await self.table.call("query", **params)
            read += 1
            entries = page.get("Items", [])
            kept = [number_of(entry, "created") for entry in entries if number_of(entry, "until") > now]
            due = [entry for entry in entries if number_of(entry, "until") <= now]
            swept, live = await self._remove_due(shard, due, now)
            removed += swept
            kept += live
            seen = seen.add(Seen(len(kept), min(kept, default=None), max(kept, default=None)))
            resume = page.get("LastEvaluatedKey")
            if resume is None:
                break
        return SweepSlice(removed, seen, resume, read)

    async def _remove_due(self, shard: int, due: list[Item], now: float) -> tuple[int, list[float]]:
        """Re-read the due entries' sessions: move the live ones forward (their creations returned), remove the
        rest; how many were removed."""
        removed, live = 0, []
        for start in range(0, len(due), SWEEP_BATCH):
            batch = due[start : start + SWEEP_BATCH]
            ids = [entry["SK"]["S"] for entry in batch]
            items = await self.table.get_many([self.table.key("session", i) for i in ids])
            for entry, session_id, item in zip(batch, ids, items, strict=True):
                if item is not None and ENDED not in item and number_of(item, "expires") > now:
                    await self._move_forward(shard, session_id, number_of(item, "expires"))
                    live.append(number_of(entry, "created"))
                    continue
                counted = counts_of(entry)
                owner = principal_of(entry) if PRINCIPAL in counted else None
                removal = [
                    self._delete_expired(session_id, now),
                    *self.counts.free_place(session_id, shard, owner, counted),
                ]
                if not counted:  # no count to keep in step: the session, then its entry, each a plain delete
                    removal = removal[:1]
                try:
                    await self.table.write(removal)
                    removed += 1
                except ConditionFailedError:
                    continue  # touched meanwhile, or another sweeper freed it first
                if not counted:
                    await self.table.call("delete_item", Key=self.shards.entry(shard, session_id))
                await self.counts.tidy(owner)
        return removed, live

    async def _record(self, shard: int, seen: Seen) -> None:
        """After a sweep went over a shard's whole partition: under a limit correct its count's oldest creation;
        with none, record what it saw live for the census."""
        if self.shards.limit:
            await self._set_oldest(shard, seen.oldest)
            return
        values: dict[str, Any] = {":live": {"N": str(seen.live)}}
        sets, removes = [f"{SEEN[0]} = :live"], []
        for name, value in ((SEEN[1], seen.oldest), (SEEN[2], seen.newest)):
            if value is None:
                removes.append(name)
            else:
                sets.append(f"{name} = :{name}")
                values[f":{name}"] = number(value)
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        await self.table.call(
            "update_item",
            Key=self.shards.counter(shard),
            UpdateExpression=expression,
            ExpressionAttributeValues=values,
        )

    async def _set_oldest(self, shard: int, oldest: float | None) -> None:
        """Record a shard's oldest live creation after a sweep went over its whole partition (none: forget it,
        unless a session was counted meanwhile)."""
        if oldest is None:
            update = {"UpdateExpression": "REMOVE oldest", "ConditionExpression": "#count <= :none"}
            values = {":none": {"N": "0"}}
        else:
            update = {"UpdateExpression": "SET oldest = :oldest", "ConditionExpression": "attribute_exists(PK)"}
            values = {":oldest": number(oldest)}
        with contextlib.suppress(ConditionFailedError):
            await self.table.call(
                "update_item",
                Key=self.shards.counter(shard),
                ExpressionAttributeNames={"#count": "count"} if oldest is None else {},
                ExpressionAttributeValues=values,
                **update,
            )

    async def _move_forward(self, shard: int, session_id: str, until: float) -> None:
        with contextlib.suppress(ConditionFailedError):  # ended meanwhile
            await self.table.call(
                "update_item",
                Key=self.shards.entry(shard, session_id),
                UpdateExpression="SET #until = :until",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeNames={"#until": "until"},
                ExpressionAttributeValues={":until": number(until)},
            )

    def _delete_expired(self, session_id: str, now: float) -> Item:
        return self.table.action(
            "Delete",
            Key=self.table.key("session", session_id),
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
        )


def _earliest(first: float | None, second: float | None) -> float | None:
    return second if first is None else first if second is None else min(first, second)


def _latest(first: float | None, second: float | None) -> float | None:
    return second if first is None else first if second is None else max(first, second)
