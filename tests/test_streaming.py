"""SSE responses under a real HTTP server: progress, log messages and server-to-client requests reach the client
before the result, and a reply posted to another process reaches the waiting call."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.processes import RoundRobinProxy, shared_store_environment, stratus_processes
from tests.fixtures.sdk_answers import ASKED, call_the_asking_tools
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.fixture(scope="module")
def one_process() -> Iterator[str]:
    with uvicorn_serving(build_app(shared, Settings())) as url:
        yield url


def sse_events(text: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body (the priming event's empty data left out)."""
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ") and line[6:]]


def sse_ids(text: str) -> list[str]:
    return [line[len("id: ") :] for line in text.splitlines() if line.startswith("id: ")]


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
        "STRATUS_SECRET_KEY": "k",
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
        "STRATUS_SECRET_KEY": "k",
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


async def test_a_stream_resumes_with_last_event_id_on_the_other_process(request: pytest.FixtureRequest) -> None:
    environment = {
        "STRATUS_SECRET_KEY": "k",
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"resume-{secrets.token_hex(4)}",
    }
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            body = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "count_to_three", "_meta": {"progressToken": "p"}},
            }
            posted = await on_first.post("/mcp", json=body, headers={**BASE_HEADERS, **session.headers})
            ids = sse_ids(posted.text)
            resumed = await on_second.get("/mcp", headers={**BASE_HEADERS, **session.headers, "last-event-id": ids[2]})
            assert resumed.status_code == 200
            assert sse_ids(resumed.text) == ids[3:]  # exactly the events after the one named
            assert sse_events(resumed.text) == sse_events(posted.text)[2:]
            stranger = await McpHttp(on_second).initialize()
            foreign = await on_second.get("/mcp", headers={**BASE_HEADERS, **stranger.headers, "last-event-id": ids[2]})
            assert foreign.status_code == 404  # another session's stream is never replayed


async def test_a_dropped_stream_is_followed_on_the_other_process_until_the_call_ends() -> None:
    environment = {
        "STRATUS_SECRET_KEY": "k",
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"follow-{secrets.token_hex(4)}",
        "STRATUS_POLL_HOLD_SECONDS": "1",
    }
    body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "ask_user"}}
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            initialized = await on_first.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"elicitation": {}},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers=BASE_HEADERS,
            )
            session = {"mcp-session-id": initialized.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            headers = {**BASE_HEADERS, **session}
            with anyio.fail_after(20):
                async with on_first.stream("POST", "/mcp", json=body, headers=headers) as posted:
                    async for line in posted.aiter_lines():
                        if line.startswith("id: "):
                            priming = line[len("id: ") :]
                            break  # the client drops the stream right after the priming event
                # The client polls from the priming id, on the other process, until the call's answer arrives.
                resumed_events: list[dict[str, Any]] = []
                last = priming
                for _ in range(20):  # each poll holds up to 1 s for the next event: bounded, and by fail_after above
                    polled = await on_second.get("/mcp", headers={**headers, "last-event-id": last})
                    assert polled.status_code == 200  # a poll while the call runs is never an error
                    last = sse_ids(polled.text)[-1]
                    for message in sse_events(polled.text):
                        resumed_events.append(message)
                        if message.get("method") == "elicitation/create":  # answer it on this process
                            answer = {
                                "jsonrpc": "2.0",
                                "id": message["id"],
                                "result": {"action": "accept", "content": {"name": "Lin"}},
                            }
                            assert (await on_second.post("/mcp", json=answer, headers=headers)).status_code == 202
                    if resumed_events and "result" in resumed_events[-1]:
                        break
    assert resumed_events[0]["method"] == "elicitation/create"
    assert resumed_events[-1]["result"]["content"] == [{"type": "text", "text": "hello Lin (accept)"}]


async def test_a_long_stream_ends_cleanly_at_its_limit_and_the_client_resumes() -> None:
    with uvicorn_serving(build_app(shared, Settings(max_stream_seconds=0.05))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            opened = await http.post("/mcp", json=init, headers=BASE_HEADERS)
            headers = {
                **BASE_HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            with anyio.fail_after(10):
                cut = await http.post(
                    "/mcp",
                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user"}},
                    headers=headers,
                )
                events = sse_events(cut.text)
                assert [event.get("method") for event in events] == ["elicitation/create"]  # cut before the result
                ask = events[0]
                reply = {"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Kim"}}}
                assert (await http.post("/mcp", json=reply, headers=headers)).status_code == 202
                resumed = await http.get("/mcp", headers={**headers, "last-event-id": sse_ids(cut.text)[-1]})
    assert sse_events(resumed.text)[-1]["result"]["content"] == [{"type": "text", "text": "hello Kim (accept)"}]
