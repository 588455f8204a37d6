"""The authorization front's answers to requests that never reach the upstream provider: discovery, registration
(RFC 7591) and its cap, and authorization requests refused before any sign-in (RFC 6749 section 4.1.2.1)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from stratus import McpServer, Settings, build_app
from stratus.auth.front_config import FrontConfig
from stratus.transport.oauth.upstream import discovery_url
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.store_backends import REDIS_URL

pytestmark = pytest.mark.anyio

RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://mcp.example.com"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
REDIRECT = "http://127.0.0.1:33418/callback"


def front_settings(**changes: object) -> Settings:
    values: dict[str, object] = {
        "auth_mode": "front",
        "auth_audience": RESOURCE,
        "auth_upstream_issuer": "http://127.0.0.1:9/unreachable",
        "auth_upstream_client_id": "stratus",
        "auth_upstream_client_secret": "upstream-secret",
        "auth_scopes": ("tools:read",),
        "allowed_hosts": ("mcp.example.com",),
        **changes,
    }
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(McpServer("front"), front_settings(auth_registrations_per_hour=3))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://mcp.example.com") as client:
        yield client
    await app.shutdown()


async def register(http: httpx.AsyncClient, **metadata: object) -> httpx.Response:
    document = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    return await http.post("/register", json=document)


@pytest.mark.parametrize("path", ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"])
async def test_the_authorization_server_metadata_names_the_front_endpoints(http: httpx.AsyncClient, path: str) -> None:
    answer = await http.get(path)
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "*"
    document = answer.json()
    assert document["issuer"] == ISSUER
    assert document["authorization_endpoint"] == f"{ISSUER}/authorize"
    assert document["token_endpoint"] == f"{ISSUER}/token"
    assert document["registration_endpoint"] == f"{ISSUER}/register"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["client_id_metadata_document_supported"] is True
    assert document["scopes_supported"] == ["tools:read"]
    protected = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert protected["authorization_servers"] == [ISSUER]


async def test_the_jwks_publishes_one_p256_key(http: httpx.AsyncClient) -> None:
    keys = (await http.get("/oauth/jwks")).json()["keys"]
    assert [(key["kty"], key["crv"], key["alg"], key["use"]) for key in keys] == [("EC", "P-256", "ES256", "sig")]
    assert "d" not in keys[0]


async def test_a_public_client_registers_and_gets_no_secret(http: httpx.AsyncClient) -> None:
    answer = await register(http, client_name="Claude Code", grant_types=["authorization_code", "refresh_token"])
    assert answer.status_code == 201
    client = answer.json()
    assert client["redirect_uris"] == [REDIRECT] and client["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in client and client["client_id"]


async def test_a_client_that_names_no_auth_method_is_confidential_as_rfc_7591_says(http: httpx.AsyncClient) -> None:
    answer = await http.post("/register", json={"redirect_uris": [REDIRECT]})
    assert answer.status_code == 201
    assert answer.json()["token_endpoint_auth_method"] == "client_secret_basic" and answer.json()["client_secret"]


@pytest.mark.parametrize(
    ("redirect_uri", "error"),
    [
        ("http://evil.example.com/callback", "invalid_redirect_uri"),
        ("javascript:alert(1)", "invalid_redirect_uri"),
        ("https://app.example.com/cb#fragment", "invalid_redirect_uri"),
        ("/relative", "invalid_redirect_uri"),
    ],
)
async def test_a_redirect_uri_that_could_leak_the_code_is_refused(
    http: httpx.AsyncClient, redirect_uri: str, error: str
) -> None:
    answer = await register(http, redirect_uris=[redirect_uri])
    assert answer.status_code == 400 and answer.json()["error"] == error


async def test_metadata_the_front_cannot_honour_is_refused(http: httpx.AsyncClient) -> None:
    refused = await register(http, grant_types=["client_credentials"])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_client_metadata"
    not_json = await http.post("/register", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["error"] == "invalid_client_metadata"


async def test_a_registration_body_over_64_kb_is_refused_with_413(http: httpx.AsyncClient) -> None:
    answer = await register(http, client_name="x" * (64 * 1024))
    assert answer.status_code == 413
    assert answer.json()["error"] == "invalid_request"


async def test_a_flood_of_registrations_from_one_address_is_refused_naming_the_setting(
    http: httpx.AsyncClient,
) -> None:
    answers = [await register(http) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [201, 201, 201, 429]
    refused = answers[-1]
    assert refused.json()["error"] == "temporarily_unavailable"
    assert "STRATUS_AUTH_REGISTRATIONS_PER_HOUR" in refused.json()["error_description"]
    assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.uvicorn
async def test_the_registration_cap_counts_the_request_contexts_address_not_the_clients_forwarded_for() -> None:
    """Behind the Web Adapter uvicorn takes the peer address from X-Forwarded-For, which the client writes; the
    adapter's request context header (trusted with STRATUS_TRUST_REQUEST_CONTEXT_HEADER) holds the real one."""
    app = build_app(
        McpServer("front"), front_settings(auth_registrations_per_hour=3, trust_request_context_header=True)
    )

    def from_address(source: str, forged: int) -> dict[str, str]:
        context = json.dumps({"http": {"sourceIp": source}, "domainName": "mcp.example.com"})
        return {"x-amzn-request-context": context, "x-forwarded-for": f"198.51.100.{forged}", "host": "mcp.example.com"}

    with uvicorn_serving(app) as url:
        async with httpx.AsyncClient(base_url=url) as http:
            document = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
            one = [
                await http.post("/register", json=document, headers=from_address("203.0.113.7", n)) for n in range(4)
            ]
            other = await http.post("/register", json=document, headers=from_address("203.0.113.8", 9))
    await app.shutdown()
    assert [answer.status_code for answer in one] == [201, 201, 201, 429]
    assert other.status_code == 201


def authorize_query(client_id: str, **changes: str) -> dict[str, str]:
    parameters = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
        "state": "xyz",
        "resource": RESOURCE,
        "scope": "tools:read",
    }
    parameters.update(changes)
    return parameters


async def test_an_unknown_client_or_unregistered_redirect_gets_a_page_not_a_redirect(http: httpx.AsyncClient) -> None:
    unknown = await http.get("/authorize", params=authorize_query("nobody"))
    assert unknown.status_code == 400 and "location" not in unknown.headers
    assert unknown.headers["content-type"].startswith("text/html")
    client_id = (await register(http)).json()["client_id"]
    elsewhere = await http.get("/authorize", params=authorize_query(client_id, redirect_uri=f"{REDIRECT}/other"))
    assert elsewhere.status_code == 400 and "location" not in elsewhere.headers


async def approved(http: httpx.AsyncClient, client_id: str) -> None:
    """This browser approves the client (the sign-in it starts then fails at the unreachable upstream)."""
    page = await http.get("/authorize", params=authorize_query(client_id))
    handle = page.text.split('name="request" value="', 1)[1].split('"', 1)[0]
    allowed = await http.post("/oauth/consent", data={"request": handle, "decision": "allow"})
    assert allowed.status_code == 302
    assert parse_qs(urlsplit(allowed.headers["location"]).query)["error"] == ["temporarily_unavailable"]


FAULTS = [
    ({"code_challenge": ""}, "invalid_request"),
    ({"code_challenge_method": "plain"}, "invalid_request"),
    ({"response_type": "token"}, "unsupported_response_type"),
    ({"resource": "https://other.example.com/mcp"}, "invalid_target"),
    ({"scope": "admin:everything"}, "invalid_scope"),
]


def faulty(client_id: str, changes: dict[str, str]) -> dict[str, str]:
    parameters = authorize_query(client_id, **changes)
    if changes.get("code_challenge") == "":
        del parameters["code_challenge"]
    return parameters


@pytest.mark.parametrize(("changes", "error"), FAULTS)
async def test_a_faulty_authorization_request_goes_back_to_a_client_this_browser_approved_with_the_rfc_error(
    http: httpx.AsyncClient, changes: dict[str, str], error: str
) -> None:
    client_id = (await register(http)).json()["client_id"]
    await approved(http, client_id)
    answer = await http.get("/authorize", params=faulty(client_id, changes))
    assert answer.status_code == 302
    location = urlsplit(answer.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    sent_back = parse_qs(location.query)
    assert sent_back["error"] == [error] and sent_back["state"] == ["xyz"] and sent_back["iss"] == [ISSUER]


@pytest.mark.parametrize(("changes", "error"), FAULTS)
async def test_a_faulty_authorization_request_for_a_client_this_browser_never_approved_gets_a_page_not_a_redirect(
    http: httpx.AsyncClient, changes: dict[str, str], error: str
) -> None:
    client_id = (await register(http)).json()["client_id"]
    answer = await http.get("/authorize", params=faulty(client_id, changes))
    assert answer.status_code == 400 and "location" not in answer.headers
    assert answer.headers["content-type"].startswith("text/html") and "xyz" not in answer.text


@pytest.mark.parametrize("state", ["s" * 1025, "caf\u00e9", "a\nb"])
async def test_a_state_over_its_bound_or_outside_visible_ascii_gets_a_page(http: httpx.AsyncClient, state: str) -> None:
    client_id = (await register(http)).json()["client_id"]
    answer = await http.get("/authorize", params=authorize_query(client_id, state=state))
    assert answer.status_code == 400 and "location" not in answer.headers and "1024" in answer.text


async def test_sign_ins_one_address_starts_are_capped_naming_the_setting(http: httpx.AsyncClient) -> None:
    client_id = (await register(http)).json()["client_id"]
    await approved(http, client_id)  # one sign-in of the 30 an hour three registrations allow
    answers = [await http.get("/authorize", params=authorize_query(client_id)) for _ in range(30)]
    assert [answer.status_code for answer in answers] == [302] * 29 + [429]
    assert "STRATUS_AUTH_REGISTRATIONS_PER_HOUR" in answers[-1].text


async def test_a_new_client_gets_a_consent_page_that_cannot_be_framed(http: httpx.AsyncClient) -> None:
    client_id = (await register(http, client_name="<b>Sneaky</b>")).json()["client_id"]
    answer = await http.get("/authorize", params=authorize_query(client_id))
    assert answer.status_code == 200 and answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert "&lt;b&gt;Sneaky&lt;/b&gt;" in answer.text and "<b>Sneaky" not in answer.text
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("__Host-stratus-browser=") and "HttpOnly" in cookie and "Secure" in cookie


async def test_a_consent_post_from_another_browser_is_refused(http: httpx.AsyncClient) -> None:
    client_id = (await register(http)).json()["client_id"]
    page = await http.get("/authorize", params=authorize_query(client_id))
    handle = page.text.split('name="request" value="', 1)[1].split('"', 1)[0]
    http.cookies.clear()
    answer = await http.post("/oauth/consent", data={"request": handle, "decision": "allow"})
    assert answer.status_code == 400 and "another browser" in answer.text


async def test_a_denied_consent_sends_access_denied_back_to_the_client(http: httpx.AsyncClient) -> None:
    client_id = (await register(http)).json()["client_id"]
    page = await http.get("/authorize", params=authorize_query(client_id))
    handle = page.text.split('name="request" value="', 1)[1].split('"', 1)[0]
    answer = await http.post("/oauth/consent", data={"request": handle, "decision": "deny"})
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer.headers["location"]).query)["error"] == ["access_denied"]
    again = await http.post("/oauth/consent", data={"request": handle, "decision": "allow"})
    assert again.status_code == 400  # the form is single use


async def test_the_token_endpoint_refuses_an_unknown_client_and_a_wrong_secret(http: httpx.AsyncClient) -> None:
    unknown = await http.post("/token", data={"grant_type": "authorization_code", "client_id": "nobody", "code": "x"})
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    client = (await http.post("/register", json={"redirect_uris": [REDIRECT]})).json()
    wrong = await http.post(
        "/token", data={"grant_type": "authorization_code", "code": "x"}, auth=(client["client_id"], "not-it")
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert wrong.headers["www-authenticate"].startswith("Basic")
    right = await http.post(
        "/token",
        data={"grant_type": "authorization_code", "code": "x", "code_verifier": "v" * 43},
        auth=(client["client_id"], client["client_secret"]),
    )
    assert right.status_code == 400 and right.json()["error"] == "invalid_grant"
    assert right.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("client_id", "reason"),
    [
        ("https://127.0.0.1:8443/client.json", "a loopback address"),
        ("https://localhost/client.json", "a loopback address"),
        ("https://169.254.169.254/latest/meta-data/client", "a link-local address"),
        ("https://10.0.0.7/client.json", "a private address"),
        ("https://[::ffff:127.0.0.1]/client.json", "a loopback address"),
    ],
)
async def test_a_client_metadata_document_inside_the_network_is_never_fetched(
    http: httpx.AsyncClient, client_id: str, reason: str
) -> None:
    answer = await http.get("/authorize", params=authorize_query(client_id))
    assert answer.status_code == 400 and "location" not in answer.headers
    assert reason in answer.text
    token = await http.post("/token", data={"grant_type": "authorization_code", "client_id": client_id, "code": "x"})
    assert token.status_code == 401 and token.json()["error"] == "invalid_client"


@pytest.mark.parametrize("client_id", ["http://app.example.com/client.json", "https://app.example.com/"])
async def test_a_client_id_url_that_cannot_name_a_document_is_refused_before_any_fetch(
    http: httpx.AsyncClient, client_id: str
) -> None:
    answer = await http.get("/authorize", params=authorize_query(client_id))
    assert answer.status_code == 400 and "location" not in answer.headers


@pytest.mark.parametrize(
    ("issuer", "url"),
    [
        (
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc/.well-known/openid-configuration",
        ),
        ("https://tenant.eu.auth0.com/", "https://tenant.eu.auth0.com/.well-known/openid-configuration"),
    ],
)
def test_the_upstream_issuer_is_kept_exactly_and_its_discovery_url_has_one_slash(issuer: str, url: str) -> None:
    front = FrontConfig.from_settings(front_settings(auth_upstream_issuer=issuer))
    assert front.upstream_issuer == issuer  # the ID token's `iss` is compared with it as given
    assert discovery_url(issuer) == url


async def test_anonymous_authorization_requests_write_nothing_to_the_store() -> None:
    """The pending consent is the sealed form, not a record: browsers that have not approved the client, each with a
    state at its bound, leave the store as it was."""
    import redis.asyncio as redis

    prefix = f"front-{uuid.uuid4().hex[:12]}"
    settings = front_settings(store=REDIS_URL, store_prefix=prefix, secret_key=SECRET_KEY)
    app = build_app(McpServer("front"), settings)
    connection = redis.Redis.from_url(REDIS_URL)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ISSUER) as http:
            client_id = (await register(http)).json()["client_id"]
            before = {key async for key in connection.scan_iter(f"{prefix}*")}
            for _ in range(50):
                http.cookies.clear()
                page = await http.get("/authorize", params=authorize_query(client_id, state="s" * 1024))
                assert page.status_code == 200
            after = {key async for key in connection.scan_iter(f"{prefix}*")}
    finally:
        await app.shutdown()
        keys = [key async for key in connection.scan_iter(f"{prefix}*")]
        if keys:
            await connection.delete(*keys)
        await connection.aclose()
    assert after == before


async def test_guessed_codes_and_refresh_tokens_write_nothing_to_the_store() -> None:
    """A guess at /token, /oauth/consent or /oauth/callback is read and refused: no claim is written for a key that
    names no record (a refresh token's would last 30 days), so guessing cannot fill the store."""
    import redis.asyncio as redis

    prefix = f"front-{uuid.uuid4().hex[:12]}"
    settings = front_settings(store=REDIS_URL, store_prefix=prefix, secret_key=SECRET_KEY)
    app = build_app(McpServer("front"), settings)
    connection = redis.Redis.from_url(REDIS_URL)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ISSUER) as http:
            client_id = (await register(http)).json()["client_id"]
            before = {key async for key in connection.scan_iter(f"{prefix}*")}
            for guess in range(5):
                refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": f"guess-{guess}"}
                code = {"grant_type": "authorization_code", "client_id": client_id, "code": f"g{guess}"}
                assert (await http.post("/token", data=refresh)).json()["error"] == "invalid_grant"
                assert (await http.post("/token", data={**code, "code_verifier": "v" * 43})).status_code == 400
                assert (await http.post("/oauth/consent", data={"request": f"g{guess}"})).status_code == 400
                callback = await http.get("/oauth/callback", params={"state": f"g{guess}", "code": "c"})
                assert callback.status_code == 400
            after = {key async for key in connection.scan_iter(f"{prefix}*")}
    finally:
        await app.shutdown()
        keys = [key async for key in connection.scan_iter(f"{prefix}*")]
        if keys:
            await connection.delete(*keys)
        await connection.aclose()
    assert after == before
