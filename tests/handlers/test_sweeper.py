"""The scheduled sweeper removes expired sessions from the shared store, frees their places, keeps live ones."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from moto import mock_aws

from stratus.handlers import sweeper
from stratus.stores.base import StoreOptions
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.factory import build_stores
from stratus.stores.records import SessionRecord
from tests.fixtures.keys import SECRET_KEY

TTL = 600


@dataclass
class Store:
    url: str
    prefix: str


@pytest.fixture(params=["redis", "dynamodb"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    prefix = f"sweep-{secrets.token_hex(4)}"
    monkeypatch.setenv("STRATUS_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("STRATUS_STORE_PREFIX", prefix)
    monkeypatch.setenv("STRATUS_SESSION_TTL_SECONDS", str(TTL))
    if request.param == "redis":
        url = "redis://127.0.0.1:6379/0"
        monkeypatch.setenv("STRATUS_STORE", url)
        yield Store(url, prefix)
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()
        return
    request.getfixturevalue("aws_credentials")
    with mock_aws():
        create_table(dynamodb_client(timeout=2.0), prefix)
        url = f"dynamodb://{prefix}"
        monkeypatch.setenv("STRATUS_STORE", url)
        yield Store(url, prefix)


async def open_sessions(store: Store, names: list[str], *, created_ago: float, limit: int) -> None:
    stores = build_stores(
        store.url,
        StoreOptions(
            session_ttl_seconds=TTL, prefix=store.prefix, max_sessions=limit, clock=lambda: time.time() - created_ago
        ),
    )
    try:
        for name in names:
            await stores.sessions.create(SessionRecord(session_id=name, protocol_version="2025-11-25"))
    finally:
        await stores.aclose()


@pytest.mark.parametrize("limit", [0, 100], ids=["no-limit", "limit"])
def test_the_sweeper_removes_expired_sessions_and_reports_the_live_count(
    store: Store, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a limit the count is kept on every create and DELETE; with none, the sweep reports what it saw live."""
    monkeypatch.setenv("STRATUS_MAX_SESSIONS", str(limit))
    asyncio.run(open_sessions(store, ["stale-1", "stale-2"], created_ago=TTL + 60, limit=limit))
    asyncio.run(open_sessions(store, ["fresh"], created_ago=0, limit=limit))

    assert sweeper.handler({"source": "aws.events"}, None) == {"swept": 2, "activeSessions": 1}
    assert sweeper.handler({"source": "aws.events"}, None) == {"swept": 0, "activeSessions": 1}


def test_the_sweeper_sweeps_on_the_first_deploy_of_the_front_without_an_audience(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AuthMode=front before the second deploy sets AuthAudience: the serving functions answer 503 naming it, and
    the scheduled sweep still runs (the auth settings are not the sweeper's; its client secret is not read)."""
    for name, value in {
        "STRATUS_AUTH_MODE": "front",
        "STRATUS_AUTH_UPSTREAM_ISSUER": "https://idp.example.com",
        "STRATUS_AUTH_UPSTREAM_CLIENT_ID": "stratus",
        "STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": "ssm:/stratus/upstream-client-secret",
    }.items():
        monkeypatch.setenv(name, value)
    asyncio.run(open_sessions(store, ["stale"], created_ago=TTL + 60, limit=100))
    assert sweeper.handler({"source": "aws.events"}, None) == {"swept": 1, "activeSessions": 0}
