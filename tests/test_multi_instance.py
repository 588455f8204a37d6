"""Two `stratus serve` processes sharing one Redis behave as one server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import anyio
import boto3
import httpx
import pytest
from mcp import Client

from stratus.stores.dynamodb.schema import create_table
from tests.fixtures.apps import LIMIT
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.moto_server import AWS, client_keys
from tests.fixtures.processes import RoundRobinProxy, stratus_processes
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import HandshakeSession, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TASKS: dict[str, object] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture(scope="module", params=["redis", "dynamodb"])
def two_processes(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Two `stratus serve` processes sharing one store: the real Redis, or DynamoDB on moto's server."""
    environment = {
        "STRATUS_STORE_PREFIX": f"stratus-multi-{secrets.token_hex(4)}",
        "STRATUS_SECRET_KEY": SECRET_KEY,
    }
    if request.param == "redis":
        environment["STRATUS_STORE"] = "redis://127.0.0.1:6379/0"
    else:
        endpoint = request.getfixturevalue("moto_server")
        table = f"stratus-multi-{secrets.token_hex(4)}"
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **client_keys())
        create_table(client, table)
        environment.update(AWS, STRATUS_STORE=f"dynamodb://{table}", AWS_ENDPOINT_URL_DYNAMODB=endpoint)
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as urls:
        yield urls


def client_of(url: str) -> McpHttp:
    return McpHttp(httpx.AsyncClient(base_url=url, timeout=10))


async def test_a_session_opened_on_one_process_is_used_and_ended_on_the_other(two_processes: list[str]) -> None:
    first, second = client_of(two_processes[0]), client_of(two_processes[1])
    with anyio.fail_after(20):
        session = await first.initialize()
        session.client = second
        result = (await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})).json()
        assert result["result"]["structuredContent"] == {"result": 5}
        assert (await second.http.delete("/mcp", headers=session.headers)).status_code == 200
        session.client = first
        assert (await session.request("tools/list")).status_code == 404
    await first.http.aclose()
    await second.http.aclose()


async def test_a_rate_limit_admits_exactly_its_burst_across_both_processes(two_processes: list[str]) -> None:
    clients = [client_of(url) for url in two_processes]
    outcomes: list[int] = []

    async def call(mcp: McpHttp) -> None:
        response = await mcp.stateless("tools/call", {"name": "limited"})
        body = response.json()
        outcomes.append(503 if response.status_code == 503 else 1 if "result" in body else body["error"]["code"])

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for index in range(3 * LIMIT):
                group.start_soon(call, clients[index % 2])
    assert outcomes.count(1) == LIMIT
    # Every other call is refused: rate limited, or (a bucket too contended to decide) told to retry with 503.
    assert outcomes.count(-31429) + outcomes.count(503) == 2 * LIMIT
    for mcp in clients:
        await mcp.http.aclose()


async def test_a_breaker_opened_by_failures_on_one_process_is_open_on_the_other(two_processes: list[str]) -> None:
    first, second = client_of(two_processes[0]), client_of(two_processes[1])
    with anyio.fail_after(20):
        for _ in range(3):
            assert (await first.stateless("tools/call", {"name": "flaky"})).json()["result"]["isError"] is True
        refused = (await second.stateless("tools/call", {"name": "flaky"})).json()
    assert refused["error"]["code"] == -31503
    await first.http.aclose()
    await second.http.aclose()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_sdk_works_with_requests_alternating_between_processes(
    two_processes: list[str], mode: str
) -> None:
    proxy = RoundRobinProxy(two_processes)
    with uvicorn_serving(proxy) as proxy_url:
        with anyio.fail_after(30):
            async with Client(f"{proxy_url}/mcp", mode=mode) as client:
                tools = await client.list_tools()
                assert "add" in [tool.name for tool in tools.tools]
                for a in range(4):
                    result = await client.call_tool("add", {"a": a, "b": 1})
                    assert result.structured_content == {"result": a + 1}
    assert set(proxy.forwarded) == set(two_processes)


async def test_a_cancellation_sent_to_the_other_process_stops_the_call(two_processes: list[str]) -> None:
    first, second = client_of(two_processes[0]), client_of(two_processes[1])
    session = await first.initialize()
    body = {"jsonrpc": "2.0", "id": "long-1", "method": "tools/call", "params": {"name": "wait_for_cancel"}}
    outcome: list[dict[str, object]] = []
    answered = anyio.Event()

    async def call() -> None:
        outcome.append((await first.post(body, session.headers)).json())
        answered.set()

    with anyio.fail_after(15):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            session.client = second
            while not answered.is_set():  # the call listens once it is a second old: repeat until it hears
                await session.notify("notifications/cancelled", {"requestId": "long-1", "reason": "user"})
                with anyio.move_on_after(0.2):
                    await answered.wait()
    # The tool saw its cancellation signal (set on the first process by a notification sent to the second).
    assert outcome[0]["result"] == {"content": [{"type": "text", "text": "cancelled"}]}
    await first.http.aclose()
    await second.http.aclose()


async def test_a_task_started_on_one_process_is_polled_and_fetched_on_the_other(two_processes: list[str]) -> None:
    first, second = client_of(two_processes[0]), client_of(two_processes[1])
    on_first = await first.initialize("2025-11-25")
    on_second = HandshakeSession(second, on_first.session_id, on_first.version)
    created = await on_first.request("tools/call", {"name": "total", "arguments": {"values": [1, 2, 3]}, "task": {}})
    task_id = created.json()["result"]["task"]["taskId"]

    with anyio.fail_after(20):
        fetched = await on_second.request("tasks/result", {"taskId": task_id})
    assert fetched.json()["result"]["structuredContent"] == {"result": 6}
    polled = await on_second.request("tasks/get", {"taskId": task_id})
    assert polled.json()["result"]["status"] == "completed"
    await first.http.aclose()
    await second.http.aclose()


async def test_a_stateless_task_cancelled_on_the_other_process_ends_cancelled(two_processes: list[str]) -> None:
    first, second = client_of(two_processes[0]), client_of(two_processes[1])
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS})
    created = await first.stateless("tools/call", {"name": "vigil", "arguments": {}, "_meta": meta})
    task_id = created.json()["result"]["taskId"]
    assert created.json()["result"]["status"] == "working"

    cancelled = await second.stateless("tasks/cancel", {"taskId": task_id, "_meta": meta})
    assert cancelled.json()["result"]["resultType"] == "complete"
    polled = await first.stateless("tasks/get", {"taskId": task_id, "_meta": meta})
    assert (polled.json()["result"]["status"], polled.json()["result"]["statusMessage"]) == (
        "cancelled",
        "Cancelled by the client",
    )
    await first.http.aclose()
    await second.http.aclose()
