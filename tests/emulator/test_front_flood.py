"""A flood of anonymous authorization requests through the Function URL of the stack template.yaml describes with
AuthMode=front (two containers, the real Redis): the store's size stays within the bound docs/reliability.md gives
for a request from a browser that has not approved the client, which is nothing at all."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests.fixtures.emulated_stack import DOORS, TEMPLATE, free_ports, serving
from tests.fixtures.oidc_provider import Provider, cognito_standin
from tests.fixtures.store_backends import REDIS_URL

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn, pytest.mark.slow]
REQUESTS = 10_000
CONCURRENCY = 8
HOST_REDIRECT = "http://127.0.0.1:33418/callback"
ACCEPTED_STATE = "s" * 1024
"""The longest `state` the front keeps: the consent page is shown."""
REFUSED_STATE = "s" * 8000
"""Past it, as far as a request line through the emulated Function URL goes: a page, nothing kept."""


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with cognito_standin() as standin:
        yield standin


def stored(connection: redis.Redis, prefix: str) -> dict[bytes, int]:
    """Every key under `prefix` and the bytes Redis holds for it."""
    return {key: int(connection.memory_usage(key) or 0) for key in connection.scan_iter(f"{prefix}*", count=1000)}


async def test_ten_thousand_anonymous_authorization_requests_leave_the_store_as_it_was(provider: Provider) -> None:
    first = free_ports(len(DOORS) + 1)
    base = f"http://127.0.0.1:{first + DOORS.index('StreamingFunctionUrl')}"
    provider.set_redirect_uris([f"{base}/oauth/callback"])
    parameters = {
        "AuthMode": "front",
        "AuthAudience": f"{base}/mcp",
        "AuthUpstreamIssuer": provider.issuer,
        "AuthUpstreamClientId": provider.client_id,
        "OAuthFrontDoor": "function-url",
    }
    prefix = f"flood-{uuid.uuid4().hex[:12]}"
    environment = {"STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": provider.client_secret, "STRATUS_STORE_PREFIX": prefix}
    connection = redis.Redis.from_url(REDIS_URL)
    try:
        with serving(TEMPLATE, parameters=parameters, port=first, store="redis", environment=environment):
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                registered = await http.post(
                    "/register", json={"redirect_uris": [HOST_REDIRECT], "token_endpoint_auth_method": "none"}
                )
                assert registered.status_code == 201
                query = {
                    "response_type": "code",
                    "client_id": registered.json()["client_id"],
                    "redirect_uri": HOST_REDIRECT,
                    "code_challenge": "w1TpKUdYE9hUAcNSeeSRFioHDxfUxuHho_JHAfZ_vDM",
                    "code_challenge_method": "S256",
                }
                before = stored(connection, prefix)
                statuses: list[int] = []
                turns = iter(range(REQUESTS))

                async def browser() -> None:
                    async with httpx.AsyncClient(base_url=base, timeout=30) as own:
                        for turn in turns:
                            own.cookies.clear()
                            state = ACCEPTED_STATE if turn % 2 else REFUSED_STATE
                            statuses.append((await own.get("/authorize", params={**query, "state": state})).status_code)

                async with asyncio.timeout(1200):
                    await asyncio.gather(*(browser() for _ in range(CONCURRENCY)))
                after = stored(connection, prefix)
    finally:
        keys = list(connection.scan_iter(f"{prefix}*", count=1000))
        if keys:
            connection.delete(*keys)
        connection.close()
    assert after == before
    assert sorted(set(statuses)) == [200, 400] and len(statuses) == REQUESTS
