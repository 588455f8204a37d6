"""An upstream that dies mid-call: the client gets a clear error, the upstream's breaker opens, and the gateway
reconnects (after its backoff) once the upstream is back. An upstream that hangs: given up on at the gateway's
upstream timeout, told to stop, and its connection kept for the next call. The dying upstream is a Stratus server in
its own process, killed with SIGKILL while a call runs on it; the gateway is served by uvicorn with the breaker's and
the pool's clock in the test's hands."""

from __future__ import annotations

import json
import os
import signal
import threading
from contextlib import ExitStack
from typing import Any

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.errors import CIRCUIT_OPEN
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.metrics import LocalMetrics
from stratus.resilience.breaker import BreakerPolicy
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures.clocks import FakeClock
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import ServerUrl, free_port, stratus_process
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
UPSTREAM_ENV = {"STRATUS_SECRET_KEY": SECRET_KEY}


def call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


async def hold_until_the_upstream_dies(http: httpx.AsyncClient, headers: dict[str, str], upstream: ServerUrl) -> Any:
    """Call `hold` on a stream; once the upstream says it holds, kill it; the call's final answer."""
    async with http.stream("POST", "/mcp", json=call(90, "mcp__up__hold", {}), headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or not line[5:].strip():
                continue
            message = json.loads(line[5:])
            if message.get("method") == "notifications/message" and message["params"]["data"] == "holding":
                os.kill(upstream.pid, signal.SIGKILL)
            if message.get("id") == 90:
                return message
    pytest.fail("the gateway ended the stream without answering")


async def test_an_upstream_dying_mid_call_opens_its_breaker_and_is_reconnected_once_it_returns() -> None:
    clock = FakeClock()
    port = free_port()
    upstream = Upstream(name="up", transport="http", url=f"http://127.0.0.1:{port}/mcp", protocol_version="2025-11-25")
    breaker = BreakerPolicy(failure_threshold=2, window_seconds=60, cooldown_seconds=30)
    # Not watching: its GET stream would hold the restarted upstream's shutdown for its 5 s grace period.
    gateway = GatewayServer([upstream], breaker=breaker, clock=clock, allowed_networks=["127.0.0.0/8"], watch=False)
    events: list[tuple[str, dict[str, Any]]] = []
    gateway.listeners.append(lambda event, fields: events.append((event, fields)))
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600, clock=clock))
    metrics = LocalMetrics()
    app = build_app(gateway, Settings(), stores=stores, metrics=metrics)
    with ExitStack() as stack, anyio.fail_after(60):
        first = stack.enter_context(stratus_process("tests.fixtures.apps:shared", UPSTREAM_ENV, port=port))
        url = stack.enter_context(uvicorn_serving(app, lifespan="on"))
        async with httpx.AsyncClient(base_url=url, timeout=15) as http:
            session = await McpHttp(http).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            assert isinstance(first, ServerUrl)
            died = await hold_until_the_upstream_dies(http, headers, first)

            unreachable = (
                await session.request("tools/call", {"name": "mcp__up__add", "arguments": {"a": 1, "b": 2}})
            ).json()
            open_circuit = (
                await session.request("tools/call", {"name": "mcp__up__add", "arguments": {"a": 1, "b": 2}})
            ).json()
            with stratus_process("tests.fixtures.apps:shared", UPSTREAM_ENV, port=port):
                still_open = (
                    await session.request("tools/call", {"name": "mcp__up__add", "arguments": {"a": 1, "b": 2}})
                ).json()
                clock.advance(31)  # the breaker's cooldown and the reconnect backoff pass
                recovered = (
                    await session.request("tools/call", {"name": "mcp__up__add", "arguments": {"a": 1, "b": 2}})
                ).json()

    result = died["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Upstream up is unavailable: up did not answer")
    assert unreachable["result"]["isError"] is True  # the reconnect is refused: the breaker's second failure
    assert "Upstream up is unavailable" in unreachable["result"]["content"][0]["text"]
    assert open_circuit["error"]["code"] == CIRCUIT_OPEN
    assert still_open["error"]["code"] == CIRCUIT_OPEN  # fails fast until the cooldown passes
    assert recovered["result"]["structuredContent"] == {"result": 3}
    moves = [(fields["from"], fields["to"]) for event, fields in events if event == "connection:state"]
    assert moves == [
        ("disconnected", "connecting"),
        ("connecting", "connected"),
        ("connected", "connecting"),  # the health check before reuse after the failure ...
        ("connecting", "error"),  # ... fails
        ("error", "connecting"),  # rebuilt at once: refused
        ("connecting", "error"),
        ("error", "connecting"),  # after the backoff, with the upstream back
        ("connecting", "connected"),
        ("connected", "disconnected"),  # the gateway shuts down
    ]
    called = [fields for event, fields in events if event == "tool:called"]
    assert [(each["tool"], each["success"]) for each in called] == [("hold", False), ("add", False), ("add", True)]
    assert metrics.total("gateway_tool_calls", upstream="up", outcome="failure") == 2  # in the app's own sink
    assert metrics.total("gateway_tool_calls", upstream="up", outcome="success") == 1


async def test_an_upstream_that_hangs_is_given_up_on_at_its_timeout_and_told_to_stop() -> None:
    upstream = McpServer("hanging")
    told_to_stop = threading.Event()

    @upstream.tool(timeout=30)
    async def hang(ctx: Context) -> str:
        await ctx.signal.wait()
        told_to_stop.set()
        return "stopped"

    @upstream.tool()
    def ping() -> str:
        return "pong"

    with uvicorn_serving(build_app(upstream, Settings())) as upstream_url:
        gateway = GatewayServer(
            [Upstream(name="up", transport="http", url=f"{upstream_url}/mcp", protocol_version="2025-11-25")],
            allowed_networks=["127.0.0.0/8"],
            upstream_timeout=0.5,
        )
        events: list[tuple[str, dict[str, Any]]] = []
        gateway.listeners.append(lambda event, fields: events.append((event, fields)))
        with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(20):
            async with httpx.AsyncClient(base_url=url, timeout=15) as http:
                session = await McpHttp(http).initialize()
                hung = (await session.request("tools/call", {"name": "mcp__up__hang", "arguments": {}})).json()
                assert await anyio.to_thread.run_sync(told_to_stop.wait, 10)
                after = (await session.request("tools/call", {"name": "mcp__up__ping", "arguments": {}})).json()
    assert hung["result"]["isError"] is True
    assert (
        hung["result"]["content"][0]["text"] == "Upstream up is unavailable: up did not answer tools/call within 0.5 s"
    )
    assert after["result"]["content"][0]["text"] == "pong"  # the same upstream serves its other tools at once
    took = [fields["ms"] for event, fields in events if event == "tool:called"]
    assert 500 <= took[0] < 5000
