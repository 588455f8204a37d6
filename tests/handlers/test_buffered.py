"""The buffered Lambda handler, driven in-process with recorded events of every source."""

from __future__ import annotations

import asyncio
import importlib
import json
from typing import Any

import pytest

from stratus import Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.sample_server import server
from tests.fixtures.wire import STATELESS, initialize_message, validate_response

EVENT_TYPES = ["http_api_v2", "function_url", "rest_api_v1", "alb"]


@pytest.fixture(scope="module")
def handler(container_loop: asyncio.AbstractEventLoop) -> Any:
    return make_handler(server, Settings(allowed_hosts=("mcp.example.com",)))


def invoke(handler: Any, kind: str, body: dict[str, Any], headers: dict[str, str], **options: Any) -> dict[str, Any]:
    response: dict[str, Any] = handler(event(kind, body, headers, **options), LambdaContext())
    return response


def _headers(response: dict[str, Any]) -> dict[str, str]:
    merged = {key.lower(): value for key, value in (response.get("headers") or {}).items()}
    for key, values in (response.get("multiValueHeaders") or {}).items():
        merged[key.lower()] = values[0]
    return merged


@pytest.mark.parametrize("kind", EVENT_TYPES)
@pytest.mark.parametrize("base64_body", [False, True])
def test_stateless_discover_list_and_call_work_twice_on_one_warm_handler(
    handler: Any, kind: str, base64_body: bool
) -> None:
    for _ in range(2):
        for method, params in [
            ("server/discover", {}),
            ("tools/list", {}),
            ("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}}),
        ]:
            body, headers = stateless_request(method, params)
            response = invoke(handler, kind, body, headers, base64_body=base64_body)
            assert response["statusCode"] == 200, (kind, method, response)
            assert _headers(response)["content-type"] == "application/json"
            payload = json.loads(response["body"])
            validate_response(STATELESS, method, payload)
        assert payload["result"]["structuredContent"] == {"result": 42}


@pytest.mark.parametrize("kind", EVENT_TYPES)
def test_handshake_initialize_then_calls_in_the_session_work_twice(handler: Any, kind: str) -> None:
    for _ in range(2):
        response = invoke(handler, kind, initialize_message(), {})
        assert response["statusCode"] == 200
        validate_response("2025-11-25", "initialize", json.loads(response["body"]))
        session = {"mcp-session-id": _headers(response)["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        initialized = invoke(handler, kind, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert initialized["statusCode"] == 202
        for method, params in [("tools/list", {}), ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})]:
            response = invoke(handler, kind, {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}, session)
            assert response["statusCode"] == 200
            validate_response("2025-11-25", method, json.loads(response["body"]))
        assert json.loads(response["body"])["result"]["structuredContent"] == {"result": 3}


def test_null_headers_get_a_clean_415_not_a_crash(handler: Any) -> None:
    for kind in ("rest_api_v1", "http_api_v2"):
        recorded = event(kind, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {})
        recorded["headers"] = None
        if "multiValueHeaders" in recorded:
            recorded["multiValueHeaders"] = None
        response = handler(recorded, LambdaContext())
        assert response["statusCode"] == 415, kind
        assert json.loads(response["body"])["error"]["code"] == -32600


def test_a_foreign_host_on_an_api_gateway_event_is_refused(handler: Any) -> None:
    body, headers = stateless_request("tools/list", {})
    response = invoke(handler, "http_api_v2", body, {**headers, "host": "evil.example.com"})
    assert response["statusCode"] == 421


def test_the_module_handler_serves_the_app_named_by_stratus_app(
    monkeypatch: pytest.MonkeyPatch, container_loop: asyncio.AbstractEventLoop
) -> None:
    monkeypatch.setenv("STRATUS_APP", "tests.fixtures.slow_app:slow")
    module = importlib.import_module("stratus.handlers.buffered")
    module = importlib.reload(module)
    body, headers = stateless_request("tools/list", {})
    response = module.handler(event("http_api_v2", body, headers), LambdaContext())
    tools = json.loads(response["body"])["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["sleep"]


def test_one_redis_client_serves_every_warm_invocation_on_the_container_loop(
    container_loop: asyncio.AbstractEventLoop,
) -> None:
    redis_handler = make_handler(
        server, Settings(store="redis://127.0.0.1:6379/0", secret_key=SECRET_KEY, store_prefix="handler-test")
    )
    opened = invoke(redis_handler, "http_api_v2", initialize_message(), {})
    session = {"mcp-session-id": _headers(opened)["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}}
    for _ in range(3):  # each invocation reuses the pooled connection made on the first
        response = invoke(redis_handler, "http_api_v2", call, session)
        assert json.loads(response["body"])["result"]["structuredContent"] == {"result": 2}
    redis_handler.close()


@pytest.mark.parametrize(
    "payload",
    [{"source": "aws.events", "detail": {}}, {"version": "2.0", "rawPath": "/mcp"}, ["not", "an", "object"]],
)
def test_an_event_that_is_no_http_request_is_400_naming_a_reference_not_an_invocation_error(
    handler: Any, payload: Any, caplog: pytest.LogCaptureFixture
) -> None:
    response = handler(payload, LambdaContext())
    assert response["statusCode"] == 400
    message = json.loads(response["body"])["error"]
    assert message.startswith("Bad Request: not an HTTP event this function can serve (reference ")
    assert "aws.events" not in caplog.text and "rawPath" not in caplog.text  # the event itself is never logged
