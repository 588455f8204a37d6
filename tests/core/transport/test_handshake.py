"""The handshake-era wire: initialize, sessions, version header rules and batches."""

from __future__ import annotations

import asyncio

import anyio
import httpx
import pytest

from stratus import McpServer, Settings
from tests.fixtures.clients import client_for
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.wire import McpHttp, validate_response

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


async def test_initialize_with_an_unknown_version_answers_the_latest_handshake_one(mcp: McpHttp) -> None:
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


@pytest.mark.parametrize("header", [None, "2025-03-26"])
async def test_a_batch_follows_the_sessions_version_not_the_header(mcp: McpHttp, header: str | None) -> None:
    # Leaving the header out (or naming the batch version) must not let a 2025-06-18 session send batches.
    session = await mcp.initialize("2025-06-18")
    headers = {"mcp-session-id": session.session_id} | ({"mcp-protocol-version": header} if header else {})
    response = await mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert "2025-03-26" in response.json()["error"]["message"]


async def test_a_batch_is_refused_when_the_header_names_another_version_than_the_session(mcp: McpHttp) -> None:
    session = await mcp.initialize("2025-03-26")
    headers = {"mcp-session-id": session.session_id, "mcp-protocol-version": "2025-06-18"}
    response = await mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


def _pings(count: int) -> list[dict[str, object]]:
    return [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(count)]


async def test_a_batch_longer_than_the_limit_is_refused_naming_the_setting() -> None:
    async with client_for(sample_server, Settings(max_batch_length=3)) as http:
        mcp = McpHttp(http)
        session = await mcp.initialize("2025-03-26")
        refused = await mcp.post(_pings(4), {"mcp-session-id": session.session_id})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32600
        assert "STRATUS_MAX_BATCH_LENGTH" in refused.json()["error"]["message"]
        served = await mcp.post(_pings(3), {"mcp-session-id": session.session_id})
        assert [answer["id"] for answer in served.json()] == [0, 1, 2]


def test_the_batch_length_limit_defaults_to_100() -> None:
    assert Settings.from_env({}).max_batch_length == 100
    assert Settings.from_env({"STRATUS_MAX_BATCH_LENGTH": "7"}).max_batch_length == 7


async def test_requests_after_the_batch_response_limit_are_not_run_and_answered_with_an_error() -> None:
    server = McpServer("batch-size")
    ran: list[str] = []

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        ran.append(text)
        return text

    def call(n: int) -> dict[str, object]:
        return {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"t{n}"}},
        }

    async with client_for(server, Settings(max_batch_response_bytes=50)) as http:
        mcp = McpHttp(http)
        session = await mcp.initialize("2025-03-26")
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await mcp.post([call(1), call(2), notification, call(3)], {"mcp-session-id": session.session_id})
        assert response.status_code == 200
        answers = response.json()
        assert [answer["id"] for answer in answers] == [1, 2, 3]
        # The first answer alone reaches 50 bytes: what follows is not run, and says which setting to raise.
        assert answers[0]["result"]["content"] == [{"type": "text", "text": "t1"}]
        assert ran == ["t1"]
        for answer in answers[1:]:
            assert answer["error"]["code"] == -32600
            assert "STRATUS_MAX_BATCH_RESPONSE_BYTES" in answer["error"]["message"]
        again = await mcp.post([call(2)], {"mcp-session-id": session.session_id})
        assert again.json()[0]["result"]["content"] == [{"type": "text", "text": "t2"}]


async def test_ping_and_set_level_return_empty_results(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    assert (await session.request("ping")).json()["result"] == {}
    assert (await session.request("logging/setLevel", {"level": "debug"})).json()["result"] == {}
    bad = await session.request("logging/setLevel", {"level": "loud"})
    assert bad.json()["error"]["code"] == -32602


async def test_subscribe_and_unsubscribe_succeed(mcp: McpHttp) -> None:
    session = await mcp.initialize()
    params = {"uri": "sample://notes/welcome"}
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
    error = (await session.request("resources/read", {"uri": "sample://missing"})).json()["error"]
    assert error["code"] == -32002
    assert error["data"] == {"uri": "sample://missing"}


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
