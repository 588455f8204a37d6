"""MCP through the buffered front door (API Gateway's HTTP API, payload 2.0, the buffered function), where an answer
is sent whole once it ends: a call answers progress and log lines before its result in one SSE body, and a GET or
`/events` stream is served as a poll, which ends at once with the place to come back from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, call_tool, initialize, serving
from tests.fixtures.sdk_answers import ASKED, call_the_asking_tools
from tests.fixtures.streams import LISTEN_HEADERS, listen_body, poll_for_response
from tests.fixtures.wire import sse_fields

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE) as aws:
        yield aws


def _url(stack: LocalAws) -> str:
    return f"{stack.url('ServerlessHttpApi')}/mcp"


async def _session(http: httpx.AsyncClient, url: str, version: str = VERSION) -> dict[str, str]:
    params = {
        "protocolVersion": version,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=HEADERS
    )
    assert opened.status_code == 200, opened.text
    return {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}


async def _tool_call(
    http: httpx.AsyncClient, url: str, headers: dict[str, str], params: dict[str, Any]
) -> httpx.Response:
    return await http.post(
        url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}, headers=headers
    )


async def test_a_call_answers_its_progress_then_its_result_in_one_sse_body(stack: LocalAws) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        headers = await _session(http, _url(stack))
        params = {"name": "count_to_three", "arguments": {}, "_meta": {"progressToken": "p"}}
        answered = await _tool_call(http, _url(stack), headers, params)
        quiet = await _tool_call(http, _url(stack), headers, {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert answered.status_code == 200 and answered.headers["content-type"] == "text/event-stream"
    events = [json.loads(event["data"]) for event in sse_fields(answered.text)]
    assert [event["params"]["progress"] for event in events[:3]] == [1, 2, 3]
    assert events[3]["id"] == 7 and "structuredContent" in events[3]["result"]
    assert len(events) == 4
    # A call with nothing to send first answers plain JSON, its HTTP status and all.
    assert quiet.headers["content-type"].startswith("application/json")
    assert quiet.json()["result"]["structuredContent"] == {"result": 5}


async def test_a_tool_asking_a_client_that_does_not_resume_is_told_which_front_door_can_carry_it(
    stack: LocalAws,
) -> None:
    """Before 2025-11-25 a client need not resume a call's stream, so the call cannot run elsewhere and be polled."""
    async with httpx.AsyncClient(timeout=20) as http:
        headers = await _session(http, _url(stack), "2025-06-18")
        refused = await _tool_call(http, _url(stack), headers, {"name": "greet", "arguments": {}})
    error = refused.json()["error"]
    assert error["code"] == -32603
    assert "buffered front door" in error["message"] and "Function URL" in error["message"]


async def test_a_get_stream_is_a_poll_that_carries_what_happened_since_its_last_event_id(stack: LocalAws) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        headers = await _session(http, _url(stack))
        (place,) = sse_fields((await http.get(_url(stack), headers=headers)).text)
        assert place["data"] == "" and place["retry"] == "5000" and place["id"].startswith("g-")
        await call_tool(http, _url(stack), await initialize(http, _url(stack)), "announce", {})
        polled = await http.get(_url(stack), headers={**headers, "last-event-id": place["id"]})
    assert polled.status_code == 200 and polled.headers["content-type"] == "text/event-stream"
    changed, pause = sse_fields(polled.text)
    assert json.loads(changed["data"]) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
    assert pause == {"id": changed["id"], "retry": "5000", "data": ""}


async def test_a_session_whose_client_does_not_poll_is_refused_a_get_stream_naming_the_version(stack: LocalAws) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        headers = await _session(http, _url(stack), "2025-03-26")
        refused = await http.get(_url(stack), headers=headers)
    assert refused.status_code == 405 and refused.headers["allow"] == "POST, DELETE"
    message = refused.json()["error"]["message"]
    assert "2025-11-25" in message and "2025-03-26" in message and "streaming front door" in message


async def test_a_call_that_asks_runs_in_the_task_worker_and_its_question_and_result_reach_the_client_by_polls(
    stack: LocalAws,
) -> None:
    worker = stack.pools["stratus-local-TaskWorkerFunction"]
    async with httpx.AsyncClient(timeout=30) as http:
        headers = await _session(http, _url(stack))
        runs = len(worker.served)
        asked = await _tool_call(http, _url(stack), headers, {"name": "greet", "arguments": {}})
        assert asked.status_code == 200 and asked.headers["content-type"] == "text/event-stream"
        question, place = sse_fields(asked.text)
        request = json.loads(question["data"])
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Your name?"
        assert place["data"] == "" and place["retry"] == "1000" and place["id"].endswith(".1")
        assert len(worker.served) == runs + 1  # the call runs in the task worker, not in the buffered function

        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        assert (await http.post(_url(stack), json=answer, headers=headers)).status_code == 202
        result = await poll_for_response(http, _url(stack), headers, place["id"], 7)
    assert result == {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hello Ada"}]}}


@pytest.fixture(scope="module")
def asking_stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, app="tests.fixtures.apps:shared") as aws:
        yield aws


async def test_the_official_client_samples_elicits_and_hears_progress_and_logs_through_the_http_api(
    asking_stack: LocalAws,
) -> None:
    logged: list[Any] = []

    async def on_log(params: Any) -> None:
        logged.append(params.data)

    with anyio.fail_after(60):
        url = f"{asking_stack.url('ServerlessHttpApi')}/mcp"
        texts, progressed = await call_the_asking_tools(url, "legacy", logging_callback=on_log)
    assert texts == ASKED
    assert progressed == [1, 2, 3]
    assert logged == ["counting"]


async def test_a_listen_acknowledges_and_closes_at_once_for_it_cannot_stream(stack: LocalAws) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        answered = await http.post(_url(stack), json=listen_body(), headers=LISTEN_HEADERS)
    assert answered.status_code == 200 and answered.headers["content-type"] == "text/event-stream"
    ack, close = [json.loads(event["data"]) for event in sse_fields(answered.text)]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert close["result"]["_meta"].items() >= ack["params"]["_meta"].items()  # the graceful close, same subscription
