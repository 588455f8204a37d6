"""`subscriptions/listen` at 2026-07-28: the acknowledgment first, then only the notifications the filter asked
for, published on another process, each tagged with the subscription id; a graceful `complete` at the stream
limit; a clear error when the response cannot stream or the filter is malformed."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import shared_store_environment, stratus_processes
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, McpHttp, stateless_meta, validate

SHARED_APP = "tests.fixtures.apps:shared"

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
LISTEN_HEADERS = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen"}


def listen_body(request_id: str, notifications: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": stateless_meta(), "notifications": notifications},
    }


async def messages(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: ") and line[6:]:
            yield json.loads(line[6:])


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_a_listener_gets_only_what_it_asked_for_from_another_process(
    store: str, request: pytest.FixtureRequest
) -> None:
    environment = shared_store_environment(store, request, f"sub-{secrets.token_hex(4)}")
    with stratus_processes(2, SHARED_APP, {"STRATUS_SECRET_KEY": SECRET_KEY, **environment}) as (
        first,
        second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            caller = McpHttp(on_first)
            body = listen_body(
                "listen-1",
                {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["note://board"]},
            )
            received: list[dict[str, Any]] = []
            with anyio.fail_after(20):
                async with on_second.stream("POST", "/mcp", json=body, headers=LISTEN_HEADERS) as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"] == "text/event-stream"
                    listened = messages(stream)
                    ack = await anext(listened)
                    validate(STATELESS, "SubscriptionsAcknowledgedNotification", ack)
                    # The shared server has no prompts: that part of the filter is not agreed.
                    assert ack["params"] == {
                        "_meta": {SUBSCRIPTION_ID: "listen-1"},
                        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["note://board"]},
                    }
                    for uri in ("note://elsewhere", "note://board"):
                        touched = await caller.stateless("tools/call", {"name": "touch", "arguments": {"uri": uri}})
                        assert touched.json()["result"]["content"] == [{"type": "text", "text": "touched"}], (
                            touched.text
                        )
                    await caller.stateless("tools/call", {"name": "reshuffle_tools", "arguments": {}})
                    while len(received) < 2:
                        received.append(await anext(listened))
                    await listened.aclose()
    assert received == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "note://board", "_meta": {SUBSCRIPTION_ID: "listen-1"}},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: "listen-1"}},
        },
    ]
    validate(STATELESS, "ResourceUpdatedNotification", received[0])
    validate(STATELESS, "ToolListChangedNotification", received[1])


async def test_a_subscription_ends_gracefully_at_the_stream_limit() -> None:
    with uvicorn_serving(build_app(shared, Settings(max_stream_seconds=0.2))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            with anyio.fail_after(10):
                answer = await http.post(
                    "/mcp", json=listen_body("l-2", {"toolsListChanged": True}), headers=LISTEN_HEADERS
                )
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ") and line[6:]]
    assert [event.get("method") for event in events] == ["notifications/subscriptions/acknowledged", None]
    closing = events[-1]
    validate(STATELESS, "SubscriptionsListenResultResponse", closing)
    assert closing["id"] == "l-2" and closing["result"]["resultType"] == "complete"
    assert closing["result"]["_meta"][SUBSCRIPTION_ID] == "l-2"


async def test_listening_needs_a_stream_and_a_well_formed_filter() -> None:
    with uvicorn_serving(build_app(shared, Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            json_only = {**LISTEN_HEADERS, "accept": "application/json"}
            refused = await http.post("/mcp", json=listen_body("l-3", {}), headers=json_only)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32600
            malformed = await http.post(
                "/mcp", json=listen_body("l-4", {"toolsListChanged": "yes"}), headers=LISTEN_HEADERS
            )
            assert malformed.json()["error"]["code"] == -32602
            assert "toolsListChanged" in malformed.json()["error"]["message"]
