"""`ws://` upstreams: the official SDK's server over MCP-over-WebSocket (subprotocol `mcp`), reached through the
gateway with progress passed on, refused by the address guard as HTTP upstreams are, and refused when it will
not speak `mcp`."""

from __future__ import annotations

import anyio
import pytest

from stratus.gateway.config import Upstream, parse_servers
from stratus.gateway.served import GatewayServer
from stratus.gateway.upstream_client import UpstreamClient, UpstreamUnavailableError
from tests.fixtures import sdk_upstream
from tests.fixtures.clients import client_for
from tests.fixtures.wire import BASE_HEADERS, McpHttp

pytestmark = pytest.mark.anyio


async def test_a_websocket_upstreams_tools_are_served_and_called_through_the_gateway() -> None:
    async with sdk_upstream.websocket_serving() as url:
        (upstream,) = parse_servers({"mcpServers": {"ws": {"url": url}}})
        assert upstream.transport == "websocket"
        gateway = GatewayServer([upstream], allowed_networks=["127.0.0.0/8"], use_records=False, watch=False)
        with anyio.fail_after(20):
            async with client_for(gateway) as http:
                session = await McpHttp(http).initialize()
                headers = {**BASE_HEADERS, **session.headers}
                call = {"name": "mcp__ws__add", "arguments": {"a": 2, "b": 3}}
                answer = await http.post(
                    "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, headers=headers
                )
            await gateway.aclose()
    assert answer.json()["result"]["structuredContent"] == {"result": 5}


async def test_a_websocket_upstream_is_refused_by_the_address_guard_and_without_the_mcp_subprotocol() -> None:
    from stratus.net.addresses import AddressGuard

    async with sdk_upstream.websocket_serving() as url, sdk_upstream.websocket_serving("other") as other:
        refused = UpstreamClient(Upstream(name="ws", transport="websocket", url=url), guard=AddressGuard())
        unknown = UpstreamClient(Upstream(name="odd", transport="websocket", url=other), timeout=5)
        with anyio.fail_after(20):
            with pytest.raises(UpstreamUnavailableError) as address:
                await refused.connect()
            with pytest.raises(UpstreamUnavailableError) as subprotocol:
                await unknown.connect()
        await refused.close()
        await unknown.close()
    assert str(address.value) == (
        "ws its address is not allowed (private, loopback, link-local or reserved; "
        "allow its network with STRATUS_GATEWAY_ALLOWED_NETWORKS)"
    )
    assert str(subprotocol.value).startswith("odd refused the WebSocket handshake")
