"""What the upstream client does the same over both transports whose answers share one inbound stream (stdio and
the legacy HTTP+SSE transport), against one server built with the official Python SDK on each: the handshake,
calls and their errors, progress and questions reaching the peer of the call they are about."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator

import pytest
from mcp.server.transport_security import TransportSecuritySettings

from stratus.gateway.config import Upstream
from stratus.gateway.upstream_client import UpstreamClient, UpstreamError
from tests.fixtures import sdk_upstream
from tests.fixtures.peers import RecordingPeer, text_of
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.upstream_connections import connected_client

pytestmark = pytest.mark.anyio
TIMEOUT = 20.0
"""The client's timeout: generous, since the SDK takes a second or two to import on a busy machine."""
QUICKLY = 5.0
"""Well under TIMEOUT: a failure seen within it was noticed, not waited out."""


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    with uvicorn_serving(sdk_upstream.build().sse_app(transport_security=security), lifespan="on") as url:
        yield f"{url}/sse"


@pytest.fixture(scope="module", params=["stdio", "sse"])
async def connected(request: pytest.FixtureRequest) -> AsyncIterator[UpstreamClient]:
    if request.param == "stdio":
        upstream = Upstream(name="sdk", transport="stdio", command=sys.executable, args=(sdk_upstream.__file__,))
    else:
        upstream = Upstream(name="sdk", transport="sse", url=request.getfixturevalue("sse_url"))
    async with connected_client(upstream, request_seconds=TIMEOUT) as client:
        yield client


async def test_an_sdk_upstream_shakes_hands_lists_its_tools_and_answers_calls(connected: UpstreamClient) -> None:
    assert connected.version == "2025-11-25"
    assert connected.server_info["name"] == "sdk-upstream"
    assert {"add", "fail", "refuse", "count", "greet"} <= {tool["name"] for tool in await connected.list_tools()}
    assert (await connected.call_tool("add", {"a": 2, "b": 3}))["structuredContent"] == {"result": 5}
    assert (await connected.call_tool("fail", {}))["isError"] is True  # the tool's own failure passes through
    with pytest.raises(UpstreamError) as refused:
        await connected.call_tool("refuse", {})
    assert refused.value.error["code"] == sdk_upstream.REFUSED_CODE  # the JSON-RPC error passes through unchanged


async def test_progress_reaches_the_peer_of_the_call_it_is_about(connected: UpstreamClient) -> None:
    counting = RecordingPeer()
    assert (await connected.call_tool("count", {"steps": 3}, peer=counting))["structuredContent"] == {"result": 3}
    assert [params["progress"] for _, params in counting.notified] == [1, 2, 3]


async def test_progress_of_an_older_call_is_not_given_to_a_newer_one(connected: UpstreamClient) -> None:
    older, newer = RecordingPeer("Ada", release=asyncio.Event()), RecordingPeer("Grace", release=asyncio.Event())
    async with asyncio.timeout(QUICKLY):
        first = asyncio.create_task(connected.call_tool("greet", {}, peer=older))
        await older.was_asked.wait()
        second = asyncio.create_task(connected.call_tool("greet", {}, peer=newer))
        await newer.was_asked.wait()  # each question went to the call waiting most recently when it came
        assert older.release is not None and newer.release is not None
        older.release.set()
        assert text_of(await first) == "hello Ada"  # its progress came while the newer call was waiting
        newer.release.set()
        assert text_of(await second) == "hello Grace"
    assert [method for method, _ in older.notified] == ["notifications/progress"]
    assert [method for method, _ in newer.notified] == ["notifications/progress"]


async def test_an_elicitation_reaches_the_peer_and_its_answer_reaches_the_tool(connected: UpstreamClient) -> None:
    peer = RecordingPeer("Grace")
    greeted = await connected.call_tool("greet", {}, peer=peer)
    assert (peer.asked, text_of(greeted)) == (["elicitation/create"], "hello Grace")
