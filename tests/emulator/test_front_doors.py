"""The emulated front doors answer as AWS's do: their routes, stages and own refusals, and the requests they pass
on reaching the real handler (ported from the single-door emulator's tests)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import Client

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
BUFFERED = "stratus-local-BufferedFunction"
MISSING_TOKEN = {"message": "Missing Authentication Token"}
JSON_BODY = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE) as aws:
        yield aws


async def test_unrouted_paths_and_methods_get_api_gateways_own_answers(stack: LocalAws) -> None:
    http_api, rest_api = stack.url("ServerlessHttpApi"), stack.url("StreamingRestApi").removesuffix("/v1")
    invoked = len(stack.pools[BUFFERED].served)
    async with httpx.AsyncClient(timeout=20) as http:
        for method, path in [
            ("GET", "/nope"),
            ("DELETE", "/session/a/b"),
            ("POST", "/session/a/b/responses"),
            ("GET", "/events/abc/def"),
            ("OPTIONS", "/nope"),
            ("GET", "/"),
        ]:
            answer = await http.request(method, f"{http_api}{path}")
            assert (answer.status_code, answer.json()) == (404, {"message": "Not Found"}), (method, path)
        assert len(stack.pools[BUFFERED].served) == invoked  # API Gateway answered alone
        for path in ["/", "/v1", "/v1/", "/v2/mcp", "/mcp"]:
            answer = await http.post(f"{rest_api}{path}", json={})
            assert (answer.status_code, answer.json()) == (403, MISSING_TOKEN), path
        assert (await http.get(f"{rest_api}/v1/health/live")).json() == {"status": "ok"}
        # OpenApiVersion keeps SAM's deployment from creating a stage named Stage.
        answer = await http.get(f"{rest_api}/Stage/health/live")
        assert (answer.status_code, answer.json()) == (403, MISSING_TOKEN)
        # A Function URL has no routes: the app answers every path.
        assert (await http.get(f"{stack.url('StreamingFunctionUrl')}/nope")).status_code == 404


async def test_the_rest_api_serves_mcp_under_its_stage_only(stack: LocalAws) -> None:
    rest_api = stack.url("StreamingRestApi")
    with anyio.fail_after(20):
        async with httpx.AsyncClient(timeout=20) as http:
            assert await initialize(http, f"{rest_api}/mcp")
            no_stage = await http.post(f"{rest_api.removesuffix('/v1')}/mcp", json={}, headers=HEADERS)
    assert (no_stage.status_code, no_stage.json()) == (403, MISSING_TOKEN)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_lists_and_calls_tools_through_the_http_api(stack: LocalAws, mode: str) -> None:
    with anyio.fail_after(30):
        async with Client(f"{stack.url('ServerlessHttpApi')}/mcp", mode=mode) as client:
            tools = await client.list_tools()
            assert "add" in [tool.name for tool in tools.tools]
            result = await client.call_tool("add", {"a": 2, "b": 5})
            assert result.structured_content == {"result": 7}


PREFLIGHT = {"origin": "http://localhost:5173", "access-control-request-method": "POST"}


async def test_a_preflight_to_every_path_the_app_serves_reaches_it_through_the_http_api(stack: LocalAws) -> None:
    """No CorsConfiguration: API Gateway routes OPTIONS like any method, so the app answers every preflight
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html)."""
    async with httpx.AsyncClient(base_url=stack.url("ServerlessHttpApi"), timeout=20) as http:
        for path in ["/mcp", "/session", "/session/abc", "/session/abc/responses", "/events/abc"]:
            invoked = len(stack.pools[BUFFERED].served)
            answer = await http.options(path, headers={**PREFLIGHT, "access-control-request-headers": "mcp-session-id"})
            assert answer.status_code == 204, (path, answer.status_code, answer.text)
            assert answer.headers["access-control-allow-origin"] == PREFLIGHT["origin"], path
            assert "POST" in answer.headers["access-control-allow-methods"], path
            assert answer.headers["access-control-allow-headers"] == "mcp-session-id", path
            assert len(stack.pools[BUFFERED].served) >= invoked + 1, path  # the app answered, not API Gateway
        for path in [
            "/health",
            "/health/live",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ]:
            invoked = len(stack.pools[BUFFERED].served)
            answer = await http.options(path, headers=PREFLIGHT)
            assert answer.content != b'{"message":"Not Found"}', path  # not API Gateway's own 404
            # At least once: the stack is the module's, and an earlier test's client may still be closing its session.
            assert len(stack.pools[BUFFERED].served) >= invoked + 1, path


async def test_session_responses_reach_the_app_through_the_http_api(stack: LocalAws) -> None:
    async with httpx.AsyncClient(base_url=stack.url("ServerlessHttpApi"), timeout=20) as http:
        created = await http.post("/session", headers=JSON_BODY)
        session_id = created.json()["sessionId"]
        invoked = len(stack.pools[BUFFERED].served)
        answer = await http.post(f"/session/{session_id}/responses", json={"responses": []}, headers=JSON_BODY)
        assert len(stack.pools[BUFFERED].served) >= invoked + 1  # at least: an earlier client may still be closing
        assert answer.content != b'{"message":"Not Found"}', answer.text


async def test_the_session_rest_api_is_served_through_the_http_api(stack: LocalAws) -> None:
    async with httpx.AsyncClient(base_url=stack.url("ServerlessHttpApi"), timeout=20) as http:
        created = await http.post("/session", headers=JSON_BODY)
        assert created.status_code == 200
        session_id = created.json()["sessionId"]
        call = {
            "sessionId": session_id,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        added = await http.post("/mcp", json=call, headers=JSON_BODY)
        assert added.status_code == 200 and added.json()["result"]["structuredContent"] == {"result": 3}
        events = await http.get(f"/events/{session_id}")
        assert events.status_code == 200  # a poll: sent whole once it ends
        assert events.headers["content-type"] == "text/event-stream"
        assert (await http.delete(f"/session/{session_id}")).status_code == 200
        assert (await http.delete(f"/session/{session_id}")).status_code == 404


async def test_the_api_serves_the_address_it_listens_on_not_the_host_a_client_names(stack: LocalAws) -> None:
    """`requestContext.domainName` is the API's own; a rebound page (the attacker's Host and Origin) is refused."""
    attacker = "rebound.attacker.example"
    base = stack.url("ServerlessHttpApi")
    async with httpx.AsyncClient(base_url=base, timeout=20) as http:
        rebound = await http.post("/session", headers={**JSON_BODY, "host": attacker, "origin": f"http://{attacker}"})
        assert rebound.status_code == 421
        assert "access-control-allow-origin" not in rebound.headers
        own = await http.post("/session", headers={**JSON_BODY, "host": base.removeprefix("http://")})
        assert own.status_code == 200


@pytest.mark.parametrize("door", ["ServerlessHttpApi", "StreamingFunctionUrl"])
async def test_header_values_reach_the_function_without_their_surrounding_whitespace(
    stack: LocalAws, door: str
) -> None:
    """AWS parses HTTP as RFC 9110 section 5.5 says: a field value's leading and trailing whitespace is not part of
    it. httpx would strip it itself, so the request is written by hand."""
    host, port = stack.url(door).removeprefix("http://").split(":")
    params = '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}'
    body = ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":' + params + "}").encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type:   application/json  \r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    chunks: list[bytes] = []
    with anyio.fail_after(20):  # bounds the reads: the server closes the connection after its answer
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(head.encode() + body)
            try:
                while True:
                    chunks.append(await stream.receive())
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    answer = b"".join(chunks)
    assert answer.split(b"\r\n", 1)[0] == b"HTTP/1.1 200 OK", answer[:300]


@pytest.mark.parametrize("door", ["StreamingFunctionUrl", "StreamingRestApi", "ServerlessHttpApi"])
async def test_every_door_dates_its_answer_once(stack: LocalAws, door: str) -> None:
    """The front door dates the answer; the app's own `date` (uvicorn's, behind the Web Adapter) is not passed on
    beside it, as two `date` headers were at the Function URL."""
    with anyio.fail_after(30):
        async with httpx.AsyncClient(timeout=20) as http:
            answer = await http.post(
                f"{stack.url(door)}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={**HEADERS, "mcp-protocol-version": "2025-11-25"},
            )
    assert answer.status_code in (200, 400), answer.text
    assert len(answer.headers.get_list("date")) == 1, answer.headers
