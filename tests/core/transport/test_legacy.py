"""The handshake-era wire: initialize, sessions, version header rules and batches."""

from __future__ import annotations

import asyncio

import anyio
import httpx
import pytest

from core import McpServer
from tests.conftest import client_for
from tests.wire import McpHttp, validate_response

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_initialize_answers_the_requested_version_when_supported(mcp: McpHttp, version: str) -> None:
    session = await mcp.initialize(version)
    assert session.version == version
    tools = (await session.request("tools/list")).json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["add", "forecast", "divide"]


async def test_initialize_with_an_unknown_version_answers_the_latest_legacy_one(mcp: McpHttp) -> None:
    session = await mcp.initialize("2099-01-01")
    assert session.version == "2025-11-25"


async def test_initialize_advertises_only_implemented_capabilities(mcp: McpHttp) -> None:
    response = await mcp.post(INITIALIZE)
    assert response.json()["result"]["capabilities"] == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
        "logging": {},
    }


async def test_session_ids_are_visible_ascii_and_unique(mcp: McpHttp) -> None:
    ids = {(await mcp.post(INITIALIZE)).headers["mcp-session-id"] for _ in range(20)}
    assert len(ids) == 20
    assert all(len(value) >= 32 and all("\x21" <= char <= "\x7e" for char in value) for value in ids)


async def test_request_without_session_after_initialize_is_400(mcp: McpHttp) -> None:
    await mcp.initialize()
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = await mcp.post(body, {"mcp-protocol-version": "2025-11-25"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


async def test_unknown_session_is_404(mcp: McpHttp) -> None:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = await mcp.post(body, {"mcp-session-id": "no-such-session", "mcp-protocol-version": "2025-11-25"})
    assert response.status_code == 404


async def test_delete_ends_the_session_and_later_requests_get_404(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    deleted = await mcp.http.delete("/mcp", headers=session.headers)
    assert deleted.status_code == 200
    assert (await session.request("tools/list")).status_code == 404
    assert (await mcp.http.delete("/mcp", headers=session.headers)).status_code == 404


async def test_unsupported_version_header_is_400(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    response = await session.request("tools/list", headers={"mcp-protocol-version": "1999-01-01"})
    assert response.status_code == 400


async def test_missing_version_header_is_taken_as_2025_03_26(mcp: McpHttp) -> None:
    session = await mcp.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}},
    ]
    response = await mcp.post(batch, {"mcp-session-id": session.session_id})
    assert response.status_code == 200
    answers = response.json()
    assert [answer["id"] for answer in answers] == [10, 11]
    assert answers[1]["result"]["structuredContent"] == {"result": 2}
    for answer, method in zip(answers, ["ping", "tools/call"], strict=True):
        validate_response("2025-03-26", method, answer)


async def test_batches_are_refused_outside_2025_03_26(mcp: McpHttp) -> None:
    session = await mcp.initialize("2025-11-25")
    response = await mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], session.headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


async def test_ping_and_set_level_return_empty_results(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    assert (await session.request("ping")).json()["result"] == {}
    assert (await session.request("logging/setLevel", {"level": "debug"})).json()["result"] == {}
    bad = await session.request("logging/setLevel", {"level": "loud"})
    assert bad.json()["error"]["code"] == -32602


async def test_subscribe_and_unsubscribe_succeed(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    params = {"uri": "demo://notes/welcome"}
    assert (await session.request("resources/subscribe", params)).json()["result"] == {}
    assert (await session.request("resources/unsubscribe", params)).json()["result"] == {}


async def test_invalid_arguments_are_an_is_error_result_from_2025_11_25(mcp: McpHttp) -> None:
    session = await mcp.initialize("2025-11-25")
    result = (await session.request("tools/call", {"name": "add", "arguments": {"a": [], "b": 1}})).json()["result"]
    assert result["isError"] is True
    assert "a: Input should be a valid integer" in result["content"][0]["text"]


async def test_invalid_arguments_are_invalid_params_before_2025_11_25(mcp: McpHttp) -> None:
    session = await mcp.initialize("2025-06-18")
    response = await session.request("tools/call", {"name": "add", "arguments": {"a": [], "b": 1}})
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32602
    assert error["data"]["problems"][0].startswith("a: Input should be a valid integer")


async def test_a_tool_that_raises_reports_is_error_without_exception_text(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    result = (
        await session.request("tools/call", {"name": "divide", "arguments": {"numerator": 1, "denominator": 0}})
    ).json()["result"]
    assert result == {"content": [{"type": "text", "text": "Cannot divide by zero"}], "isError": True}


async def test_unknown_method_in_a_session_is_method_not_found(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    response = await session.request("server/discover")
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32601


async def test_unknown_resource_is_resource_not_found_with_the_uri(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    error = (await session.request("resources/read", {"uri": "demo://missing"})).json()["error"]
    assert error["code"] == -32002
    assert error["data"] == {"uri": "demo://missing"}


async def test_notifications_cancelled_stops_a_running_call_of_the_session() -> None:
    server = McpServer("cancel")
    started = asyncio.Event()

    @server.tool()
    async def wait_forever() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async with client_for(server) as http:
        mcp = McpHttp(http)
        session = await mcp.initialize()
        body = {"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {"name": "wait_forever"}}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                responses: list[httpx.Response] = []

                async def call() -> None:
                    responses.append(await mcp.post(body, session.headers))

                group.start_soon(call)
                await started.wait()
                cancelled = await session.notify("notifications/cancelled", {"requestId": "slow-1", "reason": "user"})
                assert cancelled.status_code == 202
        error = responses[0].json()["error"]
        assert responses[0].json()["id"] == "slow-1"
        assert error["code"] == -31504 and "cancelled by the client" in error["message"]
