"""What a tool reads of its environment: the Lambda event and context, the HTTP headers, the API Gateway
authorizer's claims (from the event, or from the Web Adapter's `x-amzn-request-context` header when trusted);
and none of it reaches the logs, even when the tool logs its whole context."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.handlers.adapter import make_handler
from stratus.observability import CorrelationFilter, JsonFormatter
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.wire import BASE_HEADERS, McpHttp

TOKEN = "Bearer eyJ-secret-token-never-logged"
CLAIM = "claim-value-never-logged"
server = McpServer("environment")
tool_log = logging.getLogger("tests.tool")


@server.tool()
async def environment(ctx: Context) -> dict[str, Any]:
    """Reports what it can read of its environment, and logs its context the careless way."""
    tool_log.info("serving %r with %s", ctx, ctx.request)
    await ctx.info("context read", request=repr(ctx.request))
    event = ctx.lambda_event
    return {
        "claims": dict(ctx.authorizer_claims) if ctx.authorizer_claims is not None else None,
        "tenant": ctx.headers.get("x-tenant"),
        "authorization": ctx.headers.get("authorization"),
        "event_request_id": event["requestContext"]["requestId"] if event is not None else None,
        "function": getattr(ctx.lambda_context, "function_name", None),
    }


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """Every record of the process at DEBUG, as the deployed stack writes them (JSON, correlation fields)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("environment"))
    handler.addFilter(CorrelationFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def assert_nothing_secret_in(logs: io.StringIO) -> None:
    written = logs.getvalue()
    assert "context read" in written  # the tool's own log line is there ...
    assert "secret-token" not in written and CLAIM not in written and "x-tenant" not in written  # ... its inputs not


def test_a_tool_reads_the_lambda_event_context_headers_and_authorizer_claims(logs: io.StringIO) -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        handler = make_handler(server, Settings())
        body, headers = stateless_request("tools/call", {"name": "environment", "arguments": {}})
        recorded = event("http_api_v2", body, {**headers, "authorization": TOKEN, "x-tenant": "acme"})
        recorded["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": "ana", "tenant": CLAIM}}}
        response = handler(recorded, LambdaContext())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert response["statusCode"] == 200
    assert json.loads(response["body"])["result"]["structuredContent"] == {
        "claims": {"sub": "ana", "tenant": CLAIM},
        "tenant": "acme",
        "authorization": TOKEN,
        "event_request_id": recorded["requestContext"]["requestId"],
        "function": "stratus-mcp",
    }
    assert_nothing_secret_in(logs)


@pytest.mark.anyio
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
async def test_under_uvicorn_claims_come_from_the_adapters_header_only_when_trusted(
    logs: io.StringIO, trusted: bool
) -> None:
    context = {"domainName": "localhost", "authorizer": {"lambda": {"sub": "bo", "tenant": CLAIM}}}
    app = build_app(server, Settings(trust_request_context_header=trusted))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        headers = {
            **BASE_HEADERS,
            "authorization": TOKEN,
            "x-tenant": "acme",
            "x-amzn-request-context": json.dumps(context),
        }
        response = await McpHttp(http).stateless(
            "tools/call", {"name": "environment", "arguments": {}}, headers=headers
        )
    await app.shutdown()
    assert response.json()["result"]["structuredContent"] == {
        "claims": {"sub": "bo", "tenant": CLAIM} if trusted else None,
        "tenant": "acme",
        "authorization": TOKEN,
        "event_request_id": None,
        "function": None,
    }
    assert_nothing_secret_in(logs)
