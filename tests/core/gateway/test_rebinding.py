"""A gateway's upstream whose name answers an allowed address first and a refused one later (DNS rebinding) reaches
only the allowed one: each new connection resolves the name once, is checked, and goes to the checked address.

The name is `localhost`, answered by a scripted resolver (the system resolver is never asked). The allowed address
is 127.0.0.2 (STRATUS_GATEWAY_ALLOWED_NETWORKS=127.0.0.2/32), where the real upstream listens; the refused one is
127.0.0.1, where a listener on the same port records anything that reaches it, the upstream's secret header
included. Linux routes all of 127.0.0.0/8 to lo, so no packet leaves the machine."""

from __future__ import annotations

import asyncio
import sys

import anyio
import pytest
from mcp.server.transport_security import TransportSecuritySettings

from stratus import Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.gateway.upstream_client import UpstreamClient, UpstreamUnavailableError
from stratus.net.addresses import AddressGuard, parse_allowed_networks
from tests.fixtures import sdk_upstream
from tests.fixtures.addresses import ScriptedResolver, capturing_listener
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
ALLOWED = "127.0.0.2"
REFUSED = "127.0.0.1"
SECRET = {"authorization": "Bearer upstream-secret"}
TIMEOUT = 10.0


async def test_a_gateway_upstream_that_rebinds_to_loopback_is_refused_before_any_connection() -> None:
    resolver = ScriptedResolver([ALLOWED], [REFUSED])
    async with capturing_listener(REFUSED) as loopback_service:
        port = loopback_service.port
        with uvicorn_serving(build_app(sample, Settings()), host=ALLOWED, port=port):
            upstream = Upstream(name="rebinder", transport="http", url=f"http://localhost:{port}/mcp", headers=SECRET)
            gateway = GatewayServer(
                [upstream], allowed_networks=(f"{ALLOWED}/32",), address_resolver=resolver, watch=False
            )
            try:
                with anyio.fail_after(TIMEOUT):
                    client = await gateway.pool.client("rebinder")  # its first connection: checked, to 127.0.0.2
                    # Two requests at once: one takes the pooled connection, the other needs a new one.
                    first, second = await asyncio.gather(
                        client.list_tools(), client.list_tools(), return_exceptions=True
                    )
            finally:
                await gateway.aclose()
    assert isinstance(first, list) and {"add", "divide"} <= {tool["name"] for tool in first}
    assert isinstance(second, UpstreamUnavailableError)
    refusal = str(second)
    assert refusal.startswith("rebinder its address is not allowed") and "STRATUS_GATEWAY_ALLOWED_NETWORKS" in refusal
    assert REFUSED not in refusal  # the internal address is for the log only
    assert resolver.asked == ["localhost", "localhost"]  # once per new connection
    assert loopback_service.received == []  # neither the request nor its secret header reached 127.0.0.1


@pytest.mark.parametrize("later", [[ALLOWED], [REFUSED]], ids=["stays allowed", "rebinds to loopback"])
async def test_a_handshake_sse_upstream_posts_only_on_checked_connections(later: list[str]) -> None:
    """The stream holds one connection; the messages go on others, each checked as it is opened."""
    resolver = ScriptedResolver([ALLOWED], later)
    guard = AddressGuard(parse_allowed_networks(f"{ALLOWED}/32"), resolver)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = sdk_upstream.build().sse_app(transport_security=security)
    async with capturing_listener(REFUSED) as loopback_service:
        port = loopback_service.port
        with uvicorn_serving(app, lifespan="on", host=ALLOWED, port=port):
            url = f"http://localhost:{port}/sse"
            client = UpstreamClient(Upstream(name="sse", transport="sse", url=url, headers=SECRET), guard=guard)
            try:
                with anyio.fail_after(TIMEOUT):
                    if later == [ALLOWED]:
                        await client.connect()
                        assert (await client.call_tool("add", {"a": 1, "b": 2}))["content"][0]["text"] == "3"
                    else:
                        with pytest.raises(UpstreamUnavailableError, match="its address is not allowed"):
                            await client.connect()
            finally:
                await client.close()
    assert len(resolver.asked) >= 2  # the stream's connection and at least one for messages
    assert loopback_service.received == []


async def test_a_stdio_upstream_is_served_beside_the_guard() -> None:
    """The guard is about addresses: a local process upstream has none and is not refused (no network allowed)."""
    gateway = GatewayServer(
        [Upstream(name="files", transport="stdio", command=sys.executable, args=(sdk_upstream.__file__,))],
        address_resolver=ScriptedResolver([REFUSED]),
        watch=False,
    )
    try:
        with anyio.fail_after(TIMEOUT):
            client = await gateway.pool.client("files")
            assert await client.list_tools()
    finally:
        await gateway.aclose()
