"""The OAuth 2.1 resource server: bearer JWTs checked against the issuer's JWKS, metadata, challenges."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import httpx
import pytest

from stratus import Context, McpServer, Settings
from stratus.auth.bearer import JwtAuthenticator, ResourceServer
from stratus.auth.jwks import KeySet
from stratus.errors import UnauthorizedError
from stratus.settings import SettingsError
from tests.fixtures.clients import McpFactory
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, Issuer
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio

METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


def make_server() -> McpServer:
    server = McpServer("secured")

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.user.subject if ctx.user else "nobody"

    @server.tool(scopes=["reports:write"])
    def write_report() -> str:
        return "written"

    return server


def settings_for(issuer: Issuer) -> Settings:
    return Settings(
        auth_mode="jwt",
        auth_issuer=ISSUER,
        auth_audience=AUDIENCE,
        auth_jwks_url=issuer.url,
        auth_scopes=("tools:read", "reports:write"),
    )


@pytest.fixture
async def mcp(mcp_factory: McpFactory, issuer: Issuer) -> McpHttp:
    return await mcp_factory(make_server(), settings_for(issuer))


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def whoami(mcp: McpHttp, headers: dict[str, str]) -> httpx.Response:
    return await mcp.stateless("tools/call", {"name": "whoami"}, headers=headers)


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1"])
async def test_a_valid_rsa_or_ec_token_names_the_user(mcp: McpHttp, issuer: Issuer, kid: str) -> None:
    response = await whoami(mcp, bearer(issuer.token(kid, sub="ana")))
    assert response.status_code == 200
    assert response.json()["result"]["content"] == [{"type": "text", "text": "ana"}]


async def test_no_token_is_401_pointing_at_the_metadata(mcp: McpHttp) -> None:
    response = await whoami(mcp, {})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA_URL}", scope="tools:read reports:write"'
    )
    assert response.json()["error"]["code"] == -31401
    # A front door that renames the header (API Gateway REST) still lets a client reading the body find the metadata.
    assert response.json()["error"]["data"] == {"resource_metadata": METADATA_URL}


async def test_behind_a_rest_api_stage_the_challenge_points_inside_the_stage(
    mcp_factory: McpFactory, issuer: Issuer
) -> None:
    staged = dataclasses.replace(
        settings_for(issuer), auth_audience="https://api.example.com/v1/mcp", auth_stage_path="/v1"
    )
    client = await mcp_factory(make_server(), staged)
    response = await whoami(client, {})
    inside = "https://api.example.com/v1/.well-known/oauth-protected-resource/mcp"
    assert response.headers["www-authenticate"].startswith(f'Bearer resource_metadata="{inside}"')
    # The front door strips the stage, so the app serves the document at its own well-known path.
    metadata = await client.http.get("/.well-known/oauth-protected-resource/mcp")
    assert metadata.json()["resource"] == "https://api.example.com/v1/mcp"


@pytest.mark.parametrize("stage", ["v1", "/v2", "/v1/mcp/extra"])
def test_a_stage_path_that_does_not_begin_the_audience_is_refused(issuer: Issuer, stage: str) -> None:
    with pytest.raises(SettingsError, match="STRATUS_AUTH_STAGE_PATH"):
        dataclasses.replace(settings_for(issuer), auth_audience="https://api.example.com/v1/mcp", auth_stage_path=stage)


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": 1_000_000},
        {"aud": "https://other.example.com/mcp"},
        {"iss": "https://evil.example.com/"},
        {"nbf": 4_102_444_800},
        {"sub": None},
    ],
    ids=["expired", "wrong-audience", "wrong-issuer", "not-yet-valid", "no-subject"],
)
async def test_tokens_failing_a_claim_check_are_401_invalid_token(
    mcp: McpHttp, issuer: Issuer, claims: dict[str, Any]
) -> None:
    response = await whoami(mcp, bearer(issuer.token(**claims)))
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_a_signature_from_another_key_is_refused(mcp: McpHttp, issuer: Issuer) -> None:
    issuer.add_key("rogue", publish=False)
    response = await whoami(mcp, bearer(issuer.token("rsa-1", sign_with="rogue")))
    assert response.status_code == 401


async def test_unsigned_alg_none_tokens_are_refused(mcp: McpHttp, issuer: Issuer) -> None:
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "rsa-1"}).encode()).rstrip(b"=").decode()
    claims = json.loads(json.dumps({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": 4_102_444_800}))
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    response = await whoami(mcp, bearer(f"{header}.{payload}."))
    assert response.status_code == 401


async def test_a_token_in_the_query_string_is_ignored(mcp: McpHttp, issuer: Issuer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = await mcp.http.post(f"/mcp?access_token={issuer.token()}", json=body)
    assert response.status_code == 401


async def test_missing_scope_on_a_tool_is_403_insufficient_scope(mcp: McpHttp, issuer: Issuer) -> None:
    response = await mcp.stateless("tools/call", {"name": "write_report"}, headers=bearer(issuer.token()))
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="reports:write"'
    allowed = await mcp.stateless(
        "tools/call", {"name": "write_report"}, headers=bearer(issuer.token(scope="tools:read reports:write"))
    )
    assert allowed.json()["result"]["content"] == [{"type": "text", "text": "written"}]


async def test_metadata_is_served_at_both_well_known_paths(mcp: McpHttp, issuer: Issuer) -> None:
    expected = {
        "resource": AUDIENCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["tools:read", "reports:write"],
    }
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        response = await mcp.http.get(path)
        assert response.status_code == 200
        assert response.json() == expected


async def test_only_the_oauth_front_door_serves_the_metadata(mcp: McpHttp) -> None:
    """RFC 9728 3.3: a client rejects a document whose `resource` is not the URL it fetched it for. Another front
    door of the same function (another host) answers 404 naming the one resource; its own host and local hosts
    get the document."""
    path = "/.well-known/oauth-protected-resource/mcp"
    elsewhere = await mcp.http.get(path, headers={"host": "abc123.lambda-url.us-east-1.on.aws"})
    assert elsewhere.status_code == 404
    message = elsewhere.json()["error"]
    assert AUDIENCE in message and "STRATUS_AUTH_AUDIENCE" in message
    for host in ("mcp.example.com", "MCP.example.com:443", "localhost:3000", "[::1]:8000"):
        served = await mcp.http.get(path, headers={"host": host})
        assert (served.status_code, served.json()["resource"]) == (200, AUDIENCE), host


async def test_a_session_presented_by_another_principal_is_404(mcp: McpHttp, issuer: Issuer) -> None:
    owner = bearer(issuer.token(sub="owner"))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    session_id = (await mcp.post(init, owner)).headers["mcp-session-id"]
    session = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
    assert (await mcp.post(call, {**session, **owner})).status_code == 200
    hijack = await mcp.post(call, {**session, **bearer(issuer.token(sub="intruder"))})
    assert hijack.status_code == 404
    assert (
        await mcp.http.delete("/mcp", headers={**session, **bearer(issuer.token(sub="intruder"))})
    ).status_code == 404


async def test_an_unknown_kid_refreshes_the_key_set_once_then_fails(issuer: Issuer) -> None:
    now = [0.0]
    keys = KeySet(issuer.url, refresh_interval=60.0, clock=lambda: now[0])
    authenticator = JwtAuthenticator(ResourceServer(ISSUER, AUDIENCE), keys)
    await authenticator.authenticate(bearer(issuer.token("rsa-1")), {})
    assert keys.fetches == 1
    issuer.add_key("rsa-2")  # the issuer rotates in a new key
    now[0] = 61.0
    principal = await authenticator.authenticate(bearer(issuer.token("rsa-2", sub="rotated")), {})
    assert principal.subject == "rotated" and keys.fetches == 2
    issuer.add_key("never-published", publish=False)
    with pytest.raises(UnauthorizedError):
        await authenticator.authenticate(bearer(issuer.token("never-published")), {})
    assert keys.fetches == 2  # refreshed a moment ago: an unknown kid cannot make us hammer the issuer
