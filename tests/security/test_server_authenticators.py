"""A server's own authenticators (`McpServer(authenticators=[...])`, the API-key pattern of docs/writing-tools.md)
bind what the transport's would: they run for every request, so sessions, their streams and replies, tasks and the
per-principal quota belong to the principal they establish, and a task runs as the principal that started it."""

from __future__ import annotations

import hmac
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Principal, Settings, build_app
from stratus.errors import UnauthorizedError
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp, initialize_message

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

KEYS = {"key-ana": Principal("ana", scopes=frozenset({"orders:write"})), "key-bob": Principal("bob")}
ANA, BOB = {"x-api-key": "key-ana"}, {"x-api-key": "key-bob"}


async def api_key(ctx: Context) -> Principal | None:
    sent = ctx.headers.get("x-api-key", "")
    for key, principal in KEYS.items():
        if hmac.compare_digest(sent, key):
            return principal
    raise UnauthorizedError("Send a valid X-Api-Key header", challenge='ApiKey header="x-api-key"')


def orders() -> McpServer:
    server = McpServer("orders", authenticators=[api_key])

    @server.tool(scopes=["orders:write"])
    def place_order(item: str) -> str:
        return f"ordered {item}"

    @server.tool(task="optional")
    async def report(month: str) -> str:
        return f"report for {month}"

    return server


async def _session(mcp: McpHttp, key: dict[str, str]) -> dict[str, str]:
    opened = await mcp.post(initialize_message(), key)
    assert opened.status_code == 200, opened.text
    headers = {**key, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    assert (await mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)).status_code == 202
    return headers


def _call(method: str, params: dict[str, Any], request_id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def test_no_key_opens_no_session_and_so_holds_no_place() -> None:
    with uvicorn_serving(build_app(orders(), Settings(max_sessions=1))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            mcp = McpHttp(http)
            refused = await mcp.post(initialize_message())
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == 'ApiKey header="x-api-key"'
            assert "mcp-session-id" not in refused.headers
            assert (await http.post("/session", headers=BASE_HEADERS)).status_code == 401
            await _session(mcp, ANA)  # the one place was still free


async def test_a_session_belongs_to_the_key_that_opened_it() -> None:
    with uvicorn_serving(build_app(orders(), Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            mcp = McpHttp(http)
            ana = await _session(mcp, ANA)
            as_bob = {**ana, **BOB}
            listed = await mcp.post(_call("tools/list", {}), as_bob)
            assert listed.status_code == 404  # another principal's session is told it does not exist
            assert (await http.delete("/mcp", headers={**BASE_HEADERS, **as_bob})).status_code == 404
            assert (await http.delete("/mcp", headers={**BASE_HEADERS, **ana, "x-api-key": ""})).status_code == 401
            called = await mcp.post(_call("tools/call", {"name": "place_order", "arguments": {"item": "tea"}}), ana)
            assert called.json()["result"]["content"][0]["text"] == "ordered tea"

            rest = (await http.post("/session", headers={**BASE_HEADERS, **ANA})).json()["sessionId"]
            assert (await http.get(f"/events/{rest}", headers={**BASE_HEADERS, **BOB})).status_code == 404
            answer = {"id": "q1", "result": {"action": "accept"}}
            replied = await http.post(f"/session/{rest}/responses", json=answer, headers={**BASE_HEADERS, **BOB})
            assert replied.status_code == 404
            assert (await http.delete(f"/session/{rest}", headers={**BASE_HEADERS, **BOB})).status_code == 404
            assert (await http.delete(f"/session/{rest}", headers={**BASE_HEADERS, **ANA})).status_code == 200


async def test_a_task_belongs_to_the_key_that_started_it_and_runs_as_it() -> None:
    with uvicorn_serving(build_app(orders(), Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=40) as http:
            mcp = McpHttp(http)
            ana, bob = await _session(mcp, ANA), await _session(mcp, BOB)
            started = await mcp.post(
                _call("tools/call", {"name": "report", "arguments": {"month": "May"}, "task": {"ttl": 60000}}), ana
            )
            task_id = started.json()["result"]["task"]["taskId"]
            foreign = await mcp.post(_call("tasks/get", {"taskId": task_id}), bob)
            assert foreign.json()["error"]["code"] == -32602  # another principal's task does not exist for bob
            finished = await mcp.post(_call("tasks/result", {"taskId": task_id}), ana)
            result = finished.json()["result"]
            assert (result.get("isError"), result["content"][0]["text"]) == (None, "report for May")


async def test_one_key_holds_at_most_its_quota_of_sessions() -> None:
    with uvicorn_serving(build_app(orders(), Settings(max_sessions=10, max_sessions_per_principal=1))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            mcp = McpHttp(http)
            await _session(mcp, ANA)
            assert (await mcp.post(initialize_message(), ANA)).status_code == 503
            await _session(mcp, BOB)


async def test_a_refusal_before_the_body_is_read_still_echoes_the_requests_id() -> None:
    """JSON-RPC answers an error with the id of the request it refuses: an authenticator's 401 (raised before the
    body is read) carried `id: null` before; a body with no readable id still gets none."""
    with uvicorn_serving(build_app(orders(), Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            mcp = McpHttp(http)
            refused = await mcp.post(_call("tools/list", {}, request_id=41))
            assert refused.status_code == 401
            assert refused.json()["id"] == 41 and refused.json()["error"]["code"] == -31401
            unreadable = await http.post("/mcp", content=b"{not json", headers=BASE_HEADERS)
            assert unreadable.status_code == 401 and "id" not in unreadable.json()
