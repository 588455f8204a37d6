"""Refreshes of the issuer's key set are rationed: anyone can send a token naming a made-up `kid`.

The issuer is a real HTTP server on 127.0.0.1 (tests/core/auth/conftest.py) that counts requests and can be held
(a slow issuer) or made to fail; the key set's clock is injected.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from stratus.auth.bearer import JwtAuthenticator, ResourceServer
from stratus.auth.jwks import KeySet
from stratus.errors import UnauthorizedError
from stratus.stores.base import StoreOptions
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, Issuer

pytestmark = pytest.mark.anyio

UNAVAILABLE = "Token keys are unavailable; try again (they are fetched from STRATUS_AUTH_JWKS_URL)"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def authenticator_for(issuer: Issuer, clock: Clock) -> JwtAuthenticator:
    return JwtAuthenticator(ResourceServer(ISSUER, AUDIENCE), KeySet(issuer.url, clock=clock))


async def made_up_kid(authenticator: JwtAuthenticator, issuer: Issuer) -> UnauthorizedError:
    """The refusal of a well-formed token naming a key the issuer never published."""
    if "rogue" not in issuer.keys:
        issuer.add_key("rogue", publish=False)
    with pytest.raises(UnauthorizedError) as refused:
        await authenticator.authenticate(bearer(issuer.token(f"made-up-{secrets.token_hex(4)}", sign_with="rogue")), {})
    return refused.value


def storm(authenticator: JwtAuthenticator, issuer: Issuer, count: int = 40) -> list[asyncio.Future[object]]:
    return [asyncio.ensure_future(made_up_kid(authenticator, issuer)) for _ in range(count)]


@asynccontextmanager
async def held_issuer(issuer: Issuer) -> AsyncIterator[asyncio.Event]:
    """The issuer holds every JWKS request until the block ends; the event is set when the first one arrives."""
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()
    gate = threading.Event()
    issuer.gate = gate

    def arrive() -> None:
        loop.call_soon_threadsafe(arrived.set)

    issuer.on_request = arrive
    try:
        yield arrived
    finally:
        gate.set()


@pytest.mark.parametrize("status", [200, 503], ids=["answering", "failing"])
async def test_forty_made_up_kids_during_a_slow_fetch_make_one_fetch(issuer: Issuer, status: int) -> None:
    clock = Clock()
    authenticator = authenticator_for(issuer, clock)
    await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
    clock.now = 61.0  # past the refresh interval: an unknown kid may refresh the set
    issuer.status = status
    async with held_issuer(issuer) as arrived:
        garbage = storm(authenticator, issuer)
        async with asyncio.timeout(5):
            await arrived.wait()
            principal = await authenticator.authenticate(bearer(issuer.token("rsa-1", sub="ana")), {})
        assert principal.subject == "ana"  # a known key verifies while the fetch hangs
    async with asyncio.timeout(5):
        refused = await asyncio.gather(*garbage)
    assert all(isinstance(error, UnauthorizedError) for error in refused)
    assert issuer.requests == 2


async def test_after_a_refresh_unknown_kids_wait_for_the_refresh_interval(issuer: Issuer) -> None:
    clock = Clock()
    authenticator = authenticator_for(issuer, clock)
    await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
    clock.now = 61.0
    assert (await made_up_kid(authenticator, issuer)).message == "Invalid token"
    assert issuer.requests == 2
    issuer.add_key("rsa-2")  # rotated in just after that refresh
    clock.now = 61.0 + 59.9
    for _ in range(5):
        await made_up_kid(authenticator, issuer)
    with pytest.raises(UnauthorizedError):
        await authenticator.authenticate(bearer(issuer.token("rsa-2")), {})
    assert issuer.requests == 2
    clock.now = 121.0
    principal = await authenticator.authenticate(bearer(issuer.token("rsa-2", sub="rotated")), {})
    assert principal.subject == "rotated" and issuer.requests == 3


async def test_a_failing_issuer_is_retried_with_capped_exponential_backoff(issuer: Issuer) -> None:
    clock = Clock()
    authenticator = authenticator_for(issuer, clock)
    await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
    issuer.status = 503
    clock.now = 61.0
    assert (await made_up_kid(authenticator, issuer)).message == UNAVAILABLE
    assert issuer.requests == 2
    for delay in (1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300):
        failed_at, requests = clock.now, issuer.requests
        clock.now = failed_at + delay - 0.01
        assert (await made_up_kid(authenticator, issuer)).message == UNAVAILABLE
        principal = await authenticator.authenticate(bearer(issuer.token("rsa-1", sub="ana")), {})
        assert principal.subject == "ana"  # known keys keep verifying through the back-off
        assert issuer.requests == requests
        clock.now = failed_at + delay
        await made_up_kid(authenticator, issuer)
        assert issuer.requests == requests + 1
    issuer.status = 200
    issuer.add_key("rsa-2")
    clock.now += 300
    principal = await authenticator.authenticate(bearer(issuer.token("rsa-2", sub="rotated")), {})
    assert principal.subject == "rotated"
    requests = issuer.requests
    assert (await made_up_kid(authenticator, issuer)).message == "Invalid token"  # healthy again: 60 s interval
    assert issuer.requests == requests


async def test_an_issuer_down_at_cold_start_is_not_asked_again_for_every_token(issuer: Issuer) -> None:
    clock = Clock()
    authenticator = authenticator_for(issuer, clock)
    issuer.status = 503
    for _ in range(5):
        with pytest.raises(UnauthorizedError) as refused:
            await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
        assert refused.value.message == UNAVAILABLE
    assert issuer.requests == 1
    issuer.status = 200
    clock.now = 1.0
    principal = await authenticator.authenticate(bearer(issuer.token("rsa-1", sub="ana")), {})
    assert principal.subject == "ana" and issuer.requests == 2


async def test_a_dynamodb_call_completes_while_jwks_fetches_hang(
    issuer: Issuer, aws_credentials: None, moto_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    client = dynamodb_client(timeout=2.0)
    table = f"stratus-jwks-{secrets.token_hex(4)}"
    create_table(client, table)
    stores = dynamodb_stores(client, table, StoreOptions(prefix="t", session_ttl_seconds=600, timeout=2.0))
    clock = Clock()
    authenticator = authenticator_for(issuer, clock)
    await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
    clock.now = 61.0
    try:
        async with held_issuer(issuer) as arrived:
            garbage = storm(authenticator, issuer)
            async with asyncio.timeout(5):
                await arrived.wait()
                await stores.cache.set("greeting", "hello", ttl_seconds=60)
                assert await stores.cache.get("greeting") == "hello"
        async with asyncio.timeout(5):
            await asyncio.gather(*garbage)
    finally:
        await stores.aclose()
        client.delete_table(TableName=table)


async def test_a_jwks_fetch_does_not_queue_behind_a_full_default_executor(issuer: Issuer) -> None:
    # The application's blocking calls (asyncio.to_thread, run_in_executor) fill the event loop's default
    # executor (at most 32 threads); the key set is fetched on a thread of its own, so tokens still verify.
    authenticator = authenticator_for(issuer, Clock())
    release = threading.Event()
    loop = asyncio.get_running_loop()
    blocked = [loop.run_in_executor(None, release.wait, 10) for _ in range(40)]  # queued before the call below
    try:
        async with asyncio.timeout(5):
            principal = await authenticator.authenticate(bearer(issuer.token("rsa-1", sub="ana")), {})
        assert principal.subject == "ana"
    finally:
        release.set()
        async with asyncio.timeout(5):
            await asyncio.gather(*blocked)
