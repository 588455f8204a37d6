"""STRATUS_AUTH_MODE=gateway: the principal comes from the API Gateway authorizer's claims in the event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from stratus import Context, McpServer, Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request


@pytest.fixture(scope="module")
def handler() -> Iterator[Any]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = McpServer("gateway-auth")

    @server.tool()
    def whoami(ctx: Context) -> str:
        user = ctx.user
        return f"{user.subject} {sorted(user.scopes)}" if user else "nobody"

    yield make_handler(server, Settings(auth_mode="gateway"))
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
