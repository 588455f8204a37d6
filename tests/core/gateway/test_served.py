"""A gateway served over real HTTP in front of real upstreams on 127.0.0.1: two Stratus servers (one found in the
2026-07-28 era, one pinned to the 2025-11-25 handshake) and one built with the official Python SDK; the official
SDK client lists and calls their tools through it by their namespaced names, in both eras."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from stratus import Settings, build_app
from stratus.errors import RATE_LIMITED
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.net.request_body import read_body
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures import sdk_upstream
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEST_TIMEOUT_SECONDS = 15.0
LOOPBACK = ("127.0.0.0/8",)


@pytest.fixture(scope="module")
def upstream_urls() -> Iterator[dict[str, str]]:
    with (
        uvicorn_serving(build_app(sample, Settings())) as alpha,
        uvicorn_serving(build_app(sample, Settings())) as beta,
        uvicorn_serving(sdk_upstream.multiply_app(), lifespan="on") as sdk,  # type: ignore[arg-type]
    ):
        yield {"alpha": f"{alpha}/mcp", "beta": f"{beta}/mcp", "sdk": f"{sdk}/mcp"}


def upstreams(urls: dict[str, str], *, namespaced: bool = True) -> list[Upstream]:
    return [
        Upstream(name="alpha", transport="http", url=urls["alpha"], namespaced=namespaced),
        Upstream(name="beta", transport="http", url=urls["beta"], protocol_version="2025-11-25", namespaced=namespaced),
        Upstream(name="sdk", transport="http", url=urls["sdk"], disabled_tools=frozenset()),
    ]


@pytest.fixture(scope="module")
def gateway_url(upstream_urls: dict[str, str]) -> Iterator[str]:
    with uvicorn_serving(
        build_app(GatewayServer(upstreams(upstream_urls), allowed_networks=LOOPBACK), Settings()), lifespan="on"
    ) as url:
        yield f"{url}/mcp"


@asynccontextmanager
async def connect(url: str, mode: ConnectMode) -> AsyncIterator[Client]:
    async with Client(url, mode=mode, read_timeout_seconds=5.0) as client:
        yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_lists_every_upstreams_tools_by_namespaced_name(
    gateway_url: str, mode: ConnectMode
) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(gateway_url, mode) as client:
            assert client.server_capabilities.tools is not None
            listing = await client.list_tools()
    names = [tool.name for tool in listing.tools]
    assert names == [
        "mcp__alpha__add",
        "mcp__alpha__forecast",
        "mcp__alpha__divide",
        "mcp__beta__add",
        "mcp__beta__forecast",
        "mcp__beta__divide",
        "mcp__sdk__multiply",
    ]
    multiply = listing.tools[-1]
    assert multiply.description == "Multiply two integers."
    assert multiply.input_schema["required"] == ["a", "b"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calls_reach_the_owning_upstream_in_its_own_era(gateway_url: str, mode: ConnectMode) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(gateway_url, mode) as client:
            stateless = await client.call_tool("mcp__alpha__add", {"a": 2, "b": 3})
            handshake = await client.call_tool("mcp__beta__add", {"a": 20, "b": 3})
            sdk = await client.call_tool("mcp__sdk__multiply", {"a": 6, "b": 7})
            refused = await client.call_tool("mcp__beta__divide", {"numerator": 1, "denominator": 0})
    assert stateless.structured_content == {"result": 5}
    assert handshake.structured_content == {"result": 23}
    assert sdk.is_error is False
    assert sdk.content == [TextContent(type="text", text="42")]
    assert refused.is_error is True  # the upstream's own tool error, unchanged
    assert refused.content == [TextContent(type="text", text="Cannot divide by zero")]


async def test_resources_and_prompts_of_the_upstreams_are_served_too(gateway_url: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(gateway_url, "legacy") as client:
            resources = await client.list_resources()
            read = await client.read_resource("sample://notes/welcome")
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("mcp__alpha__greeting", {"name": "Ada"})
    assert [resource.uri for resource in resources.resources] == [
        "sample://notes/welcome"
    ]  # first upstream keeps a URI
    assert read.contents[0].text.startswith("# Welcome")  # type: ignore[union-attr]
    assert [each.name for each in prompts.prompts] == ["mcp__alpha__greeting", "mcp__beta__greeting"]
    assert "Ada" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_unnamespaced_upstreams_with_the_same_tool_settle_the_clash_in_configuration_order(
    upstream_urls: dict[str, str],
) -> None:
    gateway = GatewayServer(upstreams(upstream_urls, namespaced=False), allowed_networks=LOOPBACK)
    with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(f"{url}/mcp", "legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            first = await client.call_tool("add", {"a": 1, "b": 1})
            second = await client.call_tool("mcp__beta__add", {"a": 2, "b": 2})
    assert names[:6] == ["add", "forecast", "divide", "mcp__beta__add", "mcp__beta__forecast", "mcp__beta__divide"]
    assert first.structured_content == {"result": 2}
    assert second.structured_content == {"result": 4}
    assert any("beta/add is mcp__beta__add" in note for note in gateway.renamed)


async def test_an_upstream_in_a_private_range_is_refused_unless_its_network_is_allowed(
    upstream_urls: dict[str, str],
) -> None:
    gateway = GatewayServer(upstreams(upstream_urls))  # loopback not allowed: the default
    with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(f"{url}/mcp", "legacy") as client:
            listing = await client.list_tools()
    assert listing.tools == []  # nothing was fetched from any of them
    assert set(gateway.failures) == {"alpha", "beta", "sdk"}
    reason = gateway.failures["alpha"]
    assert "address is not allowed" in reason and "127.0.0.1" not in reason  # the internal address is not told


async def test_a_stdio_and_a_handshake_sse_upstream_are_served_with_their_disabled_tools_hidden() -> None:
    hidden = frozenset({"die", "shout", "big", "environment", "greet", "count", "confide"})
    with uvicorn_serving(sdk_upstream.build().sse_app(), lifespan="on") as sse_url:
        gateway = GatewayServer(
            [
                Upstream(name="files", transport="stdio", command=sys.executable, args=(sdk_upstream.__file__,)),
                Upstream(name="old sse", transport="sse", url=f"{sse_url}/sse", disabled_tools=hidden),
            ],
            allowed_networks=LOOPBACK,
        )
        with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url:
            with anyio.fail_after(TEST_TIMEOUT_SECONDS):
                async with connect(f"{url}/mcp", "auto") as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    by_stdio = await client.call_tool("mcp__files__add", {"a": 2, "b": 2})
                    by_sse = await client.call_tool("mcp__old_sse__add", {"a": 3, "b": 3})
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool("mcp__old_sse__refuse", {})
    assert "mcp__files__die" in names and "mcp__old_sse__die" not in names
    assert [name for name in names if name.startswith("mcp__old_sse__")] == [
        "mcp__old_sse__add",
        "mcp__old_sse__fail",
        "mcp__old_sse__refuse",
    ]
    assert by_stdio.content == [TextContent(type="text", text="4")]
    assert by_sse.content == [TextContent(type="text", text="6")]
    assert refused.value.error.code == sdk_upstream.REFUSED_CODE  # the upstream's JSON-RPC error, unchanged


async def test_an_upstreams_tools_share_one_rate_limit_that_leaves_the_others_alone(
    upstream_urls: dict[str, str],
) -> None:
    gateway = GatewayServer(
        upstreams(upstream_urls), allowed_networks=LOOPBACK, rate_limit=RateLimit(rate=0.001, burst=2)
    )
    with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(f"{url}/mcp", "legacy") as client:
            await client.call_tool("mcp__alpha__add", {"a": 1, "b": 1})
            await client.call_tool("mcp__alpha__divide", {"numerator": 1, "denominator": 1})
            with pytest.raises(MCPError) as limited:
                await client.call_tool("mcp__alpha__add", {"a": 1, "b": 1})  # alpha's third call
            other = await client.call_tool("mcp__beta__add", {"a": 1, "b": 1})
    assert limited.value.error.code == RATE_LIMITED
    assert other.structured_content == {"result": 2}


async def test_a_cached_tools_list_is_answered_with_the_upstream_gone() -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    with uvicorn_serving(build_app(sample, Settings())) as upstream_url:
        upstream = Upstream(name="sample", transport="http", url=f"{upstream_url}/mcp")
        gateway = GatewayServer([upstream], allowed_networks=LOOPBACK, catalog_seconds=0.0, watch=False)
        app = build_app(gateway, Settings(), stores=stores)
        with uvicorn_serving(app, lifespan="on") as url, anyio.fail_after(TEST_TIMEOUT_SECONDS):
            async with connect(f"{url}/mcp", "auto") as client:
                before = [tool.name for tool in (await client.list_tools()).tools]
    another = GatewayServer([upstream], allowed_networks=LOOPBACK, watch=False)  # another container, same store
    with uvicorn_serving(build_app(another, Settings(), stores=stores), lifespan="on") as url:
        with anyio.fail_after(TEST_TIMEOUT_SECONDS):
            async with connect(f"{url}/mcp", "auto") as client:
                after = [tool.name for tool in (await client.list_tools()).tools]
    assert before == after == ["mcp__sample__add", "mcp__sample__forecast", "mcp__sample__divide"]
    assert another.failures == {}  # nothing was asked of the upstream, which is gone


async def half_broken_upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A minimal handshake-era MCP server whose tools list works and whose prompts list always fails."""
    if scope["type"] != "http":
        return
    body = json.loads(await read_body(receive) or b"{}")
    if "id" not in body:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    results: dict[str, Any] = {
        "initialize": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "prompts": {}},
            "serverInfo": {"name": "half", "version": "1"},
        },
        "tools/list": {"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]},
    }
    method = body.get("method")
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"]}
    if method in results:
        answer["result"] = results[method]
    else:
        answer["error"] = {"code": -32603, "message": f"{method} is broken"}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


async def test_a_failing_prompts_list_is_reported_while_the_tools_are_served() -> None:
    with uvicorn_serving(half_broken_upstream) as upstream_url:  # type: ignore[arg-type]
        gateway = GatewayServer(
            [Upstream(name="half", transport="http", url=upstream_url, protocol_version="2025-11-25")],
            allowed_networks=LOOPBACK,
            watch=False,
        )
        with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(10):
            async with connect(f"{url}/mcp", "legacy") as client:
                tools = [tool.name for tool in (await client.list_tools()).tools]
                prompts = (await client.list_prompts()).prompts
    assert tools == ["mcp__half__ok"]
    assert prompts == []
    assert gateway.failures == {"half/prompts": "-32603: prompts/list is broken"}


async def test_a_stateless_upstreams_envelope_does_not_reach_a_handshake_era_client(gateway_url: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        session = await McpHttp(http, path=gateway_url).initialize()
        response = await session.request("tools/call", {"name": "mcp__alpha__add", "arguments": {"a": 1, "b": 1}})
        prompt = await session.request("prompts/get", {"name": "mcp__alpha__greeting", "arguments": {"name": "Ada"}})
    result = response.json()["result"]  # schema-checked against 2025-11-25 by the session
    assert result["structuredContent"] == {"result": 2}
    assert "resultType" not in result and "_meta" not in result  # alpha speaks 2026-07-28; this client does not
    assert "resultType" not in prompt.json()["result"]
