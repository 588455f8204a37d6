"""A gateway's `/health` shows each upstream as the container knows it (state, last error, tool count), read from
memory: asking it connects nothing, however often it is asked."""

from __future__ import annotations

import socket

import httpx
import pytest

from stratus import Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures import sdk_upstream
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_health_shows_each_upstreams_state_last_error_and_tools_without_connecting() -> None:
    down = f"http://127.0.0.1:{_closed_port()}/mcp"
    with uvicorn_serving(sdk_upstream.multiply_app(), lifespan="on") as url:  # type: ignore[arg-type]
        upstreams = [
            Upstream(name="math", transport="http", url=f"{url}/mcp"),
            Upstream(name="down", transport="http", url=down),
            Upstream(name="idle", transport="http", url=down, active=False),
        ]
        gateway = GatewayServer(upstreams, allowed_networks=["127.0.0.0/8"], use_records=False, watch=False)
        app = build_app(gateway, Settings(), stores=build_stores("memory://", StoreOptions(session_ttl_seconds=600)))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            before = [(await http.get("/health")).json()["upstreams"] for _ in range(3)]
            states_before = [gateway.pool.state(upstream.name).value for upstream in upstreams]
            session = await McpHttp(http).initialize()
            listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
            await http.post("/mcp", json=listing, headers={**BASE_HEADERS, **session.headers})
            after = (await http.get("/health")).json()["upstreams"]
        await gateway.aclose()  # its pooled connection to `math`, closed on this loop rather than by the collector
    assert before[0] == [
        {"name": "math", "state": "disconnected", "lastError": None, "tools": 0},
        {"name": "down", "state": "disconnected", "lastError": None, "tools": 0},
        {"name": "idle", "state": "inactive", "lastError": None, "tools": 0},
    ]
    assert (
        all(each == before[0] for each in before) and states_before == ["disconnected"] * 3
    )  # /health connected nothing
    assert after == [
        {"name": "math", "state": "connected", "lastError": None, "tools": 1},
        {"name": "down", "state": "error", "lastError": "down did not answer: ConnectionRefusedError", "tools": 0},
        {"name": "idle", "state": "inactive", "lastError": None, "tools": 0},
    ]
