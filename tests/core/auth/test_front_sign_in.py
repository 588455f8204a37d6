"""Signing in through the authorization front end to end, over real HTTP: the front served by uvicorn, Amazon
Cognito's stand-in (oidc-provider, configured as a user pool: no registration, one confidential client) as the
upstream, and the official SDK's OAuth client, which starts from the MCP URL alone, registers itself, sends the user
to sign in, and calls a tool that needs a scope. Then the hostile cases at the token endpoint, each refused with the
RFC's error: a missing or wrong PKCE verifier, a replayed code (which also revokes what it issued), a code issued to
another client, a redirect URI not the one asked with, a refresh token replayed, and tokens for another resource."""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from tests.fixtures.front_sign_in import (
    UPSTREAM_CALLBACK,
    Front,
    HeadlessUser,
    browse_to_client,
    redirect_result,
    serving_front,
)
from tests.fixtures.oauth_discovery import MemoryTokens
from tests.fixtures.oidc_provider import Provider, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEST_SECONDS = 60
HOST_REDIRECT = "http://127.0.0.1:33418/callback"
"""Where the host's listener would be: the browser stops at this redirect and hands its code to the host."""


@pytest.fixture(scope="module")
def front() -> Iterator[Front]:
    with serving_front() as served:
        yield served


async def test_the_sdk_oauth_client_registers_signs_in_and_calls_a_tool_that_needs_a_scope(front: Front) -> None:
    user = HeadlessUser("alice")
    redirect, callback = user.handlers()
    provider = OAuthClientProvider(
        server_url=front.mcp_url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[HOST_REDIRECT],
            client_name="SDK host",
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=(tokens := MemoryTokens()),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    with anyio.fail_after(TEST_SECONDS):
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(20.0)) as http,
            Client(streamable_http_client(front.mcp_url, http_client=http), read_timeout_seconds=20) as client,
        ):
            result = await client.call_tool("write_note", {"text": "hello"})
    await user.aclose()
    assert result.content[0].text == "user-alice wrote hello"  # type: ignore[union-attr]
    assert user.sign_ins == 1 and tokens.tokens is not None and tokens.tokens.refresh_token
    assert tokens.tokens.scope == "notes:write"


# The hostile cases drive the flow by hand: a registered client, a PKCE pair, a code.


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


@pytest.fixture
async def http(front: Front) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=front.url, timeout=20) as client:
        yield client


async def register(http: httpx.AsyncClient) -> str:
    answer = await http.post(
        "/register",
        json={
            "redirect_uris": [HOST_REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        },
    )
    assert answer.status_code == 201, answer.text
    client_id: str = answer.json()["client_id"]
    return client_id


async def code_for(front: Front, client_id: str, challenge: str, username: str = "bob") -> str:
    parameters = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": HOST_REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
        "resource": front.mcp_url,
        "scope": "notes:write",
    }
    async with httpx.AsyncClient(timeout=20) as browser:
        location = await browse_to_client(browser, f"{front.url}/authorize?{urlencode(parameters)}", username)
    result = redirect_result(location)
    assert result.state == "s1" and result.iss == front.url
    return result.code


async def exchange(http: httpx.AsyncClient, **form: str) -> httpx.Response:
    return await http.post("/token", data={"grant_type": "authorization_code", "redirect_uri": HOST_REDIRECT, **form})


async def signed_in(front: Front, http: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    """A newly registered public client, and the tokens of one sign-in for it."""
    client_id = await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    answer = await exchange(http, client_id=client_id, code=code, code_verifier=verifier)
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    return client_id, tokens


async def call_tool(front: Front, token: str) -> httpx.Response:
    headers = {
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    async with httpx.AsyncClient(timeout=20) as client:
        return await client.post(front.mcp_url, json=body, headers=headers)


async def test_a_code_without_its_pkce_verifier_or_with_another_is_refused(
    front: Front, http: httpx.AsyncClient
) -> None:
    client_id = await register(http)
    _, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    missing = await exchange(http, client_id=client_id, code=code)
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
    wrong = await exchange(http, client_id=client_id, code=code, code_verifier=pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


async def test_a_replayed_code_is_refused_and_revokes_the_tokens_it_issued(
    front: Front, http: httpx.AsyncClient
) -> None:
    client_id = await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    first = await exchange(http, client_id=client_id, code=code, code_verifier=verifier)
    assert first.status_code == 200, first.text
    assert first.headers["cache-control"] == "no-store"
    assert (await call_tool(front, first.json()["access_token"])).status_code == 200
    replayed = await exchange(http, client_id=client_id, code=code, code_verifier=verifier)
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": first.json()["refresh_token"]}
    refreshed = await http.post("/token", data=refresh)
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"


async def test_a_code_issued_to_another_client_or_another_redirect_is_refused(
    front: Front, http: httpx.AsyncClient
) -> None:
    owner, thief = await register(http), await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, owner, challenge)
    stolen = await exchange(http, client_id=thief, code=code, code_verifier=verifier)
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
    verifier, challenge = pkce()
    code = await code_for(front, owner, challenge)
    elsewhere = await http.post(
        "/token",
        data={
            "grant_type": "authorization_code",
            "client_id": owner,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": "http://127.0.0.1:1/elsewhere",
        },
    )
    assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "invalid_grant"


async def test_a_refused_code_redemption_leaves_the_code_for_the_clients_honest_try(
    front: Front, http: httpx.AsyncClient
) -> None:
    client_id = await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    elsewhere = await exchange(
        http, client_id=client_id, code=code, code_verifier=verifier, redirect_uri="http://127.0.0.1:1/elsewhere"
    )
    assert elsewhere.status_code == 400 and elsewhere.json()["error"] == "invalid_grant"
    wrong = await exchange(http, client_id=client_id, code=code, code_verifier=pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    not_ascii = await exchange(http, client_id=client_id, code=code, code_verifier="\u00e9" * 43)
    assert not_ascii.status_code == 400 and not_ascii.json()["error"] == "invalid_request"
    honest = await exchange(http, client_id=client_id, code=code, code_verifier=verifier)
    assert honest.status_code == 200, honest.text
    assert (await call_tool(front, honest.json()["access_token"])).status_code == 200


async def test_a_refused_refresh_leaves_the_refresh_token_for_the_clients_honest_try(
    front: Front, http: httpx.AsyncClient
) -> None:
    client_id, tokens = await signed_in(front, http)
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": tokens["refresh_token"]}
    wider = await http.post("/token", data={**refresh, "scope": "notes:write admin:everything"})
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"
    honest = await http.post("/token", data=refresh)
    assert honest.status_code == 200, honest.text
    assert (await call_tool(front, honest.json()["access_token"])).status_code == 200


async def test_refresh_tokens_rotate_and_a_replayed_one_revokes_the_grant(
    front: Front, http: httpx.AsyncClient
) -> None:
    client_id, tokens = await signed_in(front, http)
    refresh = {"grant_type": "refresh_token", "client_id": client_id}
    rotated = await http.post("/token", data={**refresh, "refresh_token": tokens["refresh_token"]})
    assert rotated.status_code == 200 and rotated.json()["refresh_token"] != tokens["refresh_token"]
    assert (await call_tool(front, rotated.json()["access_token"])).status_code == 200
    replayed = await http.post("/token", data={**refresh, "refresh_token": tokens["refresh_token"]})
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    after = await http.post("/token", data={**refresh, "refresh_token": rotated.json()["refresh_token"]})
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"  # the whole grant is revoked


async def test_a_revoked_refresh_token_refreshes_nothing(front: Front, http: httpx.AsyncClient) -> None:
    client_id, tokens = await signed_in(front, http)
    revoked = await http.post("/revoke", data={"client_id": client_id, "token": tokens["refresh_token"]})
    assert revoked.status_code == 200
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": tokens["refresh_token"]}
    assert (await http.post("/token", data=refresh)).json()["error"] == "invalid_grant"


async def test_a_token_for_another_resource_is_refused_at_both_ends(front: Front, http: httpx.AsyncClient) -> None:
    client_id = await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    other = await exchange(
        http, client_id=client_id, code=code, code_verifier=verifier, resource="https://other.example.com/mcp"
    )
    assert other.status_code == 400 and other.json()["error"] == "invalid_target"
    # A token the upstream provider issued (an ID token for its own client) is no token for this resource.
    async with httpx.AsyncClient(timeout=20) as upstream:
        upstream_tokens = await upstream_tokens_for(upstream, front.provider, "carol")
    refused = await call_tool(front, upstream_tokens["id_token"])
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]


async def upstream_tokens_for(http: httpx.AsyncClient, provider: Provider, username: str) -> dict[str, Any]:
    """Tokens straight from the stand-in for its own client (a redirect URI registered for this test)."""
    verifier, challenge = pkce()
    callback = UPSTREAM_CALLBACK
    parameters = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": callback,
        "scope": "openid email",
        "state": "u",
        "nonce": "n",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    discovery = provider.metadata()
    location = await sign_in(http, f"{discovery['authorization_endpoint']}?{urlencode(parameters)}", username)
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = await http.post(
        discovery["token_endpoint"],
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": callback, "code_verifier": verifier},
        auth=(provider.client_id, provider.client_secret),
    )
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    return tokens


async def test_codes_tokens_and_secrets_never_reach_the_logs(
    front: Front, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client_id = await register(http)
    verifier, challenge = pkce()
    code = await code_for(front, client_id, challenge)
    tokens = (await exchange(http, client_id=client_id, code=code, code_verifier=verifier)).json()
    await exchange(http, client_id=client_id, code=code, code_verifier=verifier)  # a replay, refused
    assert (await call_tool(front, tokens["access_token"])).status_code == 200
    server = [record for record in caplog.records if record.name.startswith("stratus")]
    assert [record.getMessage() for record in server if record.levelno == logging.WARNING] == [
        f"an authorization code was presented twice (client {client_id}); its grant is revoked"
    ]
    logged = "\n".join(record.getMessage() for record in server)
    secrets_seen = [code, verifier, tokens["access_token"], tokens["refresh_token"], front.provider.client_secret]
    assert [secret for secret in secrets_seen if secret in logged] == []
