"""A resource subscription made through the gateway is passed to the upstream that owns the resource (the SDK's own
server), and the upstream's update reaches the subscriber's stream on another gateway container (shared Redis)."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.stores.factory import build_stores
from tests.fixtures import sdk_upstream
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
UPDATED = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": sdk_upstream.BOARD}}


async def _messages(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: ") and line != "data: ":
            yield json.loads(line.removeprefix("data: "))


def _container(url: str, prefix: str) -> Any:
    upstream = Upstream(name="notes", transport="http", url=url, protocol_version="2025-11-25")
    gateway = GatewayServer([upstream], allowed_networks=["127.0.0.0/8"], use_records=False)
    stores = build_stores("redis://127.0.0.1:6379/0", session_ttl_seconds=600, prefix=prefix)
    return build_app(gateway, Settings(secret_key="k"), stores=stores)


async def test_an_upstream_resource_update_reaches_the_subscriber_on_another_container() -> None:
    prefix = f"gw-subs-{secrets.token_hex(4)}"
    with (
        uvicorn_serving(sdk_upstream.subscribable_app(), lifespan="on") as upstream,  # type: ignore[arg-type]
        uvicorn_serving(_container(f"{upstream}/mcp", prefix), lifespan="on") as first,
        uvicorn_serving(_container(f"{upstream}/mcp", prefix), lifespan="on") as second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            subscribe = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "resources/subscribe",
                "params": {"uri": sdk_upstream.BOARD},
            }
            answer = await on_first.post("/mcp", json=subscribe, headers=headers)
            assert answer.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
            touch = {"name": "mcp__notes__touch", "arguments": {}}
            with anyio.fail_after(20):
                async with on_second.stream("GET", "/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    messages = _messages(stream)
                    # Touched through the second container: the upstream tells the first container's session.
                    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": touch}
                    touched = await on_second.post("/mcp", json=call, headers=headers)
                    assert touched.json()["result"]["structuredContent"] == {"result": 1}
                    assert await anext(messages) == UPDATED
                    await messages.aclose()
