"""What an upstream sends during a call reaches the gateway's client, and the client's answers reach the upstream:
progress, log messages, sampling and elicitation, in both eras of the client, through a Stratus upstream running
in its own process; a call the client cancels is cancelled upstream; and an upstream's list changes, heard on its
GET stream or its subscriptions/listen stream, reach the gateway's own listening clients."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp.client.client import ConnectMode

from stratus import Context, McpServer, Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.metrics import LocalMetrics
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import stratus_process
from tests.fixtures.sdk_answers import ASKED, call_the_asking_tools
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
LOOPBACK = ("127.0.0.0/8",)


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    with stratus_process("tests.fixtures.apps:shared", {"STRATUS_SECRET_KEY": SECRET_KEY}) as upstream:
        gateway = GatewayServer(
            [Upstream(name="shared", transport="http", url=f"{upstream}/mcp", namespaced=False)],
            allowed_networks=LOOPBACK,
        )
        with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url:
            yield f"{url}/mcp"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_progress_logs_sampling_and_elicitation_cross_the_gateway(gateway_url: str, mode: ConnectMode) -> None:
    logs: list[object] = []

    async def on_log(params: object) -> None:
        logs.append(getattr(params, "data", None))

    with anyio.fail_after(30):
        texts, progressed = await call_the_asking_tools(gateway_url, mode, logging_callback=on_log)
    assert texts == ASKED
    assert progressed == [1, 2, 3]
    if mode == "legacy":  # a 2026-07-28 client gets log messages only when its _meta asks for a level
        assert "counting" in logs


async def test_a_call_the_client_cancels_is_cancelled_upstream() -> None:
    upstream = McpServer("cancellable")
    started, cancelled = threading.Event(), threading.Event()

    @upstream.tool(timeout=20)
    async def wait(ctx: Context) -> str:
        started.set()
        await ctx.signal.wait()
        cancelled.set()
        return "stopped"

    with uvicorn_serving(build_app(upstream, Settings())) as upstream_url:
        gateway = GatewayServer(
            [Upstream(name="u", transport="http", url=f"{upstream_url}/mcp", protocol_version="2025-11-25")],
            allowed_networks=LOOPBACK,
        )
        with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(15):
            async with httpx.AsyncClient(base_url=url, timeout=10) as http, anyio.create_task_group() as group:
                session = await McpHttp(http).initialize()
                call = {"name": "mcp__u__wait", "arguments": {}}
                body = {"jsonrpc": "2.0", "id": "long-1", "method": "tools/call", "params": call}
                group.start_soon(session.client.post, body, session.headers)
                assert await anyio.to_thread.run_sync(started.wait, 10)
                await session.notify("notifications/cancelled", {"requestId": "long-1", "reason": "user"})
                assert await anyio.to_thread.run_sync(cancelled.wait, 10)  # the upstream's own call was cancelled


@pytest.mark.parametrize("pinned", [None, "2025-11-25"], ids=["2026-07-28 upstream", "2025-11-25 upstream"])
async def test_an_upstreams_list_change_drops_its_cached_lists_and_reaches_the_gateways_clients(
    pinned: str | None,
) -> None:
    heard = threading.Event()
    with stratus_process("tests.fixtures.apps:shared", {"STRATUS_SECRET_KEY": SECRET_KEY}) as upstream:
        gateway = GatewayServer(
            [Upstream(name="up", transport="http", url=f"{upstream}/mcp", protocol_version=pinned)],
            allowed_networks=LOOPBACK,
            catalog_seconds=3600,
        )
        gateway.listeners.append(lambda event, fields: heard.set() if event == "list:changed" else None)
        held = Settings(poll_hold_seconds=30)  # the client's GET stream stays open until the change arrives
        with uvicorn_serving(build_app(gateway, held), lifespan="on") as url, anyio.fail_after(20):
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                session = await McpHttp(http).initialize()
                stream_headers = {**session.headers, "accept": "text/event-stream"}
                async with http.stream("GET", "/mcp", headers=stream_headers) as gateway_stream:
                    lines = gateway_stream.aiter_lines()
                    for _ in range(50):  # until the gateway's watcher listens upstream (bounded)
                        call = {"name": "mcp__up__reshuffle_tools", "arguments": {}}
                        assert (await session.request("tools/call", call)).status_code == 200
                        if await anyio.to_thread.run_sync(heard.wait, 0.2):
                            break
                    assert heard.is_set(), "no list change heard after 50 calls"
                    async for line in lines:
                        if "notifications/tools/list_changed" in line:
                            break
                    else:
                        raise AssertionError("the stream ended without the list change")


async def test_two_apps_built_from_one_gateway_count_its_upstream_calls_each_in_its_own_sink() -> None:
    upstream = McpServer("adder")

    @upstream.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with uvicorn_serving(build_app(upstream, Settings())) as upstream_url:
        gateway = GatewayServer(
            [Upstream(name="u", transport="http", url=f"{upstream_url}/mcp", protocol_version="2025-11-25")],
            allowed_networks=LOOPBACK,
        )
        sinks = (LocalMetrics(), LocalMetrics())
        apps = [build_app(gateway, Settings(), metrics=sink) for sink in sinks]
        with anyio.fail_after(15):
            for app, calls in zip(apps, (1, 2), strict=True):
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
                    session = await McpHttp(http).initialize()
                    for _ in range(calls):
                        answer = await session.request(
                            "tools/call", {"name": "mcp__u__add", "arguments": {"a": 1, "b": 2}}
                        )
                        assert answer.json()["result"]["structuredContent"] == {"result": 3}
            await apps[0].shutdown()
    assert [sink.total("gateway_tool_calls", upstream="u", outcome="success") for sink in sinks] == [1, 2]
