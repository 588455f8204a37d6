"""The server's tools, resource and prompt, called as Lambda calls them: an API Gateway (HTTP API) event into the
buffered handler template.yaml deploys, with the state in DynamoDB (played by moto)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from app import server
from stratus import Settings
from stratus.handlers.adapter import make_handler
from stratus.stores.dynamodb.schema import table_definition

TABLE = "my-server-state"
PROTOCOL = "2025-11-25"


class LambdaContext:
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    loop = asyncio.new_event_loop()  # one per Lambda container; the handler keeps using it
    asyncio.set_event_loop(loop)
    with mock_aws():
        boto3.client("dynamodb").create_table(**table_definition(TABLE))
        built = make_handler(server, Settings(store=f"dynamodb://{TABLE}", secret_key=secrets.token_hex(32)))
        yield built
        built.close()
    asyncio.set_event_loop(None)
    loop.close()


def http_api_event(body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) request to POST /mcp."""
    return {
        "version": "2.0",
        "routeKey": "ANY /mcp",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {
            "host": "abc123.execute-api.us-east-1.amazonaws.com",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7"},
            "requestId": "test-request",
            "routeKey": "ANY /mcp",
            "stage": "$default",
            "timeEpoch": 1767225600000,
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


class Session:
    """An MCP session opened through the handler; its state lives in the DynamoDB table."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        opened = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "tests", "version": "1"},
                },
            }
        )
        self.headers = {"mcp-session-id": opened["headers"]["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = self.handler(http_api_event(message, getattr(self, "headers", {})), LambdaContext())
        assert response["statusCode"] in (200, 202), response
        return response

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.post({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        body = response["body"]
        if response["headers"].get("content-type") == "text/event-stream":
            # The call sent something first (a log line, progress): the answer is the stream's last event.
            body = [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")][-1]
        answer = json.loads(body)
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result


def call_answering(handler: Any, name: str, arguments: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
    """A tools/call as a 2026-07-28 client makes it: a question the tool asks (`ctx.elicit(..., key=...)`) comes
    back as `input_required`, and the call is sent again with the answers, by key."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name}
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": meta}
    for _ in range(len(answers) + 1):  # one round per question, at most
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        response = handler(http_api_event(message, headers), LambdaContext())
        result: dict[str, Any] = json.loads(response["body"])["result"]
        if result.get("resultType") != "input_required":
            return result
        params = {**params, "inputResponses": {key: answers[key] for key in result["inputRequests"]}}
    raise AssertionError("the tool kept asking")


def test_count_words_answers_with_the_count(handler: Any) -> None:
    result = Session(handler).request("tools/call", {"name": "count_words", "arguments": {"text": "one two three"}})
    assert result["structuredContent"] == {"result": 3}
    assert not result.get("isError")


def test_an_empty_text_is_a_tool_error_the_model_sees(handler: Any) -> None:
    result = Session(handler).request("tools/call", {"name": "count_words", "arguments": {"text": "  "}})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "The text has no words to count"


def test_the_session_lives_in_dynamodb(handler: Any) -> None:
    Session(handler)
    assert boto3.client("dynamodb").scan(TableName=TABLE)["Count"] > 0


def test_the_style_guide_resource_and_the_summarize_prompt(handler: Any) -> None:
    session = Session(handler)
    resource = session.request("resources/read", {"uri": "notes://style-guide"})
    assert resource["contents"][0]["text"].startswith("# Style guide")
    prompt = session.request("prompts/get", {"name": "summarize", "arguments": {"text": "Lambda runs code."}})
    assert "Lambda runs code." in prompt["messages"][0]["content"]["text"]


def test_publish_note_asks_first_and_publishes_only_when_confirmed(handler: Any) -> None:
    confirmed = {"confirm": {"action": "accept", "content": {"publish": True}}}
    published = call_answering(handler, "publish_note", {"title": "Q3"}, confirmed)
    assert published["content"][0]["text"] == "Published 'Q3'"
    declined = call_answering(handler, "publish_note", {"title": "Q3"}, {"confirm": {"action": "decline"}})
    assert declined["content"][0]["text"] == "Not published"
