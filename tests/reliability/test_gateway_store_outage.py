"""A gateway whose Redis goes away: its tools stay listed and callable (the lists come from the upstream itself,
the breaker fails open as configured), and the shared cache is used again once Redis is back."""

from __future__ import annotations

import secrets

import anyio
import httpx
import pytest

from stratus import Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


async def names_and_sum(mcp: McpHttp) -> tuple[list[str], object]:
    listed = (await mcp.stateless("tools/list")).json()["result"]["tools"]
    added = (await mcp.stateless("tools/call", {"name": "mcp__sample__add", "arguments": {"a": 1, "b": 2}})).json()
    return [tool["name"] for tool in listed], added["result"]["structuredContent"]


async def test_a_gateway_lists_and_calls_through_a_store_outage(own_redis: OwnRedis) -> None:
    stores = build_stores(
        own_redis.url, StoreOptions(session_ttl_seconds=600, prefix=f"gw-{secrets.token_hex(4)}", timeout=0.5)
    )
    expected = (["mcp__sample__add", "mcp__sample__forecast", "mcp__sample__divide"], {"result": 3})
    with uvicorn_serving(build_app(sample, Settings())) as upstream_url:
        upstream = Upstream(name="sample", transport="http", url=f"{upstream_url}/mcp")
        gateway = GatewayServer([upstream], allowed_networks=["127.0.0.0/8"], catalog_seconds=0.0, watch=False)
        app = build_app(gateway, Settings(secret_key=SECRET_KEY, store=own_redis.url), stores=stores)
        with uvicorn_serving(app, lifespan="on") as url, anyio.fail_after(30):
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                mcp = McpHttp(http)
                assert await names_and_sum(mcp) == expected
                own_redis.stop()
                assert await names_and_sum(mcp) == expected  # straight from the upstream, breaker failing open
                own_redis.start()
                assert await names_and_sum(mcp) == expected
    cached = own_redis.client().keys("*gateway:tools:sample:*")
    assert len(cached) == 1  # the list is in the shared cache again
