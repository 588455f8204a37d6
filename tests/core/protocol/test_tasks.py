"""Tasks in both eras: a tools/call answered at once with a handle, polled, fetched, cancelled; bound to its caller.

The tools wait on events the tests set, and the tests wait for a task's end on the store's own signal (the task's
event stream), bounded in time: nothing sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Settings
from stratus.protocol.launchers import InProcessLauncher, RunTask
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from stratus.stores.records import TaskRecord
from stratus.stores.task_records import RelayedCall
from stratus.transport.app import build_app
from tests.fixtures.store_backends import ADD
from tests.fixtures.wire import McpHttp, initialize_message, stateless_meta

pytestmark = pytest.mark.anyio
TASKS: dict[str, object] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@dataclass
class Gates:
    release: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    runs: int = 0


def task_server(gates: Gates) -> McpServer:
    server = McpServer("tasks", "1.0.0")

    @server.tool(task="optional")
    async def slow_sum(a: int, b: int) -> int:
        """Adds once the test releases it."""
        gates.started.set()
        try:
            await gates.release.wait()
        except asyncio.CancelledError:
            gates.cancelled.set()  # the pipeline stops a cancelled call
            raise
        return a + b

    @server.tool(task="required")
    def batch() -> str:
        """Only ever runs as a task."""
        return "batched"

    @server.tool()
    def quick() -> str:
        """Never a task."""
        return "quick"

    @server.tool(task="optional")
    def broken() -> str:
        """Fails with an unexpected exception."""
        raise RuntimeError("secret connection string postgres://admin:hunter2@db")

    @server.tool(task="optional")
    async def two_names(ctx: Context) -> str:
        """Asks two questions at once."""
        form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        first, last = await asyncio.gather(
            ctx.elicit("First name?", form, key="first"), ctx.elicit("Last name?", form, key="last")
        )
        gates.runs += 1
        return f"{first['content']['name']} {last['content']['name']}"

    @server.tool(task="optional")
    async def tally() -> int:
        """Counts its runs, once the test releases it."""
        gates.runs += 1
        await gates.release.wait()
        return gates.runs

    @server.tool(task="optional", timeout=0.05)
    async def stuck() -> str:
        """Never finishes: its deadline ends it with a JSON-RPC error."""
        await asyncio.Event().wait()
        return "unreachable"

    return server


@dataclass
class Harness:
    mcp: McpHttp
    stores: Stores
    gates: Gates

    async def ended(self, task_id: str, after: int = 0) -> int:
        """Wait (at most 5 s) for the task's next change of state, signalled on its event stream; its number."""
        events = await self.stores.events.wait_after(f"task:{task_id}", after, within=5.0)
        assert events, f"task {task_id} did not change state within 5 s"
        return events[-1].seq


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    gates = Gates()
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    app = build_app(task_server(gates), Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield Harness(McpHttp(http), stores, gates)


def result_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    return result


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert "error" in body, body
    error: dict[str, Any] = body["error"]
    return error


# -- 2025-11-25 ----------------------------------------------------------------------------------------------


async def test_a_handshake_session_sees_task_support_only_from_2025_11_25(harness: Harness) -> None:
    current = await harness.mcp.initialize("2025-11-25")
    older = await harness.mcp.initialize("2025-06-18")
    capabilities = result_of(await harness.mcp.post(initialize_message("2025-11-25")))["capabilities"]
    assert capabilities["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}
    older_capabilities = result_of(await harness.mcp.post(initialize_message("2025-06-18")))["capabilities"]
    assert "tasks" not in older_capabilities
    tools = result_of(await current.request("tools/list"))["tools"]
    support = {tool["name"]: tool.get("execution") for tool in tools}
    assert support == {
        "slow_sum": {"taskSupport": "optional"},
        "batch": {"taskSupport": "required"},
        "quick": None,
        "broken": {"taskSupport": "optional"},
        "stuck": {"taskSupport": "optional"},
        "two_names": {"taskSupport": "optional"},
        "tally": {"taskSupport": "optional"},
    }
    assert all("execution" not in tool for tool in result_of(await older.request("tools/list"))["tools"])


async def test_a_handshake_task_is_created_polled_and_its_result_fetched(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    created = result_of(
        await session.request("tools/call", {"name": "slow_sum", "arguments": {"a": 2, "b": 3}, "task": {"ttl": 60000}})
    )
    task = created["task"]
    assert isinstance(task, dict)
    assert (task["status"], task["ttl"], task["pollInterval"]) == ("working", 60000, 1000)
    await asyncio.wait_for(harness.gates.started.wait(), 5)
    polled = result_of(await session.request("tasks/get", {"taskId": task["taskId"]}))
    assert (polled["taskId"], polled["status"]) == (task["taskId"], "working")

    harness.gates.release.set()
    fetched = result_of(await session.request("tasks/result", {"taskId": task["taskId"]}))
    assert fetched["structuredContent"] == {"result": 5}
    assert fetched["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task["taskId"]}}
    assert result_of(await session.request("tasks/get", {"taskId": task["taskId"]}))["status"] == "completed"


async def test_cancelling_a_handshake_task_stops_it_and_a_second_cancel_is_refused(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    task = result_of(
        await session.request("tools/call", {"name": "slow_sum", "arguments": {"a": 1, "b": 1}, "task": {}})
    )["task"]
    assert isinstance(task, dict)
    await asyncio.wait_for(harness.gates.started.wait(), 5)

    cancelled = result_of(await session.request("tasks/cancel", {"taskId": task["taskId"]}))
    assert (cancelled["status"], cancelled["statusMessage"]) == ("cancelled", "Cancelled by the client")
    await asyncio.wait_for(harness.gates.cancelled.wait(), 5)  # the running tool was stopped
    again = await session.request("tasks/cancel", {"taskId": task["taskId"]})
    assert error_of(again) == {"code": -32602, "message": "Cannot cancel task: already in terminal status 'cancelled'"}
    fetched = await session.request("tasks/result", {"taskId": task["taskId"]})
    assert error_of(fetched)["code"] == -32602


async def test_task_support_is_enforced_per_tool(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    plain_call_of_required = await session.request("tools/call", {"name": "batch", "arguments": {}})
    assert error_of(plain_call_of_required)["code"] == -32601
    task_of_forbidden = await session.request("tools/call", {"name": "quick", "arguments": {}, "task": {}})
    assert error_of(task_of_forbidden)["code"] == -32601
    bad_arguments = await session.request("tools/call", {"name": "slow_sum", "arguments": {"a": "x"}, "task": {}})
    assert result_of(bad_arguments)["isError"] is True  # refused at once, no task made


async def test_a_tool_error_completes_its_task_and_a_json_rpc_error_fails_it(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    broken = result_of(await session.request("tools/call", {"name": "broken", "arguments": {}, "task": {}}))["task"]
    assert isinstance(broken, dict)
    fetched = await session.request("tasks/result", {"taskId": broken["taskId"]})
    assert result_of(fetched)["isError"] is True
    assert "hunter2" not in fetched.text and "RuntimeError" not in fetched.text
    assert result_of(await session.request("tasks/get", {"taskId": broken["taskId"]}))["status"] == "completed"

    stuck = result_of(await session.request("tools/call", {"name": "stuck", "arguments": {}, "task": {}}))["task"]
    assert isinstance(stuck, dict)
    failed = await session.request("tasks/result", {"taskId": stuck["taskId"]})
    assert error_of(failed)["code"] == -31504
    assert result_of(await session.request("tasks/get", {"taskId": stuck["taskId"]}))["status"] == "failed"


async def test_unknown_and_other_principals_tasks_are_not_found(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    await harness.stores.tasks.create(
        TaskRecord(task_id="alices", principal="issuer|alice", status="working", request=ADD), ttl_seconds=60
    )
    for task_id in ("no-such-task", "alices"):
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            refused = await session.request(method, {"taskId": task_id})
            assert error_of(refused) == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    stored = await harness.stores.tasks.get("alices")
    assert stored is not None and stored.status == "working"  # nothing was cancelled


# -- 2026-07-28 ----------------------------------------------------------------------------------------------


async def stateless_call(
    harness: Harness, method: str, params: dict[str, object], *, tasks: bool = True
) -> httpx.Response:
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS if tasks else {}})
    return await harness.mcp.stateless(method, {**params, "_meta": meta})


async def test_discover_advertises_the_tasks_extension(harness: Harness) -> None:
    discovered = result_of(await harness.mcp.stateless("server/discover"))
    assert discovered["capabilities"]["extensions"] == TASKS["extensions"]


async def test_a_stateless_task_is_polled_to_its_inlined_result(harness: Harness) -> None:
    created = result_of(
        await stateless_call(harness, "tools/call", {"name": "slow_sum", "arguments": {"a": 4, "b": 5}})
    )
    assert (created["resultType"], created["status"], created["ttlMs"]) == ("task", "working", 3_600_000)
    task_id = created["taskId"]
    assert isinstance(task_id, str)
    working = result_of(await stateless_call(harness, "tasks/get", {"taskId": task_id}))
    assert (working["resultType"], working["status"]) == ("complete", "working")

    harness.gates.release.set()
    await harness.ended(task_id)
    completed = result_of(await stateless_call(harness, "tasks/get", {"taskId": task_id}))
    assert completed["status"] == "completed"
    assert completed["result"]["structuredContent"] == {"result": 9}
    assert result_of(await stateless_call(harness, "tasks/update", {"taskId": task_id, "inputResponses": {}})) == {
        "resultType": "complete",
        "_meta": completed["_meta"],
    }
    assert result_of(await stateless_call(harness, "tasks/cancel", {"taskId": task_id}))["resultType"] == "complete"
    assert result_of(await stateless_call(harness, "tasks/get", {"taskId": task_id}))["status"] == "completed"


async def test_a_failed_stateless_task_carries_its_json_rpc_error(harness: Harness) -> None:
    created = result_of(await stateless_call(harness, "tools/call", {"name": "stuck", "arguments": {}}))
    task_id = str(created["taskId"])
    await harness.ended(task_id)
    failed = result_of(await stateless_call(harness, "tasks/get", {"taskId": task_id}))
    assert failed["status"] == "failed" and failed["error"]["code"] == -31504


async def test_without_the_extension_a_client_gets_plain_results_or_a_clear_refusal(harness: Harness) -> None:
    release = harness.gates.release
    release.set()
    plain = result_of(
        await stateless_call(harness, "tools/call", {"name": "slow_sum", "arguments": {"a": 1, "b": 2}}, tasks=False)
    )
    assert (plain["resultType"], plain["structuredContent"]) == ("complete", {"result": 3})
    required = error_of(await stateless_call(harness, "tools/call", {"name": "batch", "arguments": {}}, tasks=False))
    assert required["code"] == -32021
    assert required["data"] == {"requiredCapabilities": TASKS}
    polled = error_of(await stateless_call(harness, "tasks/get", {"taskId": "anything"}, tasks=False))
    assert polled["code"] == -32021


async def test_a_task_request_must_name_its_task_in_mcp_name(harness: Harness) -> None:
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS})
    response = await harness.mcp.stateless("tasks/get", {"taskId": "abc", "_meta": meta}, headers={"mcp-name": "xyz"})
    assert response.status_code == 400
    assert error_of(response)["code"] == -32020


async def test_a_task_waits_for_input_takes_answers_one_at_a_time_and_runs_again_with_them(harness: Harness) -> None:
    capabilities = {**TASKS, "elicitation": {}}
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": capabilities})
    created = result_of(
        await harness.mcp.stateless("tools/call", {"name": "two_names", "arguments": {}, "_meta": meta})
    )
    task_id = str(created["taskId"])

    async def get() -> dict[str, Any]:
        return result_of(await harness.mcp.stateless("tasks/get", {"taskId": task_id, "_meta": meta}))

    async def update(responses: object) -> httpx.Response:
        return await harness.mcp.stateless(
            "tasks/update", {"taskId": task_id, "inputResponses": responses, "_meta": meta}
        )

    parked = await harness.ended(task_id)  # the run stops at its questions
    waiting = await get()
    assert waiting["status"] == "input_required"
    assert set(waiting["inputRequests"]) == {"first", "last"}
    assert waiting["inputRequests"]["first"]["method"] == "elicitation/create"

    assert error_of(await update("not an object"))["code"] == -32602
    answer = {"action": "accept", "content": {"name": "Ada"}}
    assert result_of(await update({"first": answer, "never-asked": answer}))["resultType"] == "complete"
    partial = await get()
    assert (partial["status"], list(partial["inputRequests"])) == ("input_required", ["last"])

    assert result_of(await update({"last": {"action": "accept", "content": {"name": "Lovelace"}}}))
    await harness.ended(task_id, after=parked)
    done = await get()
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Ada Lovelace"
    assert harness.gates.runs == 1  # the tool body past its questions ran once, with both answers


class DeliveredTwice(InProcessLauncher):
    """Asynchronous invocation as AWS documents it may behave: each launch delivered twice, the runs overlapping."""

    async def launch(self, task_id: str, run: RunTask) -> None:
        await super().launch(task_id, run)
        await super().launch(task_id, run)


async def test_a_launch_delivered_twice_runs_its_task_once() -> None:
    gates = Gates()
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    app = build_app(task_server(gates), Settings(), stores=stores, task_launcher=DeliveredTwice())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        harness = Harness(McpHttp(http), stores, gates)
        session = await harness.mcp.initialize("2025-11-25")
        created = result_of(await session.request("tools/call", {"name": "tally", "arguments": {}, "task": {}}))
        task_id = created["task"]["taskId"]
        gates.release.set()
        await harness.ended(task_id)
        fetched = result_of(await session.request("tasks/result", {"taskId": task_id}))
    assert gates.runs == 1
    assert fetched["structuredContent"] == {"result": 1}


async def test_one_in_process_launcher_runs_each_apps_tasks_with_that_apps_service() -> None:
    launcher = InProcessLauncher()
    gates = Gates()
    stores = [build_stores("memory://", StoreOptions(session_ttl_seconds=600)) for _ in range(2)]
    other = McpServer("other", "1.0.0")

    @other.tool(task="optional")
    def tally() -> str:
        """Another app's tool of the same name."""
        return "the other app's tally"

    apps = [
        build_app(task_server(gates), Settings(), stores=stores[0], task_launcher=launcher),
        build_app(other, Settings(), stores=stores[1], task_launcher=launcher),
    ]
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[0]), base_url="http://localhost") as first,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[1]), base_url="http://localhost") as second,
    ):
        harness = Harness(McpHttp(first), stores[0], gates)
        session = await harness.mcp.initialize("2025-11-25")
        await session.request("tasks/get", {"taskId": "none"})  # the first app's task service is built
        await (await McpHttp(second).initialize("2025-11-25")).request(
            "tasks/get", {"taskId": "none"}
        )  # then the other's
        created = result_of(await session.request("tools/call", {"name": "tally", "arguments": {}, "task": {}}))
        task_id = created["task"]["taskId"]
        gates.release.set()
        await harness.ended(task_id)
        fetched = result_of(await session.request("tasks/result", {"taskId": task_id}))
    assert fetched["structuredContent"] == {"result": 1}  # run by the first app's service, with its tool
    assert gates.runs == 1


async def test_a_relayed_calls_id_is_not_a_task(harness: Harness) -> None:
    session = await harness.mcp.initialize("2025-11-25")
    relayed = RelayedCall(
        tool="quick", arguments={}, request_id=1, session_id="s-1", stream_token="tok", principal=None
    )
    await harness.stores.tasks.create(
        TaskRecord(task_id="call-1", principal=None, status="working", request=relayed), ttl_seconds=60
    )
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        refused = await session.request(method, {"taskId": "call-1"})
        assert error_of(refused) == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    stored = await harness.stores.tasks.get("call-1")
    assert stored is not None and stored.status == "working"  # nothing was cancelled
