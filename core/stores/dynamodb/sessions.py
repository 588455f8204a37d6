"""DynamoDB sessions, and the sharded roster that counts them across containers.

A session is one item. It belongs to one of `SHARDS` shards (`stratus.stores.dynamodb.shards`): its roster entry
sits in that shard's roster partition and it counts in that shard's count item. Creating and ending a session
write the three in one transaction, the count conditioned on the shard's places, so racing containers never admit
more than `max_sessions`. A session with a principal also counts in that principal's own item
(`{prefix}#principal#<principal>`) in the same transaction, conditioned on the quota; the session item names its
shard and principal, so ending it frees both places at once, and a count left at zero is deleted. A request
sliding a session's expiry touches only the session: the sweep re-reads the sessions whose roster entry says they
are due, moving the live ones forward and removing the rest (also the sessions DynamoDB's TTL already deleted),
each removal a transaction that frees its places. The scheduled sweeper works a bounded slice per run
(`sweep_step`: at most `STEP_PAGES` pages of roster, resumed next run from a cursor item), so every expired session
is removed within one cycle over the shards; `sweep` goes over every shard (tests, operators).

Creating and ending are safe to send twice (botocore resends a request whose answer was lost): the session item
carries the creating write's token `w`, and an ended session stays behind as a tombstone naming the ending write
(`ended`, no data, expired at once for the TTL to collect), so a resend that fails its condition finds its own
token and reads as done, while another writer's item still reads as taken or gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import Any, NamedTuple

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
from stratus.stores.dynamodb.shards import ATTEMPTS, SEEN, Shards
from stratus.stores.dynamodb.table import (
    ALL_OLD,
    TOUCH_INTERVAL,
    ConditionFailedError,
    DynamoTable,
    Item,
    number,
    number_of,
    write_token,
    written_by,
)
from stratus.stores.records import SessionCensus, SessionExistsError, SessionRecord, decode_session, encode_session

ENDED = "ended"
COUNTED = "counted"
"""The counts a session took when it was created, named on its item and its roster entry (a list of `SHARD` and
`PRINCIPAL`, empty when none): ending or sweeping it gives back those and no other, so a deployment that sets or
lifts a limit while sessions live never takes a count below what was added."""
SHARD, PRINCIPAL = "shard", "principal"
SWEEP_BATCH = 100  # BatchGetItem's limit
STEP_PAGES = 64
"""Roster pages (up to 1 MB each) one `sweep_step` reads: a sweeper run's work, whatever the session count."""
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


class DynamoSessionStore:
    """Legacy sessions, one item each, counted in sharded roster partitions."""

    def __init__(
        self,
        table: DynamoTable,
        *,
        ttl_seconds: float,
        max_sessions: int = 0,
        max_per_principal: int = 0,
        step_pages: int = STEP_PAGES,
        page_entries: int | None = None,
    ) -> None:
        self.table = table
        self.step_pages = step_pages
        """Roster pages one `sweep_step` reads."""
        self.page_entries = page_entries
        """Entries per roster page (None: DynamoDB's 1 MB pages); tests make a slice smaller than their sessions."""
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self.max_per_principal = max_per_principal
        self.shards = Shards(table, max_sessions)
        self.cursor = table.key("sweep", "cursor")

    def key(self, session_id: str) -> Item:
        return self.table.key("session", session_id)

    def live(self, session_id: str, item: Item | None, now: float) -> SessionRecord | None:
        """The record in `item`, or None when it is absent, ended or expired (TTL deletion lags)."""
        if item is None or ENDED in item or number_of(item, "expires") <= now:
            return None
        return decode_session(
            session_id,
            item["data"]["S"],
            created=number_of(item, "created"),
            active=number_of(item, "active"),
            expires=number_of(item, "expires"),
        )

    def touch(self, record: SessionRecord, now: float) -> Item | None:
        """The update that slides the expiry, when the last one is older than TOUCH_INTERVAL (else None)."""
        if now - record.last_active_at < min(TOUCH_INTERVAL, self.ttl / 10):
            return None
        record.last_active_at, record.expires_at = now, now + self.ttl
        return {
            "Update": {
                "TableName": self.table.table,
                "Key": self.key(record.session_id),
                "UpdateExpression": "SET active = :now, expires = :expires",
                "ConditionExpression": "expires > :now AND attribute_not_exists(#ended)",
                "ExpressionAttributeNames": {"#ended": ENDED},
                "ExpressionAttributeValues": {":now": number(now), ":expires": number(now + self.ttl)},
            }
        }

    async def create(self, record: SessionRecord) -> None:
        """Write the session in its first shard; when that shard (or the principal's quota) is full, move to the
        shard with the most room, and once none has any, sweep a few shards and try again."""
        token = write_token()  # every attempt may share it: a refused one wrote nothing
        shard: int | None = self.shards.first(record.session_id)
        refusal: TooManySessionsError | None = None
        for swept in (False, True):
            for _ in range(ATTEMPTS):
                if shard is None:
                    break
                refusal = await self._create(record, token, shard)
                if refusal is None:
                    return
                if isinstance(refusal, PrincipalSessionsFullError):
                    break
                shard = await self.shards.roomiest()
            if swept or not await self._sweep_for_room():
                break
            principal_full = isinstance(refusal, PrincipalSessionsFullError)
            shard = self.shards.first(record.session_id) if principal_full else await self.shards.roomiest()
        assert refusal is not None
        raise refusal

    async def _sweep_for_room(self) -> int:
        """Sweep `REFUSAL_SWEEPS` shards, starting at a random one; how many sessions that removed."""
        start = secrets.randbelow(self.shards.used)
        removed = 0
        for step in range(min(REFUSAL_SWEEPS, self.shards.used)):
            removed += await self._sweep_shard((start + step) % self.shards.used)
        return removed

    def counts(self, record: SessionRecord) -> list[str]:
        """The counts a new session takes: its shard's only under a limit, its principal's only under a quota."""
        counted = [SHARD] if self.max_sessions else []
        return [*counted, PRINCIPAL] if record.principal and self.max_per_principal else counted

    async def _create(self, record: SessionRecord, token: str, shard: int) -> TooManySessionsError | None:
        """Write the session, its roster entry, and the counts it takes (`counts`) together; the refusal when the
        principal's quota or the shard's places stopped it."""
        now = self.table.clock()
        counted = self.counts(record)
        writes = [self._put_session(record, now, token, shard, counted), self._put_entry(record, now, shard, counted)]
        if not counted:
            await self._create_uncounted(record, token, writes)
            return None
        if SHARD in counted:
            writes.append(self._count(shard, +1, now))
        if PRINCIPAL in counted:
            assert record.principal
            writes.append(self._principal_count(record.principal, +1))
        try:
            await self.table.write(writes)
        except ConditionFailedError as failure:
            if 0 in failure.failed:
                if written_by(failure.items.get(0), token):
                    return None  # this transaction, resent, found itself applied: all of it, atomically
                raise SessionExistsError(record.session_id) from None
            if PRINCIPAL in counted and len(writes) - 1 in failure.failed:
                return PrincipalSessionsFullError(self.max_per_principal)
            return TooManySessionsError(self.max_sessions)
        return None

    async def _create_uncounted(self, record: SessionRecord, token: str, writes: list[Item]) -> None:
        """With no count to take, the session and its roster entry are two plain puts sent at once (one round trip,
        no transaction). The entry is put only where none is: one already there names this id (this put resent, or
        the live session the session's put finds), and is left as it is."""
        put_session, put_entry = writes
        entry = put_entry["Put"]
        put_entry = self._op("Put", Item=entry["Item"], ConditionExpression="attribute_not_exists(PK)")
        session, entered = await asyncio.gather(
            self.table.write([put_session]), self.table.write([put_entry]), return_exceptions=True
        )
        if isinstance(entered, BaseException) and not isinstance(entered, ConditionFailedError):
            raise entered
        if isinstance(session, ConditionFailedError):
            if written_by(session.items.get(0), token):
                return  # this put, resent, found itself applied
            raise SessionExistsError(record.session_id) from None
        if isinstance(session, BaseException):
            raise session

    async def load(self, session_id: str) -> SessionRecord | None:
        now = self.table.clock()
        record = self.live(session_id, await self.table.get(self.key(session_id)), now)
        if record is not None:
            touch = self.touch(record, now)
            if touch is not None:
                try:
                    await self.table.write([touch])
                except ConditionFailedError:
                    return None  # it expired or ended between the read and the touch
        return record

    async def save(self, record: SessionRecord) -> None:
        now = self.table.clock()
        try:
            await self.table.call(
                "update_item",
                Key=self.key(record.session_id),
                UpdateExpression="SET #data = :data",
                ConditionExpression="expires > :now AND attribute_not_exists(#ended)",
                ExpressionAttributeNames={"#data": "data", "#ended": ENDED},
                ExpressionAttributeValues={":data": {"S": encode_session(record)}, ":now": number(now)},
            )
        except ConditionFailedError:
            return  # a save never revives an ended session

    async def delete(self, session_id: str) -> bool:
        item = await self.table.get(self.key(session_id))
        if item is None or ENDED in item:
            return False
        token = write_token()
        end = self._end_session(session_id, token)
        shard = int(number_of(item, "shard", -1))
        if shard < 0:
            return await self._end_alone(end, token)  # created before the roster was sharded: never counted
        counted = _counts_of(item)
        owner = _principal_of(item) if PRINCIPAL in counted else None
        if not counted:
            return await self._end_uncounted(end, token, shard, session_id)
        try:
            await self.table.write([end, *self._free_place(session_id, shard, owner, counted)])
        except ConditionFailedError as failure:
            if 0 not in failure.failed:
                return await self._end_alone(end, token)  # its entry is gone: a sweep freed its place
            if not written_by(failure.items.get(0), token, ENDED):
                return False  # unknown, or ended by another request
        await self._tidy(owner)
        return True

    async def _end_uncounted(self, end: Item, token: str, shard: int, session_id: str) -> bool:
        """End a session that took no count and delete its roster entry: two plain writes sent at once (a session
        another request ended loses its entry to both, which is the same)."""
        ended, _ = await asyncio.gather(
            self._end_alone(end, token), self.table.call("delete_item", Key=self.shards.entry(shard, session_id))
        )
        return ended

    async def _end_alone(self, end: Item, token: str) -> bool:
        try:
            await self.table.write([end])
        except ConditionFailedError as failure:
            return written_by(failure.items.get(0), token, ENDED)
        return True

    async def census(self) -> SessionCensus:
        """The shards' counts summed: one read of `SHARDS` items, whatever the session count (sessions expired
        since their shard was last swept still count: at most one sweeper cycle). With no limit nothing is counted,
        and the same read sums what the sweeper last saw live in each shard: figures up to one sweeper cycle old."""
        return await self.shards.census()

    async def sweep(self) -> int:
        removed = 0
        for shard in range(self.shards.count):
            removed += await self._sweep_shard(shard)
        return removed

    async def sweep_step(self) -> int:
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
            found = await self._sweep_pages(shard, resume, pages)
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

    async def _sweep_shard(self, shard: int) -> int:
        """Sweep one roster partition to its end and record what it kept on the shard's count item."""
        removed, seen, resume = 0, Seen(), None
        while True:
            found = await self._sweep_pages(shard, resume, self.step_pages)
            removed, seen, resume = removed + found.removed, seen.add(found.seen), found.resume
            if resume is None:
                break
        await self._record(shard, seen)
        return removed

    async def _sweep_pages(self, shard: int, resume: Item | None, pages: int) -> SweepSlice:
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
            items = await self.table.get_many([self.key(i) for i in ids])
            for entry, session_id, item in zip(batch, ids, items, strict=True):
                if item is not None and ENDED not in item and number_of(item, "expires") > now:
                    await self._move_forward(shard, session_id, number_of(item, "expires"))
                    live.append(number_of(entry, "created"))
                    continue
                counted = _counts_of(entry)
                owner = _principal_of(entry) if PRINCIPAL in counted else None
                removal = [self._delete_expired(session_id, now), *self._free_place(session_id, shard, owner, counted)]
                if not counted:  # no count to keep in step: the session, then its entry, each a plain delete
                    removal = removal[:1]
                try:
                    await self.table.write(removal)
                    removed += 1
                except ConditionFailedError:
                    continue  # touched meanwhile, or another sweeper freed it first
                if not counted:
                    await self.table.call("delete_item", Key=self.shards.entry(shard, session_id))
                await self._tidy(owner)
        return removed, live

    async def _record(self, shard: int, seen: Seen) -> None:
        """After a sweep went over a shard's whole partition: under a limit correct its count's oldest creation;
        with none, record what it saw live for the census."""
        if self.max_sessions:
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

    def _put_session(self, record: SessionRecord, now: float, token: str, shard: int, counted: list[str]) -> Item:
        item = {
            **self.key(record.session_id),
            "data": {"S": encode_session(record)},
            "created": number(now),
            "active": number(now),
            "expires": number(now + self.ttl),
            "w": {"S": token},
            "shard": {"N": str(shard)},
            COUNTED: _names(counted),
        }
        if record.principal:
            item["principal"] = {"S": record.principal}
        return self._op(
            "Put",
            Item=item,
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
            **ALL_OLD,
        )

    def _put_entry(self, record: SessionRecord, now: float, shard: int, counted: list[str]) -> Item:
        item = {
            **self.shards.entry(shard, record.session_id),
            "created": number(now),
            "until": number(now + self.ttl),
            COUNTED: _names(counted),
        }
        if record.principal:
            item["principal"] = {"S": record.principal}
        return self._op("Put", Item=item)

    def _count(self, shard: int, change: int, now: float | None = None) -> Item:
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
        return self._op("Update", **update)

    def _principal_count(self, principal: str, change: int) -> Item:
        update: dict[str, Any] = {
            "Key": self.table.key("principal", principal),
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        if change > 0 and self.max_per_principal:
            update["ConditionExpression"] = "attribute_not_exists(#count) OR #count < :quota"
            update["ExpressionAttributeValues"][":quota"] = {"N": str(self.max_per_principal)}
        return self._op("Update", **update)

    def _free_place(self, session_id: str, shard: int, principal: str | None, counted: list[str]) -> list[Item]:
        """Remove the session's roster entry (only once, however many race) and count it out of the counts it took:
        its shard's, its principal's."""
        writes = [
            self._op("Delete", Key=self.shards.entry(shard, session_id), ConditionExpression="attribute_exists(PK)")
        ]
        if SHARD in counted:
            writes.append(self._count(shard, -1))
        if principal:
            writes.append(self._principal_count(principal, -1))
        return writes

    async def _tidy(self, principal: str | None) -> None:
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

    def _end_session(self, session_id: str, token: str) -> Item:
        """End the session, leaving a tombstone that names this write (and holds no data) until the TTL collects it:
        a resend of this write then finds its own token, where a deleted item would tell it nothing."""
        return self._op(
            "Update",
            Key=self.key(session_id),
            UpdateExpression="SET #ended = :token, expires = :now REMOVE #data",
            ConditionExpression="attribute_exists(PK) AND attribute_not_exists(#ended)",
            ExpressionAttributeNames={"#ended": ENDED, "#data": "data"},
            ExpressionAttributeValues={":token": {"S": token}, ":now": number(self.table.clock())},
            **ALL_OLD,
        )

    def _delete_expired(self, session_id: str, now: float) -> Item:
        return self._op(
            "Delete",
            Key=self.key(session_id),
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
        )

    def _op(self, kind: str, **operation: Any) -> Item:
        return {kind: {"TableName": self.table.table, **operation}}


def _earliest(first: float | None, second: float | None) -> float | None:
    return second if first is None else first if second is None else min(first, second)


def _latest(first: float | None, second: float | None) -> float | None:
    return second if first is None else first if second is None else max(first, second)


def _names(counted: list[str]) -> Item:
    return {"L": [{"S": name} for name in counted]}


def _counts_of(item: Item) -> list[str]:
    """The counts a session item or roster entry says its session took (written before they said: the shard's,
    and the principal's when it has one)."""
    names = item.get(COUNTED)
    if names is None:
        return [SHARD, PRINCIPAL] if "principal" in item else [SHARD]
    return [name["S"] for name in names["L"]]


def _principal_of(entry: Item | None) -> str | None:
    """The principal a session item or roster entry names (None: anonymous, or no such item)."""
    principal = (entry or {}).get("principal")
    return principal["S"] if principal else None
