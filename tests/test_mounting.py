"""Stratus mounted under a path prefix inside a Starlette app and inside a FastAPI app, served by uvicorn on
127.0.0.1: the official SDK client in both eras, a session's GET stream, the session REST API and the OAuth
metadata all work below the prefix, the host's own routes still answer, and the host's lifespan ends Stratus's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.client import ConnectMode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from stratus import McpServer, Settings, build_app
from stratus.transport.asgi import Router
from tests.fixtures.apps import shared
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

PREFIX = "/mcp-prefix"
TIMEOUT_SECONDS = 10.0
Host = Callable[[Router], Starlette]


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("the host's own route")


def starlette_host(mcp: Router) -> Starlette:
    """The Starlette way: Stratus under a Mount, its lifespan the app's."""
    return Starlette(routes=[Route("/hello", hello), Mount(PREFIX, app=mcp)], lifespan=mcp.lifespan)


def fastapi_host(mcp: Router) -> Starlette:
    """The FastAPI way: `app.mount`, Stratus's lifespan entered inside the host's own."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.lifespan():
            yield

    app = FastAPI(lifespan=lifespan)
    app.add_api_route("/hello", hello)
    app.mount(PREFIX, mcp)
    return app


@pytest.fixture(params=[starlette_host, fastapi_host], ids=["starlette", "fastapi"])
def host(request: pytest.FixtureRequest) -> Host:
    factory: Host = request.param
    return factory


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")], ids=["2026-07-28", "2025-11-25"]
)
async def test_the_sdk_client_calls_a_tool_of_stratus_mounted_under_a_prefix(
    host: Host, mode: ConnectMode, version: str
) -> None:
    with uvicorn_serving(host(build_app(sample_server, Settings())), lifespan="on") as base_url:
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with Client(f"{base_url}{PREFIX}/mcp", mode=mode, read_timeout_seconds=5.0) as client:
                assert client.protocol_version == version
                assert [tool.name for tool in (await client.list_tools()).tools] == ["add", "forecast", "divide"]
                result = await client.call_tool("add", {"a": 2, "b": 3})
            async with httpx.AsyncClient(base_url=base_url) as http:
                own = await http.get("/hello")
                unprefixed = await http.post("/mcp", json={}, headers=BASE_HEADERS)
    assert result.structured_content == {"result": 5}
    assert (own.status_code, own.text) == (200, "the host's own route")
    assert unprefixed.status_code == 404


async def test_a_get_stream_and_the_session_rest_api_work_below_the_prefix(host: Host) -> None:
    with uvicorn_serving(host(build_app(shared, Settings())), lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT_SECONDS) as http:
            with anyio.fail_after(TIMEOUT_SECONDS):
                session = await McpHttp(http, path=f"{PREFIX}/mcp").initialize()
                headers = {**BASE_HEADERS, **session.headers}
                async with http.stream("GET", f"{PREFIX}/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"] == "text/event-stream"
                    touched = await session.request("tools/call", {"name": "reshuffle_tools", "arguments": {}})
                    assert touched.status_code == 200
                    async for line in stream.aiter_lines():
                        if '"notifications/tools/list_changed"' in line:
                            break

                created = await http.post(f"{PREFIX}/session", headers={"content-type": "application/json"})
                assert created.status_code == 200
                rest_id = created.json()["sessionId"]
                body = {
                    "sessionId": rest_id,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
                }
                added = await http.post(f"{PREFIX}/mcp", json=body)
                assert added.json()["result"]["structuredContent"] == {"result": 3}
                async with http.stream("GET", f"{PREFIX}/events/{rest_id}") as events:
                    assert events.status_code == 200
                    assert events.headers["content-type"] == "text/event-stream"
                deleted = await http.delete(f"{PREFIX}/session/{rest_id}")
                assert deleted.status_code in (200, 204)
                gone = await http.post(f"{PREFIX}/mcp", json=body)
                assert gone.status_code == 404


async def test_a_401_below_the_prefix_points_at_metadata_the_mounted_app_serves(host: Host) -> None:
    settings = Settings(
        auth_mode="jwt",
        auth_issuer="https://issuer.example",
        auth_audience="http://127.0.0.1/mcp-prefix/mcp",
        auth_jwks_url="https://issuer.example/jwks",
        auth_stage_path=PREFIX,
    )
    with uvicorn_serving(host(build_app(sample_server, settings)), lifespan="on") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT_SECONDS) as http:
            refused = await McpHttp(http, path=f"{PREFIX}/mcp").post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
            challenge = refused.headers["www-authenticate"]
            metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
            assert metadata_url == "http://127.0.0.1/mcp-prefix/.well-known/oauth-protected-resource/mcp"
            metadata = await http.get(metadata_url.removeprefix("http://127.0.0.1"))
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "http://127.0.0.1/mcp-prefix/mcp"


class ClosingServer(McpServer):
    """A server holding something to release at shutdown, as a gateway holds its upstream connections."""

    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_the_hosts_lifespan_shuts_stratus_down(host: Host) -> None:
    server = ClosingServer("closing", "1.0.0")
    with uvicorn_serving(host(build_app(server, Settings())), lifespan="on"):
        assert server.closed == 0
    assert server.closed == 1
