"""The buffered handler's payload limits: what a client gets for an answer Lambda could not return, and for a
request body past the app's limit."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest

from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.emulator_apps import probe
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.wire import initialize_message

EVENT_TYPES = ["http_api_v2", "function_url", "rest_api_v1"]
LIMIT = 6 * 1024 * 1024
"""Lambda's synchronous response payload: https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"""


@pytest.fixture(scope="module")
def handler(container_loop: asyncio.AbstractEventLoop) -> Any:
    return make_handler(probe, Settings(app="tests.fixtures.emulator_apps:probe", allowed_hosts=("mcp.example.com",)))


def _call(handler: Any, kind: str, size: int, fill: str = "x") -> dict[str, Any]:
    body, headers = stateless_request("tools/call", {"name": "blob", "arguments": {"size": size, "fill": fill}})
    answer: dict[str, Any] = handler(event(kind, body, headers), LambdaContext())
    return answer


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_a_result_past_lambdas_6_mb_is_a_json_rpc_error_naming_the_setting_and_the_streaming_endpoint(
    handler: Any, kind: str
) -> None:
    answer = _call(handler, kind, LIMIT)
    assert len(json.dumps(answer)) < 4096  # what Lambda returns is the small error, not the 6 MB result
    assert answer["statusCode"] == 200
    payload = json.loads(answer["body"])
    assert payload["id"] == 1
    assert payload["error"]["code"] == -32603
    assert "STRATUS_MAX_RESPONSE_BYTES" in payload["error"]["message"]
    assert "streaming" in payload["error"]["message"]
    assert payload["error"]["data"]["setting"] == "STRATUS_MAX_RESPONSE_BYTES"
    assert payload["error"]["data"]["limit"] == LIMIT
    assert payload["error"]["data"]["size"] > LIMIT


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_a_result_just_under_the_limit_is_answered_whole_within_lambdas_payload(handler: Any, kind: str) -> None:
    answer = _call(handler, kind, LIMIT - 4096)
    payload = json.loads(answer["body"])
    assert "result" in payload, payload.get("error")
    assert len(json.dumps(answer)) <= LIMIT


def test_escaping_counts_a_text_of_quotes_is_refused_at_a_quarter_of_the_size(handler: Any) -> None:
    # Each `"` of the text takes 2 bytes in the JSON body (backslash, quote) and 4 in Lambda's answer.
    answer = _call(handler, "http_api_v2", LIMIT // 4, fill='"')
    assert json.loads(answer["body"])["error"]["data"]["setting"] == "STRATUS_MAX_RESPONSE_BYTES"
    answer = _call(handler, "http_api_v2", LIMIT // 4 - 1024, fill='"')
    assert "result" in json.loads(answer["body"])
    assert len(json.dumps(answer)) <= LIMIT


def test_a_batch_past_the_limit_answers_each_request_with_the_error(handler: Any) -> None:
    opened = handler(event("http_api_v2", initialize_message("2025-03-26"), {}), LambdaContext())
    session = {"mcp-session-id": opened["headers"]["mcp-session-id"], "mcp-protocol-version": "2025-03-26"}
    params = {"name": "blob", "arguments": {"size": 3_900_000}}  # each under the batch's 4 MiB, both over 6 MB
    calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params} for n in (7, 8)]
    answer = handler(event("http_api_v2", calls, session), LambdaContext())
    payload = json.loads(answer["body"])
    assert [(item["id"], item["error"]["code"]) for item in payload] == [(7, -32603), (8, -32603)]


def test_the_limit_is_a_setting_and_zero_turns_it_off(container_loop: asyncio.AbstractEventLoop) -> None:
    settings = Settings(app="tests.fixtures.emulator_apps:probe", allowed_hosts=("mcp.example.com",))
    small = make_handler(probe, replace(settings, max_response_bytes=50_000))
    payload = json.loads(_call(small, "function_url", 60_000)["body"])
    assert payload["error"]["data"]["limit"] == 50_000
    unbounded = make_handler(probe, replace(settings, max_response_bytes=0))
    assert "result" in json.loads(_call(unbounded, "function_url", 60_000)["body"])
    assert Settings.from_env({"STRATUS_MAX_RESPONSE_BYTES": "0"}).max_response_bytes == 0


def test_a_body_past_the_apps_limit_is_413_with_a_json_rpc_error_naming_the_setting(handler: Any) -> None:
    body, headers = stateless_request("tools/call", {"name": "blob", "arguments": {"size": 1, "fill": "y" * 5_000_000}})
    answer = handler(event("http_api_v2", body, headers), LambdaContext())
    assert answer["statusCode"] == 413
    error = json.loads(answer["body"])["error"]
    assert error["code"] == -32600
    assert "STRATUS_MAX_BODY_BYTES" in error["message"]


def test_anonymous_task_quotas_count_each_events_source_ip_never_its_forwarded_for(
    container_loop: asyncio.AbstractEventLoop,
) -> None:
    """Through the HTTP API the caller's address is the event's `requestContext.http.sourceIp`, which API Gateway
    writes; `X-Forwarded-For`, whose first entries are the client's own words, moves no one to another's quota."""
    server = McpServer("held", "1.0.0")
    release = asyncio.Event()

    @server.tool(task="optional")
    async def held() -> str:
        """Runs until the test releases it."""
        await release.wait()
        return "done"

    handler = make_handler(server, Settings(max_tasks_per_principal=1))

    def invoke(body: dict[str, Any], headers: dict[str, str], source_ip: str) -> dict[str, Any]:
        sent = event("http_api_v2", body, headers)
        sent["requestContext"]["http"]["sourceIp"] = source_ip
        answer: dict[str, Any] = handler(sent, LambdaContext())
        return answer

    opened = invoke(initialize_message("2025-11-25", 1), {}, "198.51.100.1")
    session = {"mcp-session-id": opened["headers"]["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "held", "arguments": {}, "task": {}}}
    tasks = [json.loads(invoke(call, session, "198.51.100.1")["body"])["result"]["task"]["taskId"]]
    forged = invoke(call, {**session, "x-forwarded-for": "198.51.100.9"}, "198.51.100.1")
    assert forged["statusCode"] == 429
    assert json.loads(forged["body"])["error"]["data"]["setting"] == "STRATUS_MAX_TASKS_PER_PRINCIPAL"
    # Another caller's place is its own.
    tasks.append(json.loads(invoke(call, session, "198.51.100.2")["body"])["result"]["task"]["taskId"])

    release.set()
    for task_id in tasks:  # each answered once its run ends, on this container's loop
        result = {"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id}}
        answered = json.loads(invoke(result, session, "198.51.100.1")["body"])
        assert answered["result"]["content"] == [{"type": "text", "text": "done"}]
