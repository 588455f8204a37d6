"""The one table's client: keys, item codecs, write tokens, and every call, bounded in time, run on the table's
own threads and mapped to domain errors in one place. The public interface the other DynamoDB stores use."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from stratus.errors import StoreBusyError, StoreUnavailableError
from stratus.resilience.backoff import full_jitter
from stratus.resilience.deadline import Clock
from stratus.tracing import store_span

Item = dict[str, Any]


GRACE_SECONDS = 60.0


TOUCH_SHARE = 0.1
"""A session's expiry slides at most once per this share of its idle timeout, and by as much more, so that it never
ends before the timeout has passed since its last request (each slide is a write: at the default 30 minutes, one
every 3 minutes of an idle client's polls, $0.008 a month, where once a minute was $0.027)."""
SESSION = "session"
"""The kind of a session's item (`DynamoTable.key`)."""
LOG_HEAD = "logseq"
"""The attribute of a session's item that numbers its own event log (`stratus.stores.dynamodb.streams`)."""
LOG_WRITE = "lw"
"""The attribute of a session's item naming the append that last numbered its log (a resend finds its own)."""


ATTEMPTS = 8


BACKOFF_SECONDS = 0.005


BATCH_WRITE_ITEMS = 25
"""The most puts one BatchWriteItem carries."""


THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "InternalServerError"}
)


ALL_OLD = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
"""Asks a conditional write that fails for the item as it was, in the same answer (no read capacity is used):
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#DDB-PutItem-request-ReturnValuesOnConditionCheckFailure
(the same for UpdateItem, DeleteItem and each action of TransactWriteItems, whose `CancellationReasons` carry it:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CancellationReason.html)."""


class ConditionFailedError(Exception):
    """A conditional write found the item changed (or present, or absent) since it was read.

    `failed` holds the positions, within a transaction, of the writes whose condition failed; `items` the items
    that failed, as they were, by position (for writes that asked for them with `ALL_OLD` and found one).
    """

    def __init__(self, failed: Sequence[int] = (0,), items: Mapping[int, Item] | None = None) -> None:
        super().__init__(f"condition failed at {list(failed)}")
        self.failed = tuple(failed)
        self.items = dict(items or {})


def write_token() -> str:
    """A token naming one write, stored with the items it writes (`w`), so that the same write arriving again can
    be told from another writer's."""
    return secrets.token_hex(8)


def written_by(item: Item | None, token: str, attribute: str = "w") -> bool:
    """Whether `item` carries `token` (the item failed its condition because this very write was applied before:
    botocore resent it after its answer was lost)."""
    value = (item or {}).get(attribute)
    return value is not None and value.get("S") == token


def number(value: float) -> dict[str, str]:
    """A DynamoDB number attribute."""
    return {"N": repr(float(value))}


def number_of(item: Item, name: str, default: float = 0.0) -> float:
    """A number attribute of `item`, or `default` when absent."""
    value = item.get(name)
    return float(value["N"]) if value else default


def _operation(call: Callable[..., Any]) -> Callable[[], str]:
    """DynamoDB's name for a client method's operation (`get_item`: `GetItem`), made when asked."""
    return lambda: "".join(part.title() for part in getattr(call, "__name__", "call").split("_"))


class DynamoTable:
    """The one table: keys, item codecs, and every call, with errors mapped to domain errors in one place."""

    def __init__(self, client: Any, table: str, prefix: str, *, timeout: float, clock: Clock = time.time) -> None:
        self.client = client
        self.table = table
        self.prefix = prefix
        self.timeout = timeout
        self.clock = clock
        self.requests = 0
        """How many requests this table has sent (the benchmark reports it per request kind)."""
        self._threads: ThreadPoolExecutor | None = None

    async def _in_thread(self, call: Callable[..., Any], **params: Any) -> Any:
        """Run a blocking client call on the table's threads (made on first use, one per pooled connection)."""
        if self._threads is None:
            size = self.client.meta.config.max_pool_connections
            self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="stratus-dynamodb")
        run = functools.partial(contextvars.copy_context().run, call, **params)
        with store_span("aws.dynamodb", _operation(call)):
            return await asyncio.get_running_loop().run_in_executor(self._threads, run)

    async def close(self) -> None:
        """Let the table's threads end (calls under way finish first)."""
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None

    def unavailable(self, message: str, error: BaseException) -> StoreUnavailableError:
        """The error a client is told (`message`), carrying for the log why `error` happened and what fixes it."""
        from stratus.stores.dynamodb.failures import diagnosis

        return StoreUnavailableError(message, cause=diagnosis(error, self.client, self.table))

    def _throttled(self) -> str:
        return (
            f"DynamoDB left items of table {self.table} unprocessed after {ATTEMPTS} attempts (throttled): give the "
            "table more capacity, or make it on-demand"
        )

    @property
    def _client_error(self) -> Any:
        from botocore.exceptions import ClientError  # imported with the client, on first use (stratus.stores.lazy)

        return ClientError

    @property
    def _transport_error(self) -> Any:
        from botocore.exceptions import BotoCoreError

        return BotoCoreError

    def key(self, kind: str, ident: str) -> Item:
        return {"PK": {"S": f"{self.prefix}#{kind}#{ident}"}, "SK": {"S": kind}}

    def action(self, kind: str, **operation: Any) -> Item:
        """One action of a transaction on this table (`Put`, `Update`, `Delete`), for `write`."""
        return {kind: {"TableName": self.table, **operation}}

    async def call(self, operation: str, **params: Any) -> Any:
        """Run one DynamoDB operation on the table's threads, bounded in time.

        Raises:
            ConditionFailedError: a condition did not hold (for a transaction: any of them).
            StoreUnavailableError: DynamoDB throttled, failed or did not answer.
        """
        self.requests += 1
        try:
            async with asyncio.timeout(self.timeout * 2 + 1):
                return await self._in_thread(getattr(self.client, operation), TableName=self.table, **params)
        except self._client_error as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                old = error.response.get("Item")
                raise ConditionFailedError(items={0: old} if old else None) from None

            raise self.unavailable("The state store failed the request; retry shortly", error) from error
        except (self._transport_error, TimeoutError, OSError) as error:
            raise self.unavailable("The state store is unavailable; retry shortly", error) from error

    async def write_once(self, operation: str, token: str, **params: Any) -> bool:
        """A conditional write (`put_item`, `update_item`) that stores `token` as the item's `w`: whether it applied,
        also when its condition failed because this very write was applied before (botocore resent it after its
        answer was lost, and the item it gets back carries the token).

        Raises:
            StoreUnavailableError: DynamoDB throttled, failed or did not answer.
        """
        try:
            await self.call(operation, **params, **ALL_OLD)
        except ConditionFailedError as failure:
            return written_by(failure.items.get(0), token)
        return True

    async def get(self, key: Item, *, consistent: bool = True) -> Item | None:
        """One item, strongly consistent unless `consistent` is false (half the read units)."""
        response = await self.call("get_item", Key=key, ConsistentRead=consistent)
        item: Item | None = response.get("Item")
        return item

    async def get_many(self, keys: Sequence[Item], *, consistent: bool = True) -> list[Item | None]:
        """Reads of several items in one request (more only if DynamoDB leaves some out), strongly consistent
        unless `consistent` is false (half the read units)."""
        found: dict[tuple[str, str], Item] = {}
        pending = list(keys)
        for _ in range(ATTEMPTS):
            if not pending:
                break
            request = {self.table: {"Keys": pending, "ConsistentRead": consistent}}
            self.requests += 1
            try:
                async with asyncio.timeout(self.timeout * 2 + 1):
                    response = await self._in_thread(self.client.batch_get_item, RequestItems=request)
            except (self._client_error, self._transport_error, TimeoutError, OSError) as error:
                raise self.unavailable("The state store is unavailable; retry shortly", error) from error
            for item in response.get("Responses", {}).get(self.table, []):
                found[(item["PK"]["S"], item["SK"]["S"])] = item
            pending = response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
        if pending:
            raise StoreUnavailableError("The state store throttled the request; retry shortly", cause=self._throttled())
        return [found.get((key["PK"]["S"], key["SK"]["S"])) for key in keys]

    async def put_many(self, items: Sequence[Item]) -> None:
        """Plain puts of many items, BATCH_WRITE_ITEMS a request and the requests sent together; the items DynamoDB
        leaves unprocessed (throttled) are sent again with backoff, up to ATTEMPTS times
        (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html)."""

        async def batch(puts: list[Item]) -> None:
            for attempt in range(ATTEMPTS):
                self.requests += 1
                request = {self.table: [{"PutRequest": {"Item": item}} for item in puts]}
                try:
                    async with asyncio.timeout(self.timeout * 2 + 1):
                        response = await self._in_thread(self.client.batch_write_item, RequestItems=request)
                except (self._client_error, self._transport_error, TimeoutError, OSError) as error:
                    raise self.unavailable("The state store is unavailable; retry shortly", error) from error
                left = response.get("UnprocessedItems", {}).get(self.table, [])
                puts = [entry["PutRequest"]["Item"] for entry in left]
                if not puts:
                    return
                await back_off(attempt)
            raise StoreUnavailableError("The state store throttled the request; retry shortly", cause=self._throttled())

        chunks = [list(items[start : start + BATCH_WRITE_ITEMS]) for start in range(0, len(items), BATCH_WRITE_ITEMS)]
        await asyncio.gather(*(batch(chunk) for chunk in chunks))

    def versioned_put(self, item: Item, version: float | None) -> Item:
        """A Put that succeeds only if the item is still at `version` (absent when None)."""
        condition = "attribute_not_exists(PK)" if version is None else "v = :v"
        put: Item = {
            "TableName": self.table,
            "Item": {**item, "v": number((version or 0) + 1)},
            "ConditionExpression": condition,
        }
        if version is not None:
            put["ExpressionAttributeValues"] = {":v": number(version)}
        return {"Put": put}

    async def write(self, operations: Sequence[Item]) -> None:
        """Apply conditional writes: alone, or all-or-nothing in one transaction."""
        if len(operations) == 1:
            ((kind, operation),) = operations[0].items()
            params = {key: value for key, value in operation.items() if key != "TableName"}
            await self.call(_SINGLE[kind], **params)
            return
        await self._call_transaction(operations)

    async def _call_transaction(self, operations: Sequence[Item]) -> None:
        """One TransactWriteItems; a transaction cancelled because another one touched the same item at the same
        moment (`TransactionConflict`, nothing applied) is tried again, up to ATTEMPTS times with backoff.

        Each attempt carries its own `ClientRequestToken`, which botocore keeps when it resends the request: DynamoDB
        applies a token's transaction once, and answers a resend of an applied one with success for ten minutes
        (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html#DDB-TransactWriteItems-request-ClientRequestToken,
        https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-apis-txwriteitems).
        A resend that finds the first still running (`TransactionInProgressException`) is asked again with the same
        token; after a cancellation the next attempt is a new request, with a new token."""
        token = write_token()
        for attempt in range(ATTEMPTS):
            self.requests += 1
            try:
                async with asyncio.timeout(self.timeout * 2 + 1):
                    # TransactWriteItems names the table in each operation, not at the top level.
                    await self._in_thread(
                        self.client.transact_write_items, TransactItems=list(operations), ClientRequestToken=token
                    )
                return
            except self._client_error as error:
                if error.response.get("Error", {}).get("Code") == "TransactionInProgressException":
                    await back_off(attempt)
                    continue
                reasons = error.response.get("CancellationReasons", [])
                codes = [reason.get("Code") for reason in reasons]
                failed = [index for index, code in enumerate(codes) if code == "ConditionalCheckFailed"]
                if failed:
                    items = {index: reason["Item"] for index, reason in enumerate(reasons) if reason.get("Item")}
                    raise ConditionFailedError(failed, items) from None
                if "TransactionConflict" not in codes:
                    raise self.unavailable("The state store failed the request; retry shortly", error) from error
            except (self._transport_error, TimeoutError, OSError) as error:
                raise self.unavailable("The state store is unavailable; retry shortly", error) from error
            token = write_token()
            await back_off(attempt)
        raise StoreBusyError("The write is too contended to complete; retry shortly")


class TableItems:
    """A store of one kind of item in the table, each under its id (`DynamoTable.key`)."""

    kind: ClassVar[str]

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def key(self, ident: str) -> Item:
        return self.table.key(self.kind, ident)


_SINGLE = {"Put": "put_item", "Update": "update_item", "Delete": "delete_item"}
"""The plain request that applies one action of a transaction alone."""


async def back_off(attempt: int) -> None:
    """A short full-jitter pause before re-reading an item another writer changed (bounded: ATTEMPTS tries)."""
    await asyncio.sleep(full_jitter(attempt, base=BACKOFF_SECONDS, cap=0.1))


def version_of(item: Item | None) -> float | None:
    return None if item is None else number_of(item, "v")
