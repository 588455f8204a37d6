"""DynamoDB stores (boto3, imported only when `STRATUS_STORE=dynamodb://TABLE`): one table for all state.

Key design (string keys; `expires` is both a field every read compares and the table's TTL attribute, since TTL
deletion is lazy):

    PK                                   SK        attributes
    {prefix}#session#<session id>        session   data (JSON), created, active, expires, v
    {prefix}#roster                      <id>      created, until (the session's expiry when last looked at), principal
    {prefix}#roster                      #count    count (live sessions, for the session limit)
    {prefix}#principal#<principal>       principal count (that principal's live sessions, for its quota)
    {prefix}#window#<bucket key>#<n>     window    count, expires (calls counted in fixed window n)
    {prefix}#breaker#<breaker key>       breaker   state, opened_at, trial_at, failures, expires, v

Sessions and breakers change by conditional writes on the item's version `v` (optimistic concurrency): the
state machines of `core.resilience` run here, and a write that lost a race is retried from a fresh read. Rate
limits are atomic counters per fixed window, which never need a retry however many containers race. A
tools/call's checks take at most two requests: one strongly consistent `BatchGetItem`, one write (a transaction
when several) for what changed. Sessions slide their expiry at most once a minute (`TOUCH_INTERVAL`), so most
session reads write nothing. boto3 calls run on the table's own worker threads, as many as the client has pooled
connections (not the event loop's default executor, which the application's blocking calls share and which a
slow neighbour can fill), with botocore's timeouts and retry mode set explicitly; `ConditionalCheckFailed` and
every transport error are mapped to domain errors where the call is made (`DynamoTable`).

botocore sends a request again when its answer is lost (a read timeout, a dropped connection), so a conditional
write may arrive a second time after it was applied, and then fail its own condition. Every such write is
idempotent: a transaction carries a `ClientRequestToken` (DynamoDB applies the same token once, for ten minutes),
and the items a conditional write creates or moves carry the write's token `w`, so a condition that fails on the
writer's own token reads as done. The item is seen in the same round trip (`ReturnValuesOnConditionCheckFailure`).
The item tokens also hold where the request token is not honoured (moto's server, which ignores it).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from core.errors import StoreBusyError, StoreUnavailableError
from core.resilience import breaker as breaker_machine
from core.resilience import limiter
from core.resilience.backoff import full_jitter
from core.resilience.breaker import Admission, BreakerPolicy, BreakerState, CircuitState
from core.resilience.limiter import Decision, RateLimit
from core.stores.base import (
    NO_SESSION,
    CallAdmission,
    CallChecks,
    owned,
)
from core.stores.factory import Stores

if TYPE_CHECKING:
    from core.stores.dynamodb_sessions import DynamoSessionStore

Clock = Callable[[], float]
Item = dict[str, Any]
GRACE_SECONDS = 60.0
TOUCH_INTERVAL = 60.0
ATTEMPTS = 8
BACKOFF_SECONDS = 0.005
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


def table_definition(table: str) -> dict[str, Any]:
    """The table: `PK` + `SK` strings, on-demand capacity (template.yaml declares the same)."""
    return {
        "TableName": table,
        "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


def create_table(client: Any, table: str) -> None:
    """Create the table with its key schema and the `expires` TTL attribute, and wait until it is active."""
    client.create_table(**table_definition(table))
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"})


def dynamodb_client(*, timeout: float) -> Any:
    """A boto3 DynamoDB client (region, credentials and `AWS_ENDPOINT_URL_DYNAMODB` from the environment)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "max_attempts": 2},
        tcp_keepalive=True,
    )
    return boto3.client("dynamodb", config=config)


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
        return await asyncio.get_running_loop().run_in_executor(self._threads, run)

    async def close(self) -> None:
        """Let the table's threads end (calls under way finish first)."""
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None

    @property
    def _client_error(self) -> Any:
        from botocore.exceptions import ClientError  # imported with the client, on first use (core.stores.lazy)

        return ClientError

    @property
    def _transport_error(self) -> Any:
        from botocore.exceptions import BotoCoreError

        return BotoCoreError

    def key(self, kind: str, ident: str) -> Item:
        return {"PK": {"S": f"{self.prefix}#{kind}#{ident}"}, "SK": {"S": kind}}

    async def _call(self, operation: str, **params: Any) -> Any:
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

            raise StoreUnavailableError("The state store failed the request; retry shortly") from error
        except (self._transport_error, TimeoutError, OSError) as error:
            raise StoreUnavailableError("The state store is unavailable; retry shortly") from error

    async def get(self, key: Item) -> Item | None:
        response = await self._call("get_item", Key=key, ConsistentRead=True)
        item: Item | None = response.get("Item")
        return item

    async def get_many(self, keys: Sequence[Item]) -> list[Item | None]:
        """Strongly consistent reads of several items in one request (more only if DynamoDB leaves some out)."""
        found: dict[tuple[str, str], Item] = {}
        pending = list(keys)
        for _ in range(ATTEMPTS):
            if not pending:
                break
            request = {self.table: {"Keys": pending, "ConsistentRead": True}}
            self.requests += 1
            try:
                async with asyncio.timeout(self.timeout * 2 + 1):
                    response = await self._in_thread(self.client.batch_get_item, RequestItems=request)
            except (self._client_error, self._transport_error, TimeoutError, OSError) as error:
                raise StoreUnavailableError("The state store is unavailable; retry shortly") from error
            for item in response.get("Responses", {}).get(self.table, []):
                found[(item["PK"]["S"], item["SK"]["S"])] = item
            pending = response.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
        if pending:
            raise StoreUnavailableError("The state store throttled the request; retry shortly")
        return [found.get((key["PK"]["S"], key["SK"]["S"])) for key in keys]

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
            await self._call("put_item" if kind == "Put" else "update_item", **params)
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
                    await _back_off(attempt)
                    continue
                reasons = error.response.get("CancellationReasons", [])
                codes = [reason.get("Code") for reason in reasons]
                failed = [index for index, code in enumerate(codes) if code == "ConditionalCheckFailed"]
                if failed:
                    items = {index: reason["Item"] for index, reason in enumerate(reasons) if reason.get("Item")}
                    raise ConditionFailedError(failed, items) from None
                if "TransactionConflict" not in codes:
                    raise StoreUnavailableError("The state store failed the request; retry shortly") from error
            except (self._transport_error, TimeoutError, OSError) as error:
                raise StoreUnavailableError("The state store is unavailable; retry shortly") from error
            token = write_token()
            await _back_off(attempt)
        raise StoreBusyError("The write is too contended to complete; retry shortly")


async def _back_off(attempt: int) -> None:
    """A short full-jitter pause before re-reading an item another writer changed (bounded: ATTEMPTS tries)."""
    await asyncio.sleep(full_jitter(attempt, base=BACKOFF_SECONDS, cap=0.1))


def _version(item: Item | None) -> float | None:
    return None if item is None else number_of(item, "v")


class DynamoRateLimitStore:
    """Rate limits as atomic counters per fixed window (`core.resilience.limiter.window`): one conditional
    `ADD` each, so racing containers never admit more than the limit and never have to retry."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def count(self, bucket_key: str, limit: RateLimit, cost: float, now: float) -> tuple[Item, float]:
        """The update counting one call in the current window, and when that window ends."""
        index, ends = limiter.window(limit, now)
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.table.key("window", f"{bucket_key}#{index}"),
                "UpdateExpression": "ADD #count :cost SET expires = :expires",
                "ConditionExpression": "attribute_not_exists(#count) OR #count <= :room",
                "ExpressionAttributeNames": {"#count": "count"},
                "ExpressionAttributeValues": {
                    ":cost": number(cost),
                    ":room": number(limit.burst - cost),
                    ":expires": number(ends + GRACE_SECONDS),
                },
            }
        }
        return update, ends

    async def acquire(self, key: str, limit: RateLimit, cost: float = 1.0) -> Decision:
        now = self.table.clock()
        update, ends = self.count(key, limit, cost, now)
        try:
            await self.table.write([update])
        except ConditionFailedError:
            return Decision(False, ends - now)
        return Decision(True)

    async def refund(self, key: str, limit: RateLimit, cost: float = 1.0) -> None:
        """Uncount a call in the current window (a call counted in a window that has ended needs no refund)."""
        index, _ = limiter.window(limit, self.table.clock())
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.table.key("window", f"{key}#{index}"),
                "UpdateExpression": "ADD #count :minus",
                "ConditionExpression": "#count >= :cost",
                "ExpressionAttributeNames": {"#count": "count"},
                "ExpressionAttributeValues": {":minus": number(-cost), ":cost": number(cost)},
            }
        }
        with contextlib.suppress(ConditionFailedError):
            await self.table.write([update])


def _breaker_state(item: Item | None, now: float) -> BreakerState:
    if item is None or number_of(item, "expires") <= now:
        return BreakerState()
    failures = tuple(float(value["N"]) for value in item.get("failures", {}).get("L", []))
    trial = item.get("trial_at")
    return BreakerState(
        CircuitState(item["state"]["S"]), failures, number_of(item, "opened_at"), float(trial["N"]) if trial else None
    )


class DynamoBreakerStore:
    """Circuit breakers: the state machine of `core.resilience.breaker`, written back on the version read."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def key(self, breaker_key: str) -> Item:
        return self.table.key("breaker", breaker_key)

    def put(self, breaker_key: str, item: Item | None, state: BreakerState, policy: BreakerPolicy, now: float) -> Item:
        fresh: Item = {
            **self.key(breaker_key),
            "state": {"S": state.state.value},
            "opened_at": number(state.opened_at),
            "failures": {"L": [number(at) for at in state.failures]},
            "expires": number(now + policy.window_seconds + policy.cooldown_seconds + GRACE_SECONDS),
        }
        if state.trial_started_at is not None:
            fresh["trial_at"] = number(state.trial_started_at)
        return self.table.versioned_put(fresh, _version(item))

    def admit_from(
        self, breaker_key: str, item: Item | None, policy: BreakerPolicy, now: float
    ) -> tuple[Admission, Item | None]:
        current = _breaker_state(item, now)
        admission, after = breaker_machine.admit(current, policy, now)
        return admission, (None if after == current else self.put(breaker_key, item, after, policy, now))

    async def admit(self, key: str, policy: BreakerPolicy) -> Admission:
        for attempt in range(ATTEMPTS):
            item = await self.table.get(self.key(key))
            admission, write = self.admit_from(key, item, policy, self.table.clock())
            if write is None:
                return admission
            try:
                await self.table.write([write])
                return admission
            except ConditionFailedError:
                await _back_off(attempt)
        raise StoreBusyError("The circuit breaker is too contended to decide; retry shortly")

    async def release(self, key: str, trial_at: float) -> None:
        update = {
            "Update": {
                "TableName": self.table.table,
                "Key": self.key(key),
                "UpdateExpression": "REMOVE trial_at ADD v :one",
                "ConditionExpression": "#state = :half AND trial_at = :trial",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": {
                    ":one": number(1),
                    ":half": {"S": CircuitState.HALF_OPEN.value},
                    ":trial": number(trial_at),
                },
            }
        }
        with contextlib.suppress(ConditionFailedError):  # the trial is no longer ours to give back
            await self.table.write([update])

    async def record(self, key: str, policy: BreakerPolicy, *, success: bool) -> tuple[CircuitState, CircuitState]:
        for attempt in range(ATTEMPTS):
            item = await self.table.get(self.key(key))
            now = self.table.clock()
            before = _breaker_state(item, now)
            after = breaker_machine.record(before, policy, now, success=success)
            if after == before:
                return before.state, after.state
            try:
                await self.table.write([self.put(key, item, after, policy, now)])
                return before.state, after.state
            except ConditionFailedError:
                await _back_off(attempt)
        raise StoreBusyError("The circuit breaker is too contended to record; retry shortly")


class DynamoGate:
    """A call's checks in at most two requests: a consistent BatchGetItem of the session and the breaker, then
    one write (a transaction when several) of the window counters and whatever else changed."""

    def __init__(
        self, sessions: DynamoSessionStore, rate_limits: DynamoRateLimitStore, breakers: DynamoBreakerStore
    ) -> None:
        self.sessions = sessions
        self.rate_limits = rate_limits
        self.breakers = breakers
        self.table = sessions.table

    async def admit(self, checks: CallChecks) -> CallAdmission:
        for attempt in range(ATTEMPTS):
            keys: list[Item] = []
            if checks.session_id:
                keys.append(self.sessions.key(checks.session_id))
            if checks.breaker:
                keys.append(self.breakers.key(checks.breaker[0]))
            items = iter(await self.table.get_many(keys) if keys else [])
            now = self.table.clock()
            writes: list[Item] = []
            session = None
            if checks.session_id:
                session = self.sessions.live(checks.session_id, next(items), now)
                if not owned(session, checks.owner):
                    return NO_SESSION
                touch = self.sessions.touch(session, now) if session else None
                if touch:
                    writes.append(touch)
            admission = breaker_write = None
            if checks.breaker:
                admission, breaker_write = self.breakers.admit_from(
                    checks.breaker[0], next(items), checks.breaker[1], now
                )
            first_limit = len(writes)
            window_ends = []
            if admission is None or admission.allowed:  # an open circuit refuses the call: count nothing
                for key, limit in checks.limits:
                    update, ends = self.rate_limits.count(key, limit, 1.0, now)
                    writes.append(update)
                    window_ends.append(ends)
            if breaker_write:  # in the counters' transaction: a limit that refuses also keeps the trial unspent
                writes.append(breaker_write)
            try:
                if writes:
                    await self.table.write(writes)
            except ConditionFailedError as failure:
                refused = [
                    index - first_limit for index in failure.failed if 0 <= index - first_limit < len(window_ends)
                ]
                if refused:  # over a limit: the whole write was cancelled, nothing is counted or changed
                    decisions = tuple(
                        Decision(False, window_ends[i] - now) if i in refused else Decision(True)
                        for i in range(len(window_ends))
                    )
                    return CallAdmission(session, decisions, admission)
                await _back_off(attempt)  # another container changed the session or breaker: decide again
                continue
            return CallAdmission(session, tuple(Decision(True) for _ in checks.limits), admission)
        raise StoreBusyError("The call's checks are too contended to decide; retry shortly")


def dynamodb_stores(
    client: Any,
    table: str,
    *,
    prefix: str,
    session_ttl_seconds: float,
    timeout: float,
    max_sessions: int = 0,
    max_sessions_per_principal: int = 0,
    clock: Clock = time.time,
) -> Stores:
    """Every store over one table."""
    from core.stores.dynamodb_sessions import DynamoSessionStore

    dynamo = DynamoTable(client, table, prefix, timeout=timeout, clock=clock)
    sessions = DynamoSessionStore(
        dynamo,
        ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_per_principal=max_sessions_per_principal,
    )
    rate_limits = DynamoRateLimitStore(dynamo)
    breakers = DynamoBreakerStore(dynamo)
    from core.stores.dynamodb_extra import (
        DynamoCacheStore,
        DynamoEventLogStore,
        DynamoPendingRequestStore,
        DynamoTaskStore,
    )

    return Stores(
        sessions,
        rate_limits,
        breakers,
        events=DynamoEventLogStore(dynamo, ttl_seconds=session_ttl_seconds),
        pending=DynamoPendingRequestStore(dynamo),
        tasks=DynamoTaskStore(dynamo),
        cache=DynamoCacheStore(dynamo),
        gate=DynamoGate(sessions, rate_limits, breakers),
        close=dynamo.close,
    )
