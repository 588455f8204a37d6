from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack

import pytest

from tests.fixtures.clients import McpFactory, mcp_clients
from tests.fixtures.moto_server import SerialMotoServer
from tests.fixtures.redis_cluster import OwnRedisCluster
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.wire import McpHttp


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Every async test runs on asyncio, the loop Lambda and uvicorn use."""
    return "asyncio"


@pytest.fixture
async def mcp_factory() -> AsyncIterator[McpFactory]:
    """Builds a conforming MCP client of any server's app, in process; each app is shut down after the test."""
    async with AsyncExitStack() as stack:
        yield mcp_clients(stack)


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    """A client of the tests' sample server on a fresh app (fresh in-memory store)."""
    return await mcp_factory(sample_server)


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region for boto3: the tests talk only to moto."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto's threaded server: DynamoDB as a real HTTP endpoint on 127.0.0.1."""
    server = SerialMotoServer()
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    """A redis-server of the test's own (fault tests stop, restart, flush and pause it)."""
    server = OwnRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[OwnRedisCluster]:
    """A Redis Cluster of the session's own (three primaries, three replicas), started once and ended by PID."""
    cluster = OwnRedisCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
