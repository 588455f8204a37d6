"""On DynamoDB the server-wide notification log is written under every mirror key and each process reads one, so
the streams following it spread over partitions; what is addressed to one session never touches it."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from stratus import McpServer, Settings
from stratus.protocol.notifications import NOTIFICATIONS, NotificationFollower, NotificationLog, session_log
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.replicated_log import MIRRORS
from stratus.transport.app import build_app
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


def view(table: tuple[Any, str]) -> Stores:
    client, name = table
    return dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))


def items_under(table: tuple[Any, str], stream: str) -> list[dict[str, Any]]:
    """Every item whose partition key belongs to the stream (its mirrors' included)."""
    client, name = table
    found: list[dict[str, Any]] = []
    pages = client.get_paginator("scan").paginate(TableName=name)
    for page in pages:
        found += [item for item in page["Items"] if item["PK"]["S"].startswith(f"t#stream#{stream}")]
    return found


async def test_a_notification_is_written_under_every_mirror_and_reaches_a_follower_reading_any(
    table: tuple[Any, str],
) -> None:
    publisher, reader = view(table), view(table)
    publisher.events.mirrors.mine, reader.events.mirrors.mine = 0, MIRRORS - 1  # type: ignore[attr-defined]
    follower = await NotificationFollower.from_now(reader.events)
    await NotificationLog(publisher.events).publish("notifications/tools/list_changed", {})
    with anyio.fail_after(5):
        notices = await follower.next(within=5)
    assert [notice.message["method"] for notice in notices] == ["notifications/tools/list_changed"]
    events = [item for item in items_under(table, NOTIFICATIONS) if item["SK"]["S"].startswith("event#")]
    assert len(events) == MIRRORS
    assert len({item["PK"]["S"] for item in events}) == MIRRORS  # one partition key each


async def test_ending_a_session_writes_only_its_own_log(table: tuple[Any, str]) -> None:
    stores = view(table)
    app = build_app(McpServer("mirrors"), Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        session = await McpHttp(http).initialize()
        assert (await http.delete("/mcp", headers=session.headers)).status_code == 200
    assert items_under(table, NOTIFICATIONS) == []
    own = items_under(table, session_log(session.session_id))
    assert [item["data"]["S"] for item in own if "data" in item] == [
        f'{{"session": "{session.session_id}", "ended": true}}'
    ]
