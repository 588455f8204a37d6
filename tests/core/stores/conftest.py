"""The store backends the contract tests run against: in-memory, the real redis-server on 127.0.0.1:6379, a Redis
Cluster of the session's own, and DynamoDB (moto in process, and moto's server)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from moto import mock_aws

from stratus.stores.base import StoreOptions
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.factory import build_stores
from tests.fixtures.clocks import FakeClock
from tests.fixtures.store_backends import MAX_EVENTS, REDIS_URL, TTL, Backend


@contextmanager
def dynamodb_backend(endpoint: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process when `endpoint` is None, else the threaded server at `endpoint`."""
    if endpoint is None:
        with mock_aws():
            yield
    else:
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        yield


@pytest.fixture(params=["memory", "redis", "redis-cluster", "dynamodb", "dynamodb-server"])
async def backend(request: pytest.FixtureRequest, aws_credentials: None) -> AsyncIterator[Backend]:
    clock = FakeClock()
    if request.param.startswith("dynamodb"):
        endpoint = request.getfixturevalue("moto_server") if request.param == "dynamodb-server" else None
        with dynamodb_backend(endpoint, request.getfixturevalue("monkeypatch")):
            client = dynamodb_client(timeout=2.0)
            table = f"stratus-test-{secrets.token_hex(4)}"
            create_table(client, table)
            stores = dynamodb_stores(
                client, table, StoreOptions(prefix="t", session_ttl_seconds=TTL, timeout=2.0, clock=clock)
            )
            stores.events.max_events = MAX_EVENTS  # type: ignore[attr-defined]
            try:
                yield Backend(request.param, stores, clock, dynamo=client, table=table)
            finally:
                client.delete_table(TableName=table)
        return
    if request.param == "memory":
        stores = build_stores("memory://", StoreOptions(session_ttl_seconds=TTL, clock=clock))
        stores.events.max_events = MAX_EVENTS  # type: ignore[attr-defined]
        yield Backend("memory", stores, clock)
        return
    prefix = f"stratus-test-{secrets.token_hex(4)}"
    url = request.getfixturevalue("redis_cluster").url if request.param == "redis-cluster" else REDIS_URL
    stores = build_stores(url, StoreOptions(session_ttl_seconds=TTL, prefix=prefix, clock=clock))
    stores.events.max_events = MAX_EVENTS  # type: ignore[attr-defined]
    client = stores.sessions.scripts.client  # type: ignore[attr-defined]
    try:
        yield Backend(request.param, stores, clock, client, prefix)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await stores.aclose()  # both pools: the calls' and the long waits'


@pytest.fixture
def table(aws_credentials: None) -> Iterator[tuple[Any, str]]:
    """A fresh table on moto in process: its client and name."""
    with mock_aws():
        client = dynamodb_client(timeout=2.0)
        name = f"stratus-{secrets.token_hex(4)}"
        create_table(client, name)
        yield client, name


@pytest.fixture
def server_table(moto_server: str, aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh table on moto's server, which every client made in the test reaches: its name."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    name = f"stratus-{secrets.token_hex(4)}"
    create_table(dynamodb_client(timeout=30.0), name)
    return name
