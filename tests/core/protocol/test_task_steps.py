"""`ctx.step`: a task's named step runs once. Its JSON result is kept in the store beside the task's answers, and the
run that resumes the task after its client answered returns it without running the step again; outside a task a
step simply runs. On the in-memory store and on the real Redis."""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Settings
from stratus.server.steps import step_key
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from stratus.transport.app import build_app
from tests.fixtures.wire import McpHttp, stateless_meta

pytestmark = pytest.mark.anyio
CAPABILITIES: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def release_server(runs: Counter[str]) -> McpServer:
    server = McpServer("steps", "1.0.0")

    async def build(version: str) -> dict[str, str]:
        runs["build"] += 1
        return {"artifact": f"app-{version}.zip"}

    def check(artifact: str) -> tuple[str, int]:
        runs["check"] += 1
        return (artifact, 3)

    async def deploy(artifact: str) -> str:
        runs["deploy"] += 1
        return f"deployed {artifact}"

    @server.tool(task="optional")
    async def release(version: str, ctx: Context) -> str:
        """Build, check, ask, deploy."""
        await ctx.info(f"releasing {version}")
        built = await ctx.step("build", build, version)
        checked = await ctx.step("check", check, built["artifact"])
        await ctx.info("built and checked")
        answer = await ctx.elicit(f"Deploy {built['artifact']}?", FORM, key="approve")
        if answer.get("action") != "accept":
            return "not deployed"
        await ctx.info("approved")
        return f"{await ctx.step('deploy', deploy, built['artifact'])} ({checked[1]} checks)"

    @server.tool(task="optional")
    async def twice(ctx: Context) -> str:
        await ctx.step("same", lambda: 1)
        await ctx.step("same", lambda: 2)
        return "unreachable"

    @server.tool(task="optional")
    async def unkeepable(ctx: Context) -> str:
        await ctx.step("handle", lambda: object())
        return "unreachable"

    return server


@pytest.fixture(params=["memory", "redis"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    url = "memory://" if request.param == "memory" else "redis://127.0.0.1:6379/0"
    built = build_stores(url, StoreOptions(session_ttl_seconds=600, prefix=f"steps-{secrets.token_hex(6)}"))
    try:
        yield built
    finally:
        await built.aclose()


class Client:
    def __init__(self, mcp: McpHttp, stores: Stores) -> None:
        self.mcp = mcp
        self.stores = stores
        self.meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": CAPABILITIES})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await self.mcp.stateless(method, {**params, "_meta": self.meta})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def settled(self, task_id: str, after: int = 0) -> tuple[dict[str, Any], int]:
        """The task once its run has stopped (at most 5 s, on the task's own event stream), and where that was."""
        events = await self.stores.events.wait_after(f"task:{task_id}", after, within=5.0)
        assert events, f"task {task_id} did not change state within 5 s"
        return await self.request("tasks/get", {"taskId": task_id}), events[-1].seq


@pytest.fixture
async def client(stores: Stores) -> AsyncIterator[tuple[Client, Counter[str]]]:
    runs: Counter[str] = Counter()
    app = build_app(release_server(runs), Settings(), stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield Client(McpHttp(http), stores), runs


async def test_a_resumed_task_returns_its_steps_results_without_running_them_again(
    client: tuple[Client, Counter[str]],
) -> None:
    mcp, runs = client
    created = await mcp.request("tools/call", {"name": "release", "arguments": {"version": "1.2"}})
    task_id = str(created["taskId"])
    waiting, seen = await mcp.settled(task_id)
    assert waiting["status"] == "input_required"
    assert runs == Counter(build=1, check=1)
    assert await mcp.stores.cache.get(step_key(task_id, "build")) == '{"artifact":"app-1.2.zip"}'

    await mcp.request("tasks/update", {"taskId": task_id, "inputResponses": {"approve": {"action": "accept"}}})
    done, _ = await mcp.settled(task_id, after=seen)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "deployed app-1.2.zip (3 checks)"
    assert runs == Counter(build=1, check=1, deploy=1)  # the resumed run replayed build and check


async def test_a_resumed_run_writes_each_log_line_of_the_tool_once(
    client: tuple[Client, Counter[str]], caplog: pytest.LogCaptureFixture
) -> None:
    mcp, _ = client
    caplog.set_level(logging.INFO, logger="stratus.tool")
    created = await mcp.request("tools/call", {"name": "release", "arguments": {"version": "3.0"}})
    task_id = str(created["taskId"])
    _, seen = await mcp.settled(task_id)
    await mcp.request("tasks/update", {"taskId": task_id, "inputResponses": {"approve": {"action": "accept"}}})
    done, _ = await mcp.settled(task_id, after=seen)

    assert done["status"] == "completed"
    logged = [record.getMessage() for record in caplog.records if record.name == "stratus.tool"]
    assert logged == ["releasing 3.0", "built and checked", "approved"]  # the replay wrote only what came after


async def test_outside_a_task_a_step_simply_runs(client: tuple[Client, Counter[str]]) -> None:
    mcp, runs = client
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
    for _ in range(2):
        response = await mcp.mcp.stateless(
            "tools/call", {"name": "release", "arguments": {"version": "2.0"}, "_meta": meta}
        )
        assert response.json()["result"]["resultType"] == "input_required"
    assert runs == Counter(build=2, check=2)  # a multi round-trip retry is a new call: nothing is kept for it


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ("twice", "Step 'same' ran twice in one run of the task: give each step a name of its own"),
        ("unkeepable", "Step 'handle' returned object, which is not JSON"),
    ],
)
async def test_a_step_that_cannot_be_kept_fails_the_task_with_a_message_naming_it(
    client: tuple[Client, Counter[str]], tool: str, message: str
) -> None:
    mcp, _ = client
    created = await mcp.request("tools/call", {"name": tool, "arguments": {}})
    failed, _ = await mcp.settled(str(created["taskId"]))
    assert failed["status"] == "failed"
    assert failed["error"]["message"].startswith(message)
