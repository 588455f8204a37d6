"""Stream event logs (numbered items, followed by polling with backoff; a server-wide log mirrored) and pending
server-to-client requests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

from stratus.errors import StoreUnavailableError
from stratus.stores.dynamodb.follow import SharedPolls
from stratus.stores.dynamodb.replicated_log import MIRRORS, Mirrors, is_server_wide
from stratus.stores.dynamodb.table import (
    ALL_OLD,
    LOG_HEAD,
    LOG_WRITE,
    SESSION,
    ConditionFailedError,
    DynamoTable,
    Item,
    TableItems,
    number,
    number_of,
    write_token,
    written_by,
)
from stratus.stores.records import StreamEvent, session_of_log

POLL_FIRST_SECONDS = 0.01


POLL_MAX_SECONDS = 0.25


class DynamoEventLogStore:
    """Events as items under their stream's key, numbered by an atomic counter item; a server-wide log's events
    under each of its mirrors' keys instead (`stratus.stores.dynamodb.replicated_log`)."""

    def __init__(
        self, table: DynamoTable, *, max_events: int = 1000, ttl_seconds: float = 3600.0, mirrors: int = MIRRORS
    ) -> None:
        self.table = table
        self.max_events = max_events
        self.ttl = ttl_seconds
        self.mirrors = Mirrors(table, mirrors)
        self.polls = SharedPolls(self.read_after, first=POLL_FIRST_SECONDS, most=POLL_MAX_SECONDS)

    async def append(self, stream: str, data: str) -> int:
        """Number the event (the counter's update names this append, so a resend of it is not counted again), then
        write it under its number (a plain put: a resend writes the same item).

        A session's own log is numbered on the session's item (`LOG_HEAD`, which the session is made with), which a
        poll reads anyway: finding the number at its client's place, the poll reads nothing of the log. A session
        made before that (alive across the upgrade), or one already collected, keeps its own counter item."""
        key = self.table.key("stream", stream)
        expires = number(self.table.clock() + self.ttl)
        token = write_token()
        session_id = session_of_log(stream)
        seq = None
        if session_id is not None:
            seq = await self._count(self.table.key(SESSION, session_id), LOG_HEAD, LOG_WRITE, token)
        if seq is None:
            seq = await self._count({**key, "SK": {"S": "seq"}}, "seq", "w", token, expires=expires)
        assert seq is not None  # an own counter item is made by its first append
        fields = {"SK": {"S": f"event#{seq:012d}"}, "data": {"S": data}, "expires": expires}
        if is_server_wide(stream):
            await self.mirrors.put(stream, fields)
        else:
            await self.table.call("put_item", Item={**key, **fields})
        return seq

    async def _count(
        self, counter: Item, seq_name: str, token_name: str, token: str, *, expires: Item | None = None
    ) -> int | None:
        """Add one to the number `seq_name` of the item `counter`, naming this append `token` in `token_name`: the
        number taken, also when this is a resend of an update already applied. With `expires` the item is made if
        missing, with that expiry; without, only an item that already holds the number counts (None otherwise)."""
        values: Item = {":one": {"N": "1"}, ":token": {"S": token}}
        update, condition = "ADD #seq :one SET #w = :token", "attribute_not_exists(#w) OR #w <> :token"
        if expires is None:
            condition = f"attribute_exists(#seq) AND ({condition})"
        else:
            update += ", expires = :expires"
            values[":expires"] = expires
        try:
            counted = await self.table.call(
                "update_item",
                Key=counter,
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#seq": seq_name, "#w": token_name},
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
                **ALL_OLD,
            )
            return int(number_of(counted["Attributes"], seq_name))
        except ConditionFailedError as failure:
            found = failure.items.get(0) or {}
            if written_by(found, token, token_name):
                return int(number_of(found, seq_name))  # this append, resent after it was counted
            if expires is None and seq_name not in found:
                return None
            raise StoreUnavailableError("The state store failed the request; retry shortly") from None

    async def read_after(self, stream: str, seq: int) -> list[StreamEvent]:
        """The events after `seq`. A server-wide log's mirror is read eventually consistently, at half the price:
        every poll reads it, and an event a replica has yet to show is reached by the next poll (or, when a later
        one shows first, waited for as a gap is: `stratus.protocol.notifications.GAP_GRACE_SECONDS`)."""
        server_wide = is_server_wide(stream)
        log = self.mirrors.read_key(stream) if server_wide else self.table.key("stream", stream)
        key = log["PK"]
        response = await self.table.call(
            "query",
            KeyConditionExpression="PK = :pk AND SK BETWEEN :after AND :last",
            ExpressionAttributeValues={":pk": key, ":after": {"S": f"event#{seq + 1:012d}"}, ":last": {"S": "event#~"}},
            ConsistentRead=not server_wide,
        )
        now = self.table.clock()
        events = [
            StreamEvent(int(item["SK"]["S"].removeprefix("event#")), item["data"]["S"])
            for item in response.get("Items", [])
            if number_of(item, "expires") > now
        ]
        return events[-self.max_events :]

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        """DynamoDB cannot push: poll, backing off from POLL_FIRST_SECONDS to POLL_MAX_SECONDS, one poll loop per
        stream in this process however many wait on it (stratus.stores.dynamodb.follow)."""
        return await self.polls.wait_after(stream, seq, within)

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        return await self.polls.wait_any(after, within)


class DynamoPendingRequestStore(TableItems):
    """An item per awaited reply; the reply is written by a conditional update, the waiter polls for it."""

    kind = "pending"

    async def open(self, request_key: str, ttl_seconds: float) -> None:
        expires = number(self.table.clock() + ttl_seconds)
        await self.table.call("put_item", Item={**self.key(request_key), "state": {"S": "open"}, "expires": expires})

    async def deliver(self, request_key: str, reply: str) -> bool:
        token = write_token()
        return await self.table.write_once(
            "update_item",
            token,
            Key=self.key(request_key),
            UpdateExpression="SET #state = :answered, reply = :reply, w = :token",
            ConditionExpression="#state = :open AND expires > :now",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":answered": {"S": "answered"},
                ":open": {"S": "open"},
                ":reply": {"S": reply},
                ":token": {"S": token},
                ":now": number(self.table.clock()),
            },
        )

    async def wait(self, request_key: str, within: float) -> str | None:
        """Poll for the reply; once read, the item is kept as `taken` without the reply (not deleted) until its TTL,
        so that a resend of the delivering write still finds its token."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        interval = POLL_FIRST_SECONDS
        while True:
            item = await self.table.get(self.key(request_key))
            if item is not None and "reply" in item:
                await self._take(request_key)
                return str(item["reply"]["S"])
            left = deadline - loop.time()
            if left <= 0 or item is None or item["state"]["S"] == "taken":
                return None
            await asyncio.sleep(min(interval, left))
            interval = min(POLL_MAX_SECONDS, interval * 2)

    async def _take(self, request_key: str) -> None:
        with contextlib.suppress(ConditionFailedError):  # already gone (the TTL): nothing to take
            await self.table.call(
                "update_item",
                Key=self.key(request_key),
                UpdateExpression="SET #state = :taken REMOVE reply",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={":taken": {"S": "taken"}},
            )
