"""DynamoDB sessions, counted across containers in a sharded roster.

A session is one item. It belongs to one of `SHARDS` shards (`stratus.stores.dynamodb.shards`): its roster entry
sits in that shard's roster partition and it counts in that shard's count item. Creating and ending a session
write the three in one transaction, the count conditioned on the shard's places, so racing containers never admit
more than `max_sessions`. A session with a principal also counts in that principal's own item in the same
transaction, conditioned on the quota (the counts: `stratus.stores.dynamodb.session_counts`); the session item names
its shard and principal, so ending it frees both places at once, and a count left at zero is deleted. A request
sliding a session's expiry touches only the session; the sweep of the roster removes the expired ones
(`stratus.stores.dynamodb.roster_sweep`). The session's own event log is numbered on the session's item (`LOG_HEAD`),
so a poll's one read of the item tells whether anything was addressed to the session since its client's place.

Creating and ending are safe to send twice (botocore resends a request whose answer was lost): the session item
carries the creating write's token `w`, and an ended session stays behind as a tombstone naming the ending write
(`ended`, no data, expired at once for the TTL to collect), so a resend that fails its condition finds its own
token and reads as done, while another writer's item still reads as taken or gone.
"""

from __future__ import annotations

import asyncio

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
from stratus.stores.dynamodb.roster_sweep import STEP_PAGES, RosterSweep
from stratus.stores.dynamodb.session_counts import (
    COUNTED,
    ENDED,
    PRINCIPAL,
    SHARD,
    SessionCounts,
    counts_of,
    names,
    principal_of,
)
from stratus.stores.dynamodb.shards import ATTEMPTS, Shards
from stratus.stores.dynamodb.table import (
    ALL_OLD,
    LOG_HEAD,
    SESSION,
    TOUCH_SHARE,
    ConditionFailedError,
    DynamoTable,
    Item,
    TableItems,
    number,
    number_of,
    write_token,
    written_by,
)
from stratus.stores.records import SessionCensus, SessionExistsError, SessionRecord, decode_session, encode_session


class DynamoSessionStore(TableItems):
    """Legacy sessions, one item each, counted in sharded roster partitions."""

    kind = SESSION

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
        super().__init__(table)
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self.max_per_principal = max_per_principal
        self.shards = Shards(table, max_sessions)
        self.counts = SessionCounts(table, self.shards, max_sessions=max_sessions, max_per_principal=max_per_principal)
        self.roster = RosterSweep(table, self.counts, step_pages=step_pages, page_entries=page_entries)

    def live(self, session_id: str, item: Item | None, now: float) -> SessionRecord | None:
        """The record in `item`, or None when it is absent, ended or expired (TTL deletion lags)."""
        if item is None or ENDED in item or number_of(item, "expires") <= now:
            return None
        record = decode_session(
            session_id,
            item["data"]["S"],
            created=number_of(item, "created"),
            active=number_of(item, "active"),
            expires=number_of(item, "expires"),
        )
        if LOG_HEAD in item:  # (not in a session made before its log was numbered on it)
            record.log_head = int(number_of(item, LOG_HEAD))
        return record

    def touch(self, record: SessionRecord, now: float) -> Item | None:
        """The update that slides the expiry, once less than the timeout is left (else None): to the timeout and
        `TOUCH_SHARE` of it past now, so the requests of that share write nothing and the session still lives at
        least the timeout past each."""
        if record.expires_at - now >= self.ttl:
            return None
        record.last_active_at, record.expires_at = now, now + self.ttl * (1 + TOUCH_SHARE)
        return {
            "Update": {
                "TableName": self.table.table,
                "Key": self.key(record.session_id),
                "UpdateExpression": "SET active = :now, expires = :expires",
                "ConditionExpression": "expires > :now AND attribute_not_exists(#ended)",
                "ExpressionAttributeNames": {"#ended": ENDED},
                "ExpressionAttributeValues": {":now": number(now), ":expires": number(record.expires_at)},
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
            if swept or not await self.roster.for_room():
                break
            principal_full = isinstance(refusal, PrincipalSessionsFullError)
            shard = self.shards.first(record.session_id) if principal_full else await self.shards.roomiest()
        assert refusal is not None
        raise refusal

    async def _create(self, record: SessionRecord, token: str, shard: int) -> TooManySessionsError | None:
        """Write the session, its roster entry, and the counts it takes (`counts`) together; the refusal when the
        principal's quota or the shard's places stopped it."""
        now = self.table.clock()
        counted = self.counts.taken(record)
        writes = [self._put_session(record, now, token, shard, counted), self._put_entry(record, now, shard, counted)]
        if not counted:
            await self._create_uncounted(record, token, writes)
            return None
        if SHARD in counted:
            writes.append(self.counts.count(shard, +1, now))
        if PRINCIPAL in counted:
            assert record.principal
            writes.append(self.counts.principal_count(record.principal, +1))
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
        put_entry = self.table.action("Put", Item=entry["Item"], ConditionExpression="attribute_not_exists(PK)")
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

    async def load(self, session_id: str, *, consistent: bool = True) -> SessionRecord | None:
        now = self.table.clock()
        record = self.live(session_id, await self.table.get(self.key(session_id), consistent=consistent), now)
        if record is None and not consistent:  # perhaps made a moment ago, and not yet on the replica read
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
        counted = counts_of(item)
        owner = principal_of(item) if PRINCIPAL in counted else None
        if not counted:
            return await self._end_uncounted(end, token, shard, session_id)
        try:
            await self.table.write([end, *self.counts.free_place(session_id, shard, owner, counted)])
        except ConditionFailedError as failure:
            if 0 not in failure.failed:
                return await self._end_alone(end, token)  # its entry is gone: a sweep freed its place
            if not written_by(failure.items.get(0), token, ENDED):
                return False  # unknown, or ended by another request
        await self.counts.tidy(owner)
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
        return await self.roster.everything()

    async def sweep_step(self) -> int:
        """Sweep the next slice of roster, resuming where the last step stopped (`RosterSweep.step`)."""
        return await self.roster.step()

    def _put_session(self, record: SessionRecord, now: float, token: str, shard: int, counted: list[str]) -> Item:
        item = {
            **self.key(record.session_id),
            "data": {"S": encode_session(record)},
            "created": number(now),
            "active": number(now),
            "expires": number(now + self.ttl),
            "w": {"S": token},
            LOG_HEAD: {"N": "0"},  # its own log is numbered here (`stratus.stores.dynamodb.streams`)
            "shard": {"N": str(shard)},
            COUNTED: names(counted),
        }
        if record.principal:
            item["principal"] = {"S": record.principal}
        return self.table.action(
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
            COUNTED: names(counted),
        }
        if record.principal:
            item["principal"] = {"S": record.principal}
        return self.table.action("Put", Item=item)

    def _end_session(self, session_id: str, token: str) -> Item:
        """End the session, leaving a tombstone that names this write (and holds no data) until the TTL collects it:
        a resend of this write then finds its own token, where a deleted item would tell it nothing."""
        return self.table.action(
            "Update",
            Key=self.key(session_id),
            UpdateExpression="SET #ended = :token, expires = :now REMOVE #data",
            ConditionExpression="attribute_exists(PK) AND attribute_not_exists(#ended)",
            ExpressionAttributeNames={"#ended": ENDED, "#data": "data"},
            ExpressionAttributeValues={":token": {"S": token}, ":now": number(self.table.clock())},
            **ALL_OLD,
        )
