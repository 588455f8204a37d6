"""What the endpoint refuses before it reads a JSON-RPC message, and the malformed messages it rejects."""

from __future__ import annotations

import json

import httpx
import pytest

from stratus import Settings, build_app
from tests.fixtures.clients import client_for
from tests.fixtures.sample_server import server
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, McpHttp, stateless_meta, validate

pytestmark = pytest.mark.anyio

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": stateless_meta()}}
STATELESS_HEADERS = {"mcp-protocol-version": STATELESS, "mcp-method": "tools/list"}


def assert_error(response_json: object, code: int) -> None:
    validate(STATELESS, "JSONRPCErrorResponse", response_json)
    assert isinstance(response_json, dict)
    assert response_json["error"]["code"] == code


async def test_malformed_json_is_400_parse_error(mcp: McpHttp) -> None:
    response = await mcp.post(b'{"jsonrpc": "2.0", ', STATELESS_HEADERS)
    assert response.status_code == 400
    assert_error(response.json(), -32700)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (42, "a JSON scalar"),
        ({"id": 1, "method": "ping"}, "missing jsonrpc"),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "wrong jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, "non-string method"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, "null id"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "boolean id"),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, "positional params"),
    ],
)
async def test_invalid_messages_are_400_invalid_request(mcp: McpHttp, body: object, why: str) -> None:
    response = await mcp.post(body, {"mcp-protocol-version": "2025-11-25"})
    assert response.status_code == 400, why
    assert_error(response.json(), -32600)


@pytest.mark.parametrize("body", [{"method": "tools/list"}, {"method": "tools/call", "params": {"name": "add"}}, {}])
async def test_a_rest_body_without_session_id_gets_a_rest_answer(mcp: McpHttp, body: object) -> None:
    response = await mcp.post(body)
    assert response.status_code == 400
    assert response.json() == {
        "sessionId": None,
        "error": {"code": -32600, "message": "Bad Request: sessionId is required (open a session with POST /session)"},
    }


async def test_an_array_outside_2025_03_26_is_refused(mcp: McpHttp) -> None:
    response = await mcp.post([TOOLS_LIST], {"mcp-protocol-version": "2025-06-18"})
    assert response.status_code == 400
    assert_error(response.json(), -32600)


@pytest.mark.parametrize("accept", ["text/html", "text/event-stream"])
async def test_wrong_accept_is_406(mcp: McpHttp, accept: str) -> None:
    response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "accept": accept})
    assert response.status_code == 406


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"]
)
async def test_wrong_content_type_is_415(mcp: McpHttp, content_type: str) -> None:
    response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "content-type": content_type})
    assert response.status_code == 415


async def test_json_with_utf8_charset_is_accepted(mcp: McpHttp) -> None:
    response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200


async def test_body_over_the_limit_is_413() -> None:
    async with client_for(server, Settings(max_body_bytes=1024)) as http:
        body = {**TOOLS_LIST, "params": {"_meta": stateless_meta(), "padding": "x" * 2048}}
        response = await McpHttp(http).post(body, STATELESS_HEADERS)
    assert response.status_code == 413


async def test_bad_origin_is_403(mcp: McpHttp) -> None:
    response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "origin": "https://evil.example.com"})
    assert response.status_code == 403
    assert_error(response.json(), -32600)


async def test_own_and_localhost_origins_are_allowed(mcp: McpHttp) -> None:
    for origin in ("http://localhost", "http://127.0.0.1:3000"):
        response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "origin": origin})
        assert response.status_code == 200, origin


async def test_disallowed_host_is_421(mcp: McpHttp) -> None:
    response = await mcp.post(TOOLS_LIST, {**STATELESS_HEADERS, "host": "evil.example.com"})
    assert response.status_code == 421


async def test_configured_hosts_and_origins_are_allowed() -> None:
    settings = Settings(allowed_hosts=("mcp.example.com",), allowed_origins=("https://app.example.com",))
    async with client_for(server, settings) as http:
        headers = {**STATELESS_HEADERS, "host": "mcp.example.com", "origin": "https://app.example.com"}
        response = await McpHttp(http).post(TOOLS_LIST, headers)
    assert response.status_code == 200


async def test_error_bodies_are_compact_json(mcp: McpHttp) -> None:
    response = await mcp.post(b"[", STATELESS_HEADERS)
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content) == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error: the body is not valid JSON"},
    }


async def test_other_paths_are_404_and_a_trailing_slash_reaches_the_endpoint(mcp: McpHttp) -> None:
    assert (await mcp.http.post("/elsewhere", json={})).status_code == 404
    response = await mcp.http.post(
        "/mcp/", json=TOOLS_LIST, headers={**STATELESS_HEADERS, "accept": "application/json"}
    )
    assert response.status_code == 200


ATTACKER = "rebound.attacker.example"


def rebinding(host: str, context: str) -> dict[str, str]:
    """A rebound browser's request: the attacker's Host and Origin, plus a request context it wrote itself."""
    return {**BASE_HEADERS, "host": host, "origin": f"http://{host}", "x-amzn-request-context": context}


@pytest.mark.uvicorn
async def test_a_client_sent_request_context_does_not_open_the_host_check_of_a_plain_server() -> None:
    """`stratus serve`: nothing in front sets `x-amzn-request-context`, so a client's own is ignored."""
    attack = rebinding(ATTACKER, json.dumps({"domainName": ATTACKER}))
    with uvicorn_serving(build_app(server, Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            session = await http.post("/session", headers=attack)
            call = await http.post("/mcp", json=TOOLS_LIST, headers={**attack, **STATELESS_HEADERS})
    for refused in (session, call):
        assert refused.status_code == 421
        assert "access-control-allow-origin" not in refused.headers
        assert "mcp-session-id" not in refused.headers and "sessionId" not in refused.text


@pytest.mark.uvicorn
async def test_behind_the_web_adapter_the_domain_of_its_request_context_is_served() -> None:
    domain = "abc123.lambda-url.us-east-1.on.aws"
    forwarded = rebinding(domain, json.dumps({"domainName": domain}))
    settings = Settings(trust_request_context_header=True)
    with uvicorn_serving(build_app(server, settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            served = await http.post("/mcp", json=TOOLS_LIST, headers={**forwarded, **STATELESS_HEADERS})
            other = await http.post(
                "/mcp", json=TOOLS_LIST, headers={**forwarded, **STATELESS_HEADERS, "host": ATTACKER}
            )
    assert served.status_code == 200
    assert served.headers["access-control-allow-origin"] == f"http://{domain}"
    assert other.status_code == 421


@pytest.mark.uvicorn
@pytest.mark.parametrize("context", ["[" * 50_000, '{"domainName": ' + "[" * 50_000, "not json", '"a string"'])
async def test_a_request_context_that_does_not_parse_counts_as_absent(context: str) -> None:
    """Even where the header is trusted, one nested 50,000 deep (or not JSON at all) is no domain, and no 500."""
    settings = Settings(trust_request_context_header=True)
    with uvicorn_serving(build_app(server, settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            local = {**BASE_HEADERS, **STATELESS_HEADERS, "x-amzn-request-context": context}
            served = await http.post("/mcp", json=TOOLS_LIST, headers=local)
            refused = await http.post("/mcp", json=TOOLS_LIST, headers={**local, "host": ATTACKER})
    assert served.status_code == 200
    assert refused.status_code == 421
