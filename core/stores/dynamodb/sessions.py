"""DynamoDB sessions, and the roster that counts them across containers.

A session is one item; beside it, in one partition, the roster holds an entry per session and a `#count` item.
Creating and ending a session write all three in one transaction, the count conditioned on the limit, so racing
containers never admit more than `max_sessions`. A session with a principal also counts in that principal's own
item (`{prefix}#principal#<principal>`, apart from the roster, whose count may later be sharded alone) in the same
transaction, conditioned on the quota; its roster entry names the principal, so ending or sweeping the session
frees that place too, and a count left at zero is deleted. A request sliding a session's expiry touches only the
session: `sweep` re-reads the sessions whose roster entry says they are due, moving the live ones forward and removing
the rest (also the sessions DynamoDB's TTL already deleted), each removal a transaction that frees its place.

Creating and ending are safe to send twice (botocore resends a request whose answer was lost): the session item
carries the creating write's token `w`, and an ended session stays behind as a tombstone naming the ending write
(`ended`, no data, expired at once for the TTL to collect), so a resend that fails its condition finds its own
token and reads as done, while another writer's item still reads as taken or gone.
"""

from __future__ import annotations

import contextlib
from typing import Any

from stratus.errors import PrincipalSessionsFullError, TooManySessionsError
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

COUNT = "#count"
ENDED = "ended"
SWEEP_BATCH = 100  # BatchGetItem's limit
SWEEP_PAGES = 200


class DynamoSessionStore:
    """Legacy sessions, one item each, counted in the roster."""

    def __init__(
        self, table: DynamoTable, *, ttl_seconds: float, max_sessions: int = 0, max_per_principal: int = 0
    ) -> None:
        self.table = table
        self.ttl = ttl_seconds
        self.max_sessions = max_sessions
        self.max_per_principal = max_per_principal
        self.roster = {"S": f"{table.prefix}#roster"}

    def key(self, session_id: str) -> Item:
        return self.table.key("session", session_id)

    def entry(self, session_id: str) -> Item:
        return {"PK": self.roster, "SK": {"S": session_id}}

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
        token = write_token()  # both attempts may share it: a refused one wrote nothing
        refusal = await self._create(record, token)
        if refusal is not None and await self.sweep() > 0:
            refusal = await self._create(record, token)
        if refusal is not None:
            raise refusal

    async def _create(self, record: SessionRecord, token: str) -> TooManySessionsError | None:
        """Write the session, its roster entry, the count and its principal's count together; the refusal when the
        principal's quota or the global limit stopped it."""
        now = self.table.clock()
        writes = [self._put_session(record, now, token), self._put_entry(record, now), self._count(+1)]
        if record.principal:
            writes.append(self._principal_count(record.principal, +1))
        try:
            await self.table.write(writes)
        except ConditionFailedError as failure:
            if 0 in failure.failed:
                if written_by(failure.items.get(0), token):
                    return None  # this transaction, resent, found itself applied: all of it, atomically
                raise SessionExistsError(record.session_id) from None
            if 3 in failure.failed:
                return PrincipalSessionsFullError(self.max_per_principal)
            return TooManySessionsError(self.max_sessions)
        return None

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
        owner = _principal_of(await self.table.get(self.entry(session_id)))
        token = write_token()
        end = self._end_session(session_id, token)
        try:
            await self.table.write([end, *self._free_place(session_id, owner)])
        except ConditionFailedError as failure:
            if 0 not in failure.failed:
                # A session without a roster entry (created before the roster existed) ends alone.
                return await self._end_alone(end, token)
            if not written_by(failure.items.get(0), token, ENDED):
                return False  # unknown, or ended by another request
        await self._tidy(owner)
        return True

    async def _end_alone(self, end: Item, token: str) -> bool:
        try:
            await self.table.write([end])
        except ConditionFailedError as failure:
            return written_by(failure.items.get(0), token, ENDED)
        return True

    async def census(self) -> SessionCensus:
        await self.sweep()
        created = [number_of(item, "created") for item in await self._entries(due_by=None)]
        return SessionCensus(len(created), min(created, default=None), max(created, default=None))

    async def sweep(self) -> int:
        now = self.table.clock()
        owners = {item["SK"]["S"]: _principal_of(item) for item in await self._entries(due_by=now)}
        due = list(owners)
        removed = 0
        for start in range(0, len(due), SWEEP_BATCH):
            ids = due[start : start + SWEEP_BATCH]
            for session_id, item in zip(ids, await self.table.get_many([self.key(i) for i in ids]), strict=True):
                if item is not None and number_of(item, "expires") > now:
                    await self._move_forward(session_id, number_of(item, "expires"))
                    continue
                owner = owners[session_id]
                removal = [self._delete_expired(session_id, now), *self._free_place(session_id, owner)]
                try:
                    await self.table.write(removal)
                    removed += 1
                except ConditionFailedError:
                    continue  # touched meanwhile, or another sweeper freed it first
                await self._tidy(owner)
        return removed

    async def _entries(self, *, due_by: float | None) -> list[Item]:
        """The roster's session entries (those due by `due_by` when given), by strongly consistent queries."""
        params: dict[str, Any] = {
            "KeyConditionExpression": "PK = :roster",
            "ExpressionAttributeValues": {":roster": self.roster},
            "ConsistentRead": True,
        }
        if due_by is not None:
            params["FilterExpression"] = "#until <= :now"
            params["ExpressionAttributeNames"] = {"#until": "until"}
            params["ExpressionAttributeValues"][":now"] = number(due_by)
        entries: list[Item] = []
        for _ in range(SWEEP_PAGES):
            page = await self.table.call("query", **params)
            entries += [item for item in page.get("Items", []) if item["SK"]["S"] != COUNT]
            if "LastEvaluatedKey" not in page:
                break
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return entries

    async def _move_forward(self, session_id: str, until: float) -> None:
        with contextlib.suppress(ConditionFailedError):  # ended meanwhile
            await self.table.call(
                "update_item",
                Key=self.entry(session_id),
                UpdateExpression="SET #until = :until",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeNames={"#until": "until"},
                ExpressionAttributeValues={":until": number(until)},
            )

    def _put_session(self, record: SessionRecord, now: float, token: str) -> Item:
        item = {
            **self.key(record.session_id),
            "data": {"S": encode_session(record)},
            "created": number(now),
            "active": number(now),
            "expires": number(now + self.ttl),
            "w": {"S": token},
        }
        return self._op(
            "Put",
            Item=item,
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
            **ALL_OLD,
        )

    def _put_entry(self, record: SessionRecord, now: float) -> Item:
        item = {**self.entry(record.session_id), "created": number(now), "until": number(now + self.ttl)}
        if record.principal:
            item["principal"] = {"S": record.principal}
        return self._op("Put", Item=item)

    def _count(self, change: int) -> Item:
        update: dict[str, Any] = {
            "Key": {"PK": self.roster, "SK": {"S": COUNT}},
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        if change > 0 and self.max_sessions:
            update["ConditionExpression"] = "attribute_not_exists(#count) OR #count < :limit"
            update["ExpressionAttributeValues"][":limit"] = {"N": str(self.max_sessions)}
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

    def _free_place(self, session_id: str, principal: str | None) -> list[Item]:
        """Remove the session's roster entry (only once, however many race) and count it out, of the roster and of
        its principal's sessions."""
        writes = [
            self._op("Delete", Key=self.entry(session_id), ConditionExpression="attribute_exists(PK)"),
            self._count(-1),
        ]
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


def _principal_of(entry: Item | None) -> str | None:
    """The principal a roster entry names (None: anonymous, or no such entry)."""
    principal = (entry or {}).get("principal")
    return principal["S"] if principal else None
