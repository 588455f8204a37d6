"""Under uvicorn, a client that goes away mid-call cancels the call: the handler stops instead of running on."""

from __future__ import annotations

import asyncio
import threading

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, stateless_meta

pytestmark = pytest.mark.uvicorn


def test_closing_the_connection_cancels_the_running_tool() -> None:
    started, stopped = threading.Event(), threading.Event()
    server = McpServer("disconnect")

    @server.tool()
    async def wait_for_cancel(ctx: Context) -> str:
        started.set()
        try:
            await ctx.signal.wait()
            return "cancelled"
        finally:
            stopped.set()

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "wait_for_cancel", "arguments": {}, "_meta": stateless_meta()},
    }
    headers = {
        **BASE_HEADERS,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "wait_for_cancel",
    }

    async def call_then_hang_up(url: str) -> None:
        async with httpx.AsyncClient() as client:

            async def call() -> None:
                await client.post(f"{url}/mcp", json=body, headers=headers)

            with anyio.move_on_after(10):
                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    await anyio.to_thread.run_sync(started.wait, 5)
                    group.cancel_scope.cancel()  # the client gives up: its connection closes

    with uvicorn_serving(build_app(server, Settings())) as url:
        asyncio.run(call_then_hang_up(url))
        assert started.is_set(), "the tool never started"
        assert stopped.wait(5), "the tool kept running after the client disconnected"
