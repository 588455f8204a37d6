"""The suites that matter, through the stack template.yaml describes as the emulator serves it: two containers per
function sharing the real Redis or DynamoDB on moto's server, every request through a front door.

- the official Python SDK client in both eras, through each front door;
- the session REST API (docs/openapi.yaml) and its event stream, through each door that carries streams (the HTTP
  API routes only the buffered function's JSON routes: no `/events`);
- the browser test, a page on another origin driving that API (notifications, a call's log and progress, an
  elicitation answered over REST, the closing event), through the streaming Function URL.

As on Lambda, an open stream holds its container until the app ends it, even once the client has gone:
STRATUS_MAX_STREAM_SECONDS ends them soon here, so that a closed test's stream frees its container for the next.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.client import ConnectMode

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.browser import REPORT_TIMEOUT_SECONDS, PageServer, check_report, headless_chromium
from tests.fixtures.emulated_stack import DOORS, STORES, TEMPLATE, serving
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import sse_fields

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
APP = "tests.fixtures.apps:shared"
STREAMING_DOORS = ("StreamingRestApi", "StreamingFunctionUrl")
ERAS: dict[str, ConnectMode] = {"2026-07-28": "auto", "2025-11-25": "legacy"}
JSON = {"content-type": "application/json"}
TEST_SECONDS = 30


@pytest.fixture(scope="module", params=STORES)
def stack(request: pytest.FixtureRequest) -> Iterator[LocalAws]:
    environment = {"STRATUS_MAX_STREAM_SECONDS": "3"}
    with serving(TEMPLATE, store=request.param, app=APP, containers=2, environment=environment) as aws:
        yield aws


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("version", ERAS)
async def test_the_sdk_client_lists_and_calls_tools_in_each_era_through_each_door(
    stack: LocalAws, door: str, version: str
) -> None:
    with anyio.fail_after(TEST_SECONDS):
        async with Client(f"{stack.url(door)}/mcp", mode=ERAS[version], read_timeout_seconds=20) as client:
            assert client.protocol_version == version
            assert "add" in [tool.name for tool in (await client.list_tools()).tools]
            for a in range(3):  # each call may land on either container
                result = await client.call_tool("add", {"a": a, "b": 5})
                assert result.structured_content == {"result": a + 5}


async def _call(http: httpx.AsyncClient, session_id: str, method: str, params: Any = None) -> httpx.Response:
    body = {"sessionId": session_id, "method": method, **({"params": params} if params is not None else {})}
    return await http.post("/mcp", json=body, headers=JSON)


@pytest.mark.parametrize("door", STREAMING_DOORS)
async def test_a_rest_session_and_its_events_through_each_streaming_door(stack: LocalAws, door: str) -> None:
    async with httpx.AsyncClient(base_url=stack.url(door), timeout=20) as http:
        created = await http.post("/session", headers=JSON)
        assert created.status_code == 200, created.text
        session_id = created.json()["sessionId"]
        listed = await _call(http, session_id, "tools/list")
        assert listed.status_code == 200 and listed.json()["sessionId"] == session_id
        added = await _call(http, session_id, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert added.json() == {
            "sessionId": session_id,
            "result": {"content": [{"type": "text", "text": '{"result":5}'}], "structuredContent": {"result": 5}},
        }
        subscribed = await _call(http, session_id, "resources/subscribe", {"uri": "note://board"})
        assert subscribed.json() == {"sessionId": session_id, "result": {}}
        # `/events` is a poll: connected, then a heartbeat with the place to come back from (as EventSource does).
        with anyio.fail_after(TEST_SECONDS):
            opened = sse_fields((await http.get(f"/events/{session_id}")).text)
            assert [json.loads(event["data"]) for event in opened] == [
                {"type": "connected", "sessionId": session_id},
                {"type": "heartbeat"},
            ]
            touched = await _call(
                http, session_id, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}}
            )
            assert touched.status_code == 200
            polled = await http.get(f"/events/{session_id}", headers={"last-event-id": opened[-1]["id"]})
        assert polled.status_code == 200 and polled.headers["content-type"].startswith("text/event-stream")
        assert [json.loads(event["data"]) for event in sse_fields(polled.text)][1:] == [
            {
                "type": "notification",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "note://board"},
                },
            },
            {"type": "heartbeat"},
        ]
        closed = await http.delete(f"/session/{session_id}")
        assert closed.status_code == 200 and closed.json() == {"message": "Session closed successfully"}
        after = await _call(http, session_id, "tools/list")
        assert after.status_code == 404 and after.json()["error"]["code"] == -32600
        assert (await http.delete(f"/session/{session_id}")).status_code == 404


async def test_the_session_rest_api_on_the_http_api_with_events_as_polls(stack: LocalAws) -> None:
    """The HTTP API serves the buffered function's JSON routes, and `/events` as a poll, sent whole once it ends."""
    async with httpx.AsyncClient(base_url=stack.url("ServerlessHttpApi"), timeout=20) as http:
        session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
        added = await _call(http, session_id, "tools/call", {"name": "add", "arguments": {"a": 4, "b": 4}})
        assert added.json()["result"]["structuredContent"] == {"result": 8}
        polled = await http.get(f"/events/{session_id}")
        assert polled.status_code == 200
        assert [json.loads(event["data"]) for event in sse_fields(polled.text)] == [
            {"type": "connected", "sessionId": session_id},
            {"type": "heartbeat"},
        ]
        assert (await http.delete(f"/session/{session_id}")).status_code == 200


@pytest.fixture(scope="module", params=STORES)
def browser_stack(request: pytest.FixtureRequest) -> Iterator[LocalAws]:
    """The page polls its event stream while a call waits for the answer it posts (three containers at once); its
    polls suggest `retry:` 1 s to keep the exchange short."""
    environment = {"STRATUS_MAX_STREAM_SECONDS": str(TEST_SECONDS), "STRATUS_POLL_RETRY_SECONDS": "1"}
    with serving(TEMPLATE, store=request.param, app=APP, containers=3, environment=environment) as aws:
        yield aws


@pytest.mark.anyio(False)
@pytest.mark.parametrize("door", ["StreamingFunctionUrl", "ServerlessHttpApi"])
def test_a_browser_page_on_another_origin_drives_the_session_api_through_a_front_door(
    browser_stack: LocalAws, door: str
) -> None:
    """Every request the page makes is cross-origin: Chromium preflights each JSON POST and the DELETE, and the app
    answers them (the HTTP API has no CORS configuration of its own, so OPTIONS reaches the function there too)."""
    pages = PageServer(browser_stack.url(door))
    with uvicorn_serving(pages) as page_url, headless_chromium(f"{page_url}/page.html"):
        report = pages.reports.get(timeout=REPORT_TIMEOUT_SECONDS)
    check_report(report)
