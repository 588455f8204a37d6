"""SSE responses under a real HTTP server: progress, log messages and server-to-client requests reach the client
before the result, and a reply posted to another process reaches the waiting call."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Literal

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import RoundRobinProxy, shared_store_environment, stratus_processes
from tests.fixtures.sdk_answers import ASKED, call_the_asking_tools
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.streams import sse_events, sse_ids
from tests.fixtures.wire import BASE_HEADERS, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.fixture(scope="module")
def one_process() -> Iterator[str]:
    with uvicorn_serving(build_app(shared, Settings())) as url:
        yield url


async def test_progress_and_logs_stream_before_the_result(one_process: str) -> None:
    async with httpx.AsyncClient(base_url=one_process, timeout=10) as http:
        session = await McpHttp(http).initialize()
        body = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "count_to_three", "_meta": {"progressToken": "p-1"}},
        }
        with anyio.fail_after(10):
            response = await http.post("/mcp", json=body, headers={**BASE_HEADERS, **session.headers})
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-accel-buffering"] == "no"
    lines = response.text.splitlines()
    token = sse_ids(response.text)[0].removesuffix("-0")
    assert lines[:3] == [f"id: {token}-0", "retry: 1000", "data: "]  # the priming event (2025-11-25)
    assert sse_ids(response.text) == [f"{token}-{seq}" for seq in range(6)]
    events = sse_events(response.text)
    assert [event.get("method") for event in events] == [
        "notifications/message",
        "notifications/progress",
        "notifications/progress",
        "notifications/progress",
        None,
    ]
    assert events[0]["params"] == {"level": "info", "logger": "count_to_three", "data": "counting"}
    assert [event["params"]["progress"] for event in events[1:4]] == [1, 2, 3]
    assert events[-1] == {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "done"}]}}


async def test_partial_content_streams_on_the_log_channel_to_clients_that_want_it(one_process: str) -> None:
    async with httpx.AsyncClient(base_url=one_process, timeout=10) as http:
        session = await McpHttp(http).initialize()
        body = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "draft"}}
        with anyio.fail_after(10):
            streamed = await http.post("/mcp", json=body, headers={**BASE_HEADERS, **session.headers})
            stateless = await McpHttp(http).stateless("tools/call", {"name": "draft"})  # no logLevel: no log messages
    parts = [event["params"] for event in sse_events(streamed.text) if event.get("method") == "notifications/message"]
    assert parts == [
        {"level": "info", "logger": "draft", "data": {"content": [{"type": "text", "text": "Once upon "}]}},
        {"level": "info", "logger": "draft", "data": {"content": [{"type": "text", "text": "a time."}]}},
    ]
    assert sse_events(streamed.text)[-1]["result"]["content"] == [{"type": "text", "text": "Once upon a time."}]
    assert stateless.headers["content-type"] == "application/json"
    assert stateless.json()["result"]["content"] == [{"type": "text", "text": "Once upon a time."}]


async def test_a_stateless_call_streams_only_when_it_asked_for_progress_or_logs(one_process: str) -> None:
    """At 2026-07-28 nothing reaches the response before the answer unless the request asked for it, so the
    call is answered as plain JSON without the relay; with a progressToken it streams its progress."""
    async with httpx.AsyncClient(base_url=one_process, timeout=10) as http:
        mcp = McpHttp(http)
        with anyio.fail_after(10):
            silent = await mcp.stateless("tools/call", {"name": "count_to_three"})
            meta = {**stateless_meta(), "progressToken": "m-1"}
            streamed = await mcp.stateless("tools/call", {"name": "count_to_three", "_meta": meta})
    assert silent.headers["content-type"] == "application/json"
    assert silent.json()["result"]["content"] == [{"type": "text", "text": "done"}]
    assert streamed.headers["content-type"] == "text/event-stream"
    events = sse_events(streamed.text)
    assert [event["params"]["progress"] for event in events if event.get("method") == "notifications/progress"] == [
        1,
        2,
        3,
    ]
    assert events[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


async def test_a_call_with_nothing_to_stream_answers_plain_json(one_process: str) -> None:
    async with httpx.AsyncClient(base_url=one_process, timeout=10) as http:
        session = await McpHttp(http).initialize()
        response = await session.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert response.headers["content-type"] == "application/json"


async def test_a_reply_to_a_request_nobody_sent_is_refused(one_process: str) -> None:
    async with httpx.AsyncClient(base_url=one_process, timeout=10) as http:
        session = await McpHttp(http).initialize()
        reply = {"jsonrpc": "2.0", "id": "stratus-never-sent", "result": {}}
        response = await http.post("/mcp", json=reply, headers={**BASE_HEADERS, **session.headers})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # 2025-11-25 over SSE; 2026-07-28 by input_required rounds
async def test_the_sdk_samples_and_elicits_with_replies_landing_on_the_other_process(
    store: str, mode: Literal["legacy", "auto"], request: pytest.FixtureRequest
) -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        **shared_store_environment(store, request, f"stream-{secrets.token_hex(4)}"),
    }
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as backends:
        proxy = RoundRobinProxy(backends)
        with uvicorn_serving(proxy) as url:
            with anyio.fail_after(30):
                texts, progressed = await call_the_asking_tools(f"{url}/mcp", mode)
    assert texts == ASKED and progressed == [1, 2, 3]
    assert set(proxy.forwarded) == set(backends)


async def test_the_sdk_listens_for_changes_published_on_the_other_process() -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"listen-{secrets.token_hex(4)}",
    }
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as backends:
        proxy = RoundRobinProxy(backends)
        with uvicorn_serving(proxy) as url, anyio.fail_after(30):
            async with (
                Client(f"{url}/mcp", mode="auto") as client,
                client.listen(tools_list_changed=True, resource_subscriptions=["note://board"]) as subscription,
            ):
                assert subscription.honored.tools_list_changed is True
                assert subscription.honored.resource_subscriptions == ["note://board"]
                await client.call_tool("touch", {"uri": "note://board"})
                event = await anext(subscription)
    served = dict(proxy.methods)
    assert served["subscriptions/listen"] != served["tools/call"]  # published on the other process
    assert event == ResourceUpdated(uri="note://board")
