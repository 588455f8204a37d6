"""What the DynamoDB backend promises beyond the shared contract: at most two requests for a tools/call's checks,
and throttling or lost races ending in the documented errors."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from typing import Any

import httpx
import pytest
from botocore.stub import Stubber

from stratus import McpServer, Settings
from stratus.errors import StoreBusyError, StoreUnavailableError
from stratus.protocol.notifications import NotificationLog, session_log
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import StoreOptions
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.dynamodb.table import ATTEMPTS
from stratus.stores.records import SessionRecord
from stratus.transport.app import build_app
from tests.fixtures.wire import McpHttp, sse_fields

pytestmark = pytest.mark.anyio


def limited_server() -> McpServer:
    server = McpServer("dynamo-limits", breaker=BreakerPolicy())

    @server.tool(rate_limit=RateLimit(rate=100, burst=100))
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


async def test_a_handshake_tools_call_with_session_limit_and_breaker_takes_two_requests(table: tuple[Any, str]) -> None:
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    app = build_app(limited_server(), Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        session = await McpHttp(http).initialize()
        counter = stores.sessions.table  # type: ignore[attr-defined]
        before = counter.requests
        response = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert response.json()["result"]["structuredContent"] == {"result": 5}
        assert counter.requests - before == 2  # BatchGetItem (session, bucket, breaker) + one write


async def test_throttling_becomes_store_unavailable(table: tuple[Any, str]) -> None:
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    with Stubber(client) as stub:
        for _ in range(2):  # botocore's standard mode tries twice, as configured
            stub.add_client_error("get_item", "ProvisionedThroughputExceededException", http_status_code=400)
        with pytest.raises(StoreUnavailableError) as refused:
            await stores.sessions.load("s-1")
    assert refused.value.http_status == 503 and refused.value.headers == {"retry-after": "1"}


async def test_a_breaker_that_keeps_losing_races_gives_up_busy_instead_of_guessing(table: tuple[Any, str]) -> None:
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    with Stubber(client) as stub:
        for _ in range(ATTEMPTS):
            stub.add_response("get_item", {})
            stub.add_client_error("put_item", "ConditionalCheckFailedException", http_status_code=400)
        with pytest.raises(StoreBusyError) as busy:
            await stores.breakers.record("tool:x", BreakerPolicy(), success=False)
        stub.assert_no_pending_responses()
    assert busy.value.http_status == 503


async def test_a_full_window_refuses_with_the_time_until_the_next(table: tuple[Any, str]) -> None:
    client, name = table
    now = [1_000.0]
    stores = dynamodb_stores(
        client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0, clock=lambda: now[0])
    )
    limit = RateLimit(rate=1, burst=2)  # windows of 2 s: [1000, 1002)
    assert [(await stores.rate_limits.acquire("tool:x", limit)).allowed for _ in range(3)] == [True, True, False]
    now[0] = 1_001.5
    refused = await stores.rate_limits.acquire("tool:x", limit)
    assert not refused.allowed
    assert refused.retry_after == pytest.approx(0.5)


async def test_store_calls_do_not_queue_behind_a_full_default_executor(
    aws_credentials: None, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The application's blocking calls (asyncio.to_thread, run_in_executor) fill the event loop's default
    # executor (at most 32 threads); DynamoDB calls have threads of their own, so they still complete.
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    client = dynamodb_client(timeout=2.0)
    name = f"stratus-{secrets.token_hex(4)}"
    create_table(client, name)
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    release = threading.Event()
    loop = asyncio.get_running_loop()
    blocked = [loop.run_in_executor(None, release.wait, 10) for _ in range(40)]  # queued before the call below
    try:
        async with asyncio.timeout(5):
            await stores.cache.set("greeting", "hello", ttl_seconds=60)
            assert await stores.cache.get("greeting") == "hello"
    finally:
        release.set()
        async with asyncio.timeout(5):
            await asyncio.gather(*blocked)
        await stores.aclose()
        client.delete_table(TableName=name)


async def test_an_idle_poll_reads_the_session_item_and_the_server_wide_mirror_eventually_consistently(
    table: tuple[Any, str],
) -> None:
    """A poll costs one read unit: half for the session's item, which numbers the session's own log, half for the
    server-wide log's mirror. Its own log is read only once something was addressed to it, and that is relayed."""
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    app = build_app(limited_server(), Settings(lambda_host=True), stores=stores)
    reads: list[tuple[str, bool]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        reads.append((model.name, bool(params.get("ConsistentRead"))))

    client.meta.events.register("provide-client-params.dynamodb.*", record)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        session = await McpHttp(http).initialize()
        headers = {**session.headers, "accept": "text/event-stream"}
        first = await http.get("/mcp", headers=headers)
        place = sse_fields(first.text)[-1]["id"]

        reads.clear()
        idle = await http.get("/mcp", headers={**headers, "last-event-id": place})
        assert idle.status_code == 200 and sse_fields(idle.text)[-1]["id"] == place
        assert sorted(reads) == [("GetItem", False), ("Query", False)]

        message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
        await NotificationLog(stores.events).send_to(session.session_id, message)
        reads.clear()
        told = await http.get("/mcp", headers={**headers, "last-event-id": place})
        assert [json.loads(event["data"]) for event in sse_fields(told.text) if event.get("data")] == [message]
        assert sorted(reads) == [("GetItem", False), ("Query", False), ("Query", True)]


async def test_a_poll_reads_the_server_wide_mirror_while_its_session_is_read(table: tuple[Any, str]) -> None:
    """A poll's two reads take one round trip: the session's GetItem is held unanswered until the mirror's Query
    has been sent, which happens only if both are in flight at once (on DynamoDB they are most of a poll's billed
    time)."""
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    app = build_app(limited_server(), Settings(lambda_host=True), stores=stores)
    mirror_sent = threading.Event()
    holding = threading.Event()
    sent_while_held: list[bool] = []

    def hold_the_session_read(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "Query":
            mirror_sent.set()
        elif model.name == "GetItem" and holding.is_set():
            sent_while_held.append(mirror_sent.wait(timeout=3))  # bounded: False for reads one after the other

    client.meta.events.register("provide-client-params.dynamodb.*", hold_the_session_read)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        session = await McpHttp(http).initialize()
        headers = {**session.headers, "accept": "text/event-stream"}
        place = sse_fields((await http.get("/mcp", headers=headers)).text)[-1]["id"]
        mirror_sent.clear()
        holding.set()
        idle = await http.get("/mcp", headers={**headers, "last-event-id": place})
        assert idle.status_code == 200 and sse_fields(idle.text)[-1]["id"] == place
        assert sent_while_held == [True]


async def test_a_session_made_before_its_log_was_numbered_on_it_keeps_numbering_it_apart(
    table: tuple[Any, str],
) -> None:
    """A session alive across the upgrade has no number on its item: its log goes on being numbered on its own
    counter, where its client's place is, and its polls read the log; a session made now numbers it on its item."""
    client, name = table
    stores = dynamodb_stores(client, name, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    sessions, log = stores.sessions, NotificationLog(stores.events)
    before = SessionRecord(session_id="before", protocol_version="2025-11-25")
    await sessions.create(before)
    key = sessions.key("before")  # type: ignore[attr-defined]
    client.update_item(TableName=name, Key=key, UpdateExpression="REMOVE logseq")  # as the release before made it
    message = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
    for _ in range(2):
        await log.send_to("before", message)
    loaded = await sessions.load("before", consistent=False)
    assert loaded is not None and loaded.log_head is None
    assert [event.seq for event in await stores.events.read_after(session_log("before"), 0)] == [1, 2]
    assert "logseq" not in client.get_item(TableName=name, Key=key)["Item"]

    await sessions.create(SessionRecord(session_id="now", protocol_version="2025-11-25"))
    await log.send_to("now", message)
    made_now = await sessions.load("now", consistent=False)
    assert made_now is not None and made_now.log_head == 1
    assert [event.seq for event in await stores.events.read_after(session_log("now"), 0)] == [1]
