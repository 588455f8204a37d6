"""The gateway's upstream client against real MCP servers on 127.0.0.1: Stratus in either era (found by
server/discover, or pinned to the handshake), and a server built with the official Python SDK."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stratus import Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.operations import check_connection, discover
from stratus.gateway.upstream_client import UpstreamClient, UpstreamError, UpstreamUnavailableError
from tests.fixtures import sdk_upstream
from tests.fixtures.processes import free_port
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.fixture(scope="module")
def stratus_upstream() -> Iterator[str]:
    with uvicorn_serving(build_app(sample, Settings())) as url:
        yield f"{url}/mcp"


@pytest.mark.parametrize("pinned", [None, "2025-11-25", "2025-06-18"])
async def test_a_stratus_upstream_is_used_in_the_era_found_or_pinned(stratus_upstream: str, pinned: str | None) -> None:
    client = UpstreamClient(Upstream(name="sample", transport="http", url=stratus_upstream, protocol_version=pinned))
    try:
        await client.connect()
        assert client.version == (pinned or "2026-07-28")
        assert (client.session_id is not None) == (pinned is not None)  # a handshake-era upstream has a session
        assert client.server_info["name"] == "stratus-sample"
        names = [tool["name"] for tool in await client.list_tools()]
        assert {"add", "divide"} <= set(names)
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added["structuredContent"] == {"result": 5}
        refused = await client.call_tool("divide", {"numerator": 1, "denominator": 0})
        assert refused["isError"] is True  # the upstream's tool error passes through unchanged
        with pytest.raises(UpstreamError) as unknown:
            await client.call_tool("no-such-tool", {})
        assert unknown.value.error["code"] == -32602
    finally:
        await client.close()


async def test_an_sdk_upstream_answering_in_sse_is_read_from_its_stream() -> None:
    with uvicorn_serving(sdk_upstream.multiply_app(), lifespan="on") as url:  # type: ignore[arg-type]
        client = UpstreamClient(Upstream(name="sdk", transport="http", url=f"{url}/mcp"))
        try:
            await client.connect()
            assert [tool["name"] for tool in await client.list_tools()] == ["multiply"]
            assert (await client.call_tool("multiply", {"a": 6, "b": 7}))["structuredContent"] == {"result": 42}
        finally:
            await client.close()


async def test_an_upstream_that_is_not_there_is_unavailable_not_a_crash() -> None:
    client = UpstreamClient(
        Upstream(name="gone", transport="http", url=f"http://127.0.0.1:{free_port()}/mcp"), timeout=2.0
    )
    with pytest.raises(UpstreamUnavailableError) as refused:
        await client.connect()
    assert str(refused.value) == "gone did not answer: ConnectionRefusedError"
    await client.close()


async def test_discovery_lists_tools_prompts_and_resources_and_reports_what_an_upstream_lacks(
    stratus_upstream: str,
) -> None:
    client = UpstreamClient(Upstream(name="sample", transport="http", url=stratus_upstream))
    try:
        await client.connect()
        found = await discover(client)
    finally:
        await client.close()
    assert found.version == "2026-07-28" and found.failures == {}
    assert {"add", "divide"} <= {tool["name"] for tool in found.tools}
    assert found.prompts and found.resources

    with uvicorn_serving(sdk_upstream.multiply_app(), lifespan="on") as url:  # type: ignore[arg-type]
        sdk = UpstreamClient(Upstream(name="sdk", transport="http", url=f"{url}/mcp"))
        try:
            await sdk.connect()
            partial = await discover(sdk)
        finally:
            await sdk.close()
    assert [tool["name"] for tool in partial.tools] == ["multiply"]
    assert (partial.version, partial.prompts, partial.resources, partial.failures) == ("2026-07-28", [], [], {})


async def test_the_connection_test_names_the_tools_or_the_reason(stratus_upstream: str) -> None:
    passed = await check_connection(Upstream(name="sample", transport="http", url=stratus_upstream), guard=None)
    assert passed.ok and "add" in passed.tools and passed.error is None
    failed = await check_connection(
        Upstream(name="gone", transport="http", url=f"http://127.0.0.1:{free_port()}/mcp"), guard=None, within=2.0
    )
    assert (failed.ok, failed.tools, failed.error) == (False, [], "gone did not answer: ConnectionRefusedError")
