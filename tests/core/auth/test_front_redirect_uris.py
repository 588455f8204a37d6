"""Redirect URIs are read as a browser reads them: what would send the code somewhere other than it seems, run
something in the browser or the operating system, or break the front's own answers is refused at registration with
RFC 7591's `invalid_redirect_uri`, and the consent page names the host the browser will go to."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from stratus import McpServer, Settings, build_app
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from stratus.transport.oauth.clients import Client
from stratus.transport.oauth.records import FrontRecords
from stratus.transport.oauth.redirect_uris import destination

pytestmark = pytest.mark.anyio
FRONT = Settings(
    auth_mode="front",
    auth_audience="https://mcp.example.com/mcp",
    auth_upstream_issuer="http://127.0.0.1:9/unreachable",
    auth_upstream_client_id="stratus",
    auth_upstream_client_secret="upstream-secret",
    allowed_hosts=("mcp.example.com",),
)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(McpServer("front"), FRONT)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://mcp.example.com") as client:
        yield client
    await app.shutdown()


async def register(http: httpx.AsyncClient, redirect_uri: str) -> httpx.Response:
    document = {"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none"}
    return await http.post("/register", json=document)


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://evil.example\\@127.0.0.1/cb",  # a browser goes to evil.example
        "http://evil.example\\.127.0.0.1/cb",
        "https://legit.example@evil.example/cb",
        "http://user:pass@127.0.0.1/cb",
        "http:127.0.0.1/cb",
        "https://%65vil.example/cb",
        "ms-msdt:/id PCWDiagnostic",
        "ms-msdt:-id",
        "search-ms:query=calc",
        "jar:https://evil.example/a.jar!/cb",
        "view-source:https://evil.example/cb",
        "JavaScript:alert(1)",
        "https://app.example/c b",
        "https://app.example/cb\r\nSet-Cookie: x=1",
        "https://app.example/cb\tx",
        "https://app.example/caf\u00e9",
        "https://app.example/\u20ac",
        "http://127.0.0.1\u3002evil.example/cb",
    ],
)
async def test_a_redirect_uri_a_browser_would_read_otherwise_is_refused_at_registration(
    http: httpx.AsyncClient, redirect_uri: str
) -> None:
    answer = await register(http, redirect_uri)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://127.0.0.1:33418/callback",
        "http://localhost:6274/oauth/callback",
        "http://[::1]:8080/cb",
        "https://vscode.dev/redirect",
        "https://app.example/cb?tenant=a%20b",
        "com.example.app:/oauth2redirect",
        "cursor://anysphere.cursor-retrieval/oauth/callback",
    ],
)
async def test_the_redirect_uris_hosts_use_are_accepted(http: httpx.AsyncClient, redirect_uri: str) -> None:
    answer = await register(http, redirect_uri)
    assert answer.status_code == 201 and answer.json()["redirect_uris"] == [redirect_uri]


@pytest.mark.parametrize(
    ("redirect_uri", "shown"),
    [
        ("https://legit.example@evil.example/cb", "evil.example"),
        ("http://evil.example\\@127.0.0.1/cb", "evil.example"),
        ("https://App.Example:8443/cb", "app.example:8443"),
        ("http://[::1]:8080/cb", "[::1]:8080"),
        ("com.example.app:/cb", "com.example.app:"),
    ],
)
def test_the_consent_page_names_the_host_the_browser_will_go_to(redirect_uri: str, shown: str) -> None:
    assert destination(redirect_uri) == shown


async def test_the_consent_page_shows_the_destination_host_and_port(http: httpx.AsyncClient) -> None:
    client_id = (await register(http, "https://app.example:8443/cb")).json()["client_id"]
    parameters = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "https://app.example:8443/cb",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    page = await http.get("/authorize", params=parameters)
    assert page.status_code == 200 and "your browser goes to <code>app.example:8443</code>" in page.text


@pytest.mark.parametrize("kept", ["https://app.example/cb\r\nSet-Cookie: x=1", "https://app.example/\u20ac"])
async def test_a_redirect_uri_kept_from_before_these_checks_gets_a_page_and_no_sign_in(kept: str) -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    client = Client("old-client", (kept,), "Old", "none", ("authorization_code",))
    await FrontRecords(stores.cache).put("client", "old-client", client.record(), 600)
    app = build_app(McpServer("front"), FRONT, stores=stores)
    parameters = {
        "response_type": "code",
        "client_id": "old-client",
        "redirect_uri": kept,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://mcp.example.com") as http:
        answer = await http.get("/authorize", params=parameters)
    await app.shutdown()
    assert answer.status_code == 400 and "location" not in answer.headers
