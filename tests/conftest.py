from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from core import McpServer, Settings, build_app
from core.pipeline.metrics import LocalMetrics
from examples.demo import server as demo_server
from tests.wire import McpHttp


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client_for(
    server: McpServer, settings: Settings | None = None, *, metrics: LocalMetrics | None = None
) -> httpx.AsyncClient:
    app = build_app(server, settings or Settings(), metrics=metrics)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


@pytest.fixture
async def mcp() -> AsyncIterator[McpHttp]:
    """A client of the demo server on a fresh app (fresh in-memory store)."""
    async with client_for(demo_server) as http:
        yield McpHttp(http)
