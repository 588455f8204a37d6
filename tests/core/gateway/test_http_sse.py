"""The gateway's upstream client over the legacy HTTP+SSE transport (2024-11-05): a server built with the official
Python SDK (`sse_app()`) on 127.0.0.1, and small raw ASGI servers for what a well-behaved one never does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from mcp.server.transport_security import TransportSecuritySettings

from stratus.gateway.config import Upstream
from stratus.gateway.connectors.http_sse import HttpSseTransport
from stratus.gateway.upstream_client import UpstreamClient, UpstreamUnavailableError
from stratus.net.request_body import read_body
from stratus.transport.asgi import until_disconnected
from stratus.types import Receive, Scope, Send
from tests.fixtures.sdk_upstream import build
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.upstream_connections import connected_client, refused_connection

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

TIMEOUT = 10.0
QUICKLY = 5.0
"""Well under TIMEOUT: a failure seen within it was noticed, not waited out."""


@pytest.fixture(scope="module")
def sdk_sse_url() -> Iterator[str]:
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    with uvicorn_serving(build().sse_app(transport_security=security), lifespan="on") as url:
        yield f"{url}/sse"


@pytest.fixture
async def connected(sdk_sse_url: str) -> AsyncIterator[UpstreamClient]:
    async with connected_client(
        Upstream(name="sdk", transport="sse", url=sdk_sse_url), request_seconds=TIMEOUT
    ) as client:
        yield client


async def test_a_closed_transport_refuses_further_calls(connected: UpstreamClient) -> None:
    await connected.close()
    with pytest.raises(UpstreamUnavailableError):
        await connected.call_tool("add", {"a": 1, "b": 2})


class EndpointOnly:
    """A raw legacy SSE server whose stream names `endpoint` and then idles until the client leaves."""

    def __init__(self, endpoint: str | None) -> None:
        self.endpoint = endpoint
        self.posts = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "POST":
            self.posts += 1
            await read_body(receive)
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        first = f"event: endpoint\ndata: {self.endpoint}\n\n" if self.endpoint else ": no endpoint here\n\n"
        await send({"type": "http.response.body", "body": first.encode(), "more_body": True})
        await until_disconnected(receive)


@pytest.mark.parametrize(
    "endpoint",
    ["http://169.254.169.254/x", "//169.254.169.254/x", "https://127.0.0.1/messages", "http://127.0.0.1:1/messages"],
)
async def test_an_endpoint_on_another_origin_is_refused_before_anything_is_posted(endpoint: str) -> None:
    app = EndpointOnly(endpoint)
    with uvicorn_serving(app) as url:
        await refused_connection(
            Upstream(name="evil", transport="sse", url=f"{url}/sse"), request_seconds=TIMEOUT, within=QUICKLY
        )
    assert app.posts == 0


async def test_a_relative_endpoint_on_the_same_origin_is_posted_to() -> None:
    app = EndpointOnly("/messages?session=1")
    with uvicorn_serving(app) as url:
        transport = HttpSseTransport(f"{url}/sse", {}, timeout=TIMEOUT)
        try:
            await transport.open()
            assert transport.endpoint == f"{url}/messages?session=1"
            await transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        finally:
            await transport.close()
    assert app.posts == 1


async def test_a_stream_that_names_no_endpoint_is_given_up_on_within_the_timeout() -> None:
    with uvicorn_serving(EndpointOnly(None)) as url:
        await refused_connection(
            Upstream(name="mute", transport="sse", url=f"{url}/sse"), request_seconds=1.0, within=QUICKLY
        )


class EndsOnFirstMessage:
    """A raw legacy SSE server that ends its stream, unanswered, as soon as a message is posted."""

    def __init__(self) -> None:
        self.posted: asyncio.Event | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.posted = self.posted or asyncio.Event()
        if scope["method"] == "POST":
            await read_body(receive)
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            self.posted.set()
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"event: endpoint\ndata: /messages\n\n", "more_body": True})
        async with asyncio.timeout(QUICKLY):
            await self.posted.wait()
        await send({"type": "http.response.body", "body": b""})


async def test_the_stream_ending_fails_the_waiting_request_at_once() -> None:
    with uvicorn_serving(EndsOnFirstMessage()) as url:
        client = UpstreamClient(Upstream(name="fickle", transport="sse", url=f"{url}/sse"), timeout=TIMEOUT)
        try:
            with pytest.raises(UpstreamUnavailableError):
                async with asyncio.timeout(QUICKLY):
                    await client.connect()  # the initialize request waits on the stream
        finally:
            await client.close()
