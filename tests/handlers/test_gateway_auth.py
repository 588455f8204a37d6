"""STRATUS_AUTH_MODE=gateway: the principal comes from the API Gateway authorizer's claims in the request context,
in the Lambda event (the buffered shape) or in the Web Adapter's `x-amzn-request-context` header (the streaming
shape)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.handlers.adapter import make_handler
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS


def _server() -> McpServer:
    server = McpServer("gateway-auth")

    @server.tool()
    def whoami(ctx: Context) -> str:
        user = ctx.user
        return f"{user.subject} {sorted(user.scopes)}" if user else "nobody"

    return server


@pytest.fixture(scope="module")
def handler() -> Iterator[Any]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield make_handler(_server(), Settings(auth_mode="gateway"))
    asyncio.set_event_loop(None)
    loop.close()


def call_with_authorizer(handler: Any, kind: str, authorizer: dict[str, Any] | None) -> dict[str, Any]:
    body, headers = stateless_request("tools/call", {"name": "whoami", "arguments": {}})
    recorded = event(kind, body, headers)
    if authorizer is not None:
        recorded["requestContext"]["authorizer"] = authorizer
    response: dict[str, Any] = handler(recorded, LambdaContext())
    return response


def test_http_api_jwt_authorizer_claims_become_the_user(handler: Any) -> None:
    authorizer = {"jwt": {"claims": {"sub": "ana", "scope": "[tools:read reports:write]"}, "scopes": None}}
    response = call_with_authorizer(handler, "http_api_v2", authorizer)
    assert response["statusCode"] == 200
    text = json.loads(response["body"])["result"]["content"][0]["text"]
    assert text == "ana ['reports:write', 'tools:read']"


def test_rest_api_cognito_claims_become_the_user(handler: Any) -> None:
    response = call_with_authorizer(handler, "rest_api_v1", {"claims": {"sub": "bo", "scope": "tools:read"}})
    assert json.loads(response["body"])["result"]["content"][0]["text"] == "bo ['tools:read']"


def test_an_event_without_authorizer_claims_is_401(handler: Any) -> None:
    response = call_with_authorizer(handler, "http_api_v2", None)
    assert response["statusCode"] == 401
    assert json.loads(response["body"])["error"]["code"] == -31401


REST_AUTHORIZER: dict[str, Any] = {"claims": {"sub": "bo", "scope": "tools:read"}}
REST_CONTEXT = {
    "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
    "stage": "v1",
    "authorizer": REST_AUTHORIZER,
}


def _whoami_text(response: httpx.Response) -> str:
    text: str = response.json()["result"]["content"][0]["text"]
    return text


@pytest.mark.uvicorn
def test_behind_the_web_adapter_the_claims_of_its_request_context_header_become_the_user() -> None:
    """The streaming shape reads the authorizer the same way as the buffered shape reads the event's."""
    body, headers = stateless_request("tools/call", {"name": "whoami", "arguments": {}})
    forwarded = {**BASE_HEADERS, **headers, "x-amzn-request-context": json.dumps(REST_CONTEXT)}
    settings = Settings(auth_mode="gateway", trust_request_context_header=True)
    with uvicorn_serving(build_app(_server(), settings)) as url:
        answered = httpx.post(f"{url}/mcp", json=body, headers=forwarded, timeout=5)
        without = httpx.post(f"{url}/mcp", json=body, headers={**BASE_HEADERS, **headers}, timeout=5)
    assert answered.status_code == 200
    assert _whoami_text(answered) == "bo ['tools:read']"
    assert without.status_code == 401 and without.json()["error"]["code"] == -31401


def test_the_same_request_context_in_the_buffered_event_becomes_the_same_user(handler: Any) -> None:
    response = call_with_authorizer(handler, "rest_api_v1", REST_AUTHORIZER)
    assert json.loads(response["body"])["result"]["content"][0]["text"] == "bo ['tools:read']"


@pytest.mark.uvicorn
def test_a_request_context_header_is_ignored_where_no_web_adapter_is_declared() -> None:
    """On a plain server the client writes that header itself: its claims authenticate no one."""
    body, headers = stateless_request("tools/call", {"name": "whoami", "arguments": {}})
    forged = {**BASE_HEADERS, **headers, "x-amzn-request-context": json.dumps(REST_CONTEXT)}
    with uvicorn_serving(build_app(_server(), Settings(auth_mode="gateway"))) as url:
        refused = httpx.post(f"{url}/mcp", json=body, headers=forged, timeout=5)
    assert refused.status_code == 401
