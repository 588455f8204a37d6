"""Sessions at scale on DynamoDB (moto's server, one request at a time like DynamoDB's per-item atomicity): racing
creates from many containers spread their writes over the shards, hold the limit, and `/health` costs the same
whatever the session count. Every request is counted on the wire, by botocore's own event hooks."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections import Counter
from typing import Any

import pytest

from stratus.errors import TooManySessionsError
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.sessions import DynamoSessionStore
from stratus.stores.dynamodb.shards import SHARDS
from stratus.stores.dynamodb.table import DynamoTable
from stratus.stores.records import SessionRecord
from stratus.transport.health import Health

pytestmark = pytest.mark.anyio
VIEWS = 8
CREATES = 400
"""Not 2,000: moto copies the whole table for every transaction, so the run's time grows with the square of the
creates (400 take about a minute here)."""
WIDE_CREATES = 2_000
WIDE_SHARE = 2 * WIDE_CREATES // SHARDS
"""Twice its even share of 2,000 creates (about 31 each) bounds the busiest roster partition."""
LIMIT = 320
WIDE_LIMIT = 1_900
"""100 of the 2,000 refused: fewer than the 400 creates' proportion (320 of 400) would refuse, since on moto's server
each refusal (a cancelled transaction, the counts read, up to three more transactions on a table of about 3,800
items) costs about as much as 20 admitted creates, and this test runs in CI."""
SLOW_TESTS = os.environ.get("STRATUS_SLOW_TESTS") == "1"
IN_FLIGHT = 2
REQUEST_TIMEOUT = 120.0
WRITE_SHARE = 5 * CREATES // SHARDS  # four times (25) was once exceeded: 28
"""No partition key takes more than five times its even share of the creates' writes (ids hash unevenly over 64
shards at 6 creates each; the old roster's one partition and `#count` item took every create's)."""


class Wire:
    """The DynamoDB requests of every client it listens to: per operation, and the writes and reads per key."""

    def __init__(self) -> None:
        self.operations: Counter[str] = Counter()
        self.writes: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()

    def listen(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.dynamodb", self._heard)

    def _heard(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.operations[model.name] += 1
        if model.name == "TransactWriteItems":
            for action in params["TransactItems"]:
                ((_kind, write),) = action.items()
                self.writes[_pk(write)] += 1
        elif model.name in ("PutItem", "UpdateItem", "DeleteItem"):
            self.writes[_pk(params)] += 1
        elif model.name == "GetItem":
            self.reads[params["Key"]["PK"]["S"]] += 1
        elif model.name == "BatchGetItem":
            for request in params["RequestItems"].values():
                for key in request["Keys"]:
                    self.reads[key["PK"]["S"]] += 1
        elif model.name == "Query":
            self.reads[params["ExpressionAttributeValues"][":roster"]["S"]] += 1

    def clear(self) -> None:
        self.operations.clear()
        self.writes.clear()
        self.reads.clear()


def _pk(write: dict[str, Any]) -> str:
    key = write.get("Key") or write["Item"]
    return str(key["PK"]["S"])


def in_background(why: str) -> pytest.MarkDecorator:
    """With `@pytest.mark.slow`: `make test` runs the test beside the other suites at the lowest CPU priority
    (STRATUS_SLOW_TESTS=1), a plain pytest run skips it saying `why`. moto's server copies the whole table for every
    transaction item (docs/scale.md, bench/moto_transactions.py), so thousands of writes there take a minute or more."""
    return pytest.mark.skipif(
        not SLOW_TESTS, reason=f"{why}; STRATUS_SLOW_TESTS=1 runs it, as `make test` does in the background"
    )


@pytest.fixture
def table(server_table: str) -> str:
    """This module's containers meet on moto's server."""
    return server_table


def views(table: str, prefix: str, wire: Wire, *, limit: int = 0) -> list[DynamoSessionStore]:
    """`VIEWS` containers' session stores: each its own client, connections and threads."""
    stores = []
    for _ in range(VIEWS):
        # moto's server answers one request at a time and copies the table for each transaction item, and the slow
        # test runs at the lowest CPU priority beside other work: a request may wait long behind the others.
        client = dynamodb_client(timeout=REQUEST_TIMEOUT)
        wire.listen(client)
        table_view = DynamoTable(client, table, prefix, timeout=REQUEST_TIMEOUT)
        stores.append(DynamoSessionStore(table_view, ttl_seconds=3600, max_sessions=limit))
    return stores


async def create_from_all(stores: list[DynamoSessionStore], count: int) -> list[BaseException | None]:
    """`count` creates spread round-robin over the views, `IN_FLIGHT` under way at once in each (a container's
    concurrent requests; moto's server answers one request at a time, so more would only wait out the timeouts)."""
    records = [SessionRecord(session_id=secrets.token_urlsafe(16), protocol_version="2025-11-25") for _ in range(count)]
    gates = [asyncio.Semaphore(IN_FLIGHT) for _ in stores]

    async def create(index: int, record: SessionRecord) -> None:
        async with gates[index % len(stores)]:
            await stores[index % len(stores)].create(record)

    return await asyncio.gather(
        *(create(index, record) for index, record in enumerate(records)), return_exceptions=True
    )


@pytest.mark.slow
@in_background("400 creates under a limit take most of a minute on moto's server")
async def test_racing_creates_from_eight_containers_spread_their_writes_and_hold_the_limit(table: str) -> None:
    wire = Wire()
    stores = views(table, "race", wire, limit=LIMIT)
    outcomes = await create_from_all(stores, CREATES)

    admitted = sum(outcome is None for outcome in outcomes)
    refused = [outcome for outcome in outcomes if outcome is not None]
    assert all(isinstance(outcome, TooManySessionsError) for outcome in refused), {repr(o) for o in refused}
    # The shards' places add up to the limit and each is a conditional write: no overshoot at all. No session
    # ended meanwhile, so a create was refused only once every shard was full: no place is left idle either.
    assert admitted == LIMIT
    assert (await stores[0].census()).active == LIMIT
    busiest, writes = wire.writes.most_common(1)[0]
    assert writes <= WRITE_SHARE, (busiest, writes)
    assert wire.operations["TransactWriteItems"] <= CREATES * 2, wire.operations


@pytest.mark.slow
@in_background("2,000 creates under a limit take several minutes on moto's server")
async def test_two_thousand_racing_creates_from_eight_containers_hold_the_limit(table: str) -> None:
    """The Must-show's 2,000 creates under a limit: the same bounds as the 400 above, at five times the creates."""
    wire = Wire()
    stores = views(table, "race-wide", wire, limit=WIDE_LIMIT)
    outcomes = await create_from_all(stores, WIDE_CREATES)

    refused = [outcome for outcome in outcomes if outcome is not None]
    assert all(isinstance(outcome, TooManySessionsError) for outcome in refused), {repr(o) for o in refused}
    assert sum(outcome is None for outcome in outcomes) == WIDE_LIMIT
    assert (await stores[0].census()).active == WIDE_LIMIT
    busiest, writes = wire.writes.most_common(1)[0]
    assert writes <= 4 * WIDE_CREATES // SHARDS, (busiest, writes)
    assert wire.operations["TransactWriteItems"] <= WIDE_CREATES * 2, wire.operations


@pytest.mark.slow
@in_background("2,000 creates without a limit take half a minute on moto's server")
async def test_two_thousand_creates_from_eight_containers_without_a_limit_spread_over_the_roster(table: str) -> None:
    """The Must-show's 2,000 creates, without a limit: each is two plain puts, so moto's server takes them in
    seconds (with a limit each is a transaction, and moto copies the table for each: docs/scale.md)."""
    wire = Wire()
    stores = views(table, "wide", wire)
    outcomes = await create_from_all(stores, WIDE_CREATES)
    assert outcomes == [None] * WIDE_CREATES
    assert wire.operations == {"PutItem": 2 * WIDE_CREATES}, wire.operations
    rosters = {key: count for key, count in wire.writes.items() if "#roster#" in key}
    assert len(rosters) == SHARDS and max(rosters.values()) <= WIDE_SHARE, max(rosters.values())
    others = [count for key, count in wire.writes.items() if "#roster#" not in key]
    assert len(others) == WIDE_CREATES and set(others) == {1}  # each session's own item, written once
    await stores[0].sweep()
    assert (await stores[0].census()).active == WIDE_CREATES


async def test_with_no_limit_creates_and_deletes_count_nothing_and_health_reports_the_swept_figures(
    table: str,
) -> None:
    wire = Wire()
    store = views(table, "free", wire)[0]
    health = Health(store, backend="dynamodb", max_sessions=0, session_ttl_seconds=3600)
    records = [
        SessionRecord(session_id=secrets.token_urlsafe(16), protocol_version="2025-11-25", principal=principal)
        for principal in ("alice", None, "bob", None)
    ]
    for record in records:
        await store.create(record)
    assert await store.delete(records[0].session_id) is True

    # One plain put each for the session and its roster entry, an update (the end) and a delete (the entry) for
    # the DELETE: no count item or principal item written, no transaction.
    assert wire.operations["TransactWriteItems"] == 0, wire.operations
    assert wire.operations["PutItem"] == 2 * len(records) and wire.operations["DeleteItem"] == 1, wire.operations
    counted = [key for key in wire.writes if "#sessions#" in key or "#principal#" in key]
    assert counted == [], counted

    await store.sweep_step()
    status, report = await health.report()
    assert (status, report["sessions"]["activeSessions"]) == (200, len(records) - 1)


@pytest.mark.slow
@in_background("10,000 sessions take most of a minute to write on moto's server")
async def test_the_census_costs_the_same_at_100_and_at_10000_sessions(table: str) -> None:
    wire = Wire()
    stores = views(table, "census", wire)
    health = Health(stores[0], backend="dynamodb", max_sessions=0, session_ttl_seconds=3600)
    costs: list[tuple[int, dict[str, int], int, int]] = []
    for total in (100, 10_000):
        await seed(stores[0], total - (costs[0][0] if costs else 0))
        await stores[0].sweep()  # with no limit nothing is counted: the census sums what the sweeper saw
        wire.clear()
        health._last = None  # a new census, not the cached one: what every container's first /health costs
        status, report = await health.report()
        assert (status, report["sessions"]["activeSessions"]) == (200, total)
        costs.append((total, dict(wire.operations), sum(wire.reads.values()), sum(wire.writes.values())))
    (_, at_100, read_100, wrote_100), (_, at_10000, read_10000, wrote_10000) = costs
    assert at_100 == at_10000 == {"BatchGetItem": 1}
    assert read_100 == read_10000 == SHARDS and wrote_100 == wrote_10000 == 0


async def seed(store: DynamoSessionStore, count: int) -> None:
    """`count` sessions as creates leave them: one created through the store, the rest its items copied under new
    ids with BatchWriteItem, and under a limit each shard's count raised by its copies (moto copies the whole table
    for each transaction: 10,000 creates would take most of an hour)."""
    first = SessionRecord(session_id=secrets.token_urlsafe(16), protocol_version="2025-11-25")
    await store.create(first)
    client, name, prefix = store.table.client, store.table.table, store.table.prefix
    session = client.get_item(TableName=name, Key=store.key(first.session_id))["Item"]
    shard = int(session["shard"]["N"])
    entry = client.get_item(TableName=name, Key=store.shards.entry(shard, first.session_id))["Item"]
    added: Counter[int] = Counter()
    writes = []
    for _ in range(count - 1):
        session_id = secrets.token_urlsafe(16)
        shard = store.shards.first(session_id)
        added[shard] += 1
        writes.append({**session, **store.key(session_id), "shard": {"N": str(shard)}})
        writes.append({**entry, **store.shards.entry(shard, session_id)})
    for start in range(0, len(writes), 25):
        batch = [{"PutRequest": {"Item": item}} for item in writes[start : start + 25]]
        client.batch_write_item(RequestItems={name: batch})
    for shard, more in added.items() if store.max_sessions else ():
        client.update_item(
            TableName=name,
            Key=store.shards.counter(shard),
            UpdateExpression="ADD #count :more SET oldest = if_not_exists(oldest, :now), newest = :now",
            ExpressionAttributeNames={"#count": "count"},
            ExpressionAttributeValues={":more": {"N": str(more)}, ":now": session["created"]},
        )
    assert prefix
