"""The Cognito stand-in (tests/fixtures/oidc_provider.py) behaves as Amazon Cognito does for one app client: what the
authorization front's tests rely on."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
import pytest

from stratus.emulator.sign_in_provider import NODE_VERSION
from tests.fixtures.oidc_provider import Provider, SignInError, cognito_standin, sign_in

CALLBACK = "http://127.0.0.1:9/oauth/callback"
"""Never reached: `sign_in` returns the redirect to it without following it."""


@pytest.fixture(scope="module")
def cognito() -> Iterator[Provider]:
    with cognito_standin(client_id="stratus-front", redirect_uris=[CALLBACK]) as provider:
        yield provider


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(provider: Provider, redirect_uri: str = CALLBACK, **params: str) -> str:
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid email profile",
        "state": secrets.token_urlsafe(8),
        **params,
    }
    return f"{provider.metadata()['authorization_endpoint']}?{urlencode(query)}"


def answer(location: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def redeem(http: httpx.Client, provider: Provider, code: str, **form: str) -> httpx.Response:
    token_endpoint = provider.metadata()["token_endpoint"]
    body = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK, **form}
    return http.post(token_endpoint, data=body, auth=(provider.client_id, provider.client_secret))


def verified_id_token(http: httpx.Client, provider: Provider, id_token: str) -> dict[str, Any]:
    keys = jwt.PyJWKSet.from_dict(http.get(provider.metadata()["jwks_uri"]).json())
    key = next(key for key in keys.keys if key.key_id == jwt.get_unverified_header(id_token)["kid"])
    claims: dict[str, Any] = jwt.decode(
        id_token, key, algorithms=["RS256"], audience=provider.client_id, issuer=provider.issuer
    )
    return claims


def test_discovery_is_cognitos(cognito: Provider) -> None:
    """One fixed client: no registration endpoint; the code grant with refresh tokens, PKCE S256, the client's
    secret in a Basic header (or the form), RS256 ID tokens, at Cognito's paths."""
    metadata = cognito.metadata()
    assert "registration_endpoint" not in metadata
    assert metadata["issuer"] == cognito.issuer
    assert cognito.issuer.startswith("http://127.0.0.1:")
    assert metadata["authorization_endpoint"] == f"{cognito.issuer}/oauth2/authorize"
    assert metadata["token_endpoint"] == f"{cognito.issuer}/oauth2/token"
    assert metadata["jwks_uri"] == f"{cognito.issuer}/.well-known/jwks.json"
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["token_endpoint_auth_methods_supported"] == ["client_secret_basic", "client_secret_post"]
    assert metadata["id_token_signing_alg_values_supported"] == ["RS256"]
    assert {"openid", "email", "profile"} <= set(metadata["scopes_supported"])


@pytest.mark.parametrize("path", ["/reg", "/register", "/oauth2/register", "/connect/register"])
def test_no_dynamic_client_registration(cognito: Provider, http: httpx.Client, path: str) -> None:
    registration = {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
    assert http.post(f"{cognito.issuer}{path}", json=registration).status_code == 404


def test_code_flow_with_pkce_and_client_secret_basic(cognito: Provider, http: httpx.Client) -> None:
    verifier, challenge = pkce()
    state = "state-1"
    url = authorize_url(cognito, state=state, code_challenge=challenge, code_challenge_method="S256", nonce="nonce-1")
    location = sign_in(http, url, "alice", groups=["admins", "ops"])
    assert location.startswith(f"{CALLBACK}?")
    returned = answer(location)
    assert returned["state"] == state
    assert returned["iss"] == cognito.issuer

    tokens = redeem(http, cognito, returned["code"], code_verifier=verifier)
    assert tokens.status_code == 200, tokens.text
    body = tokens.json()
    assert body["token_type"] == "Bearer"
    assert body["scope"] == "openid email profile"
    claims = verified_id_token(http, cognito, body["id_token"])
    assert claims["sub"] == "user-alice"
    assert claims["email"] == "alice@example.com"
    assert claims["email_verified"] is True
    assert claims["cognito:username"] == "alice"
    assert claims["cognito:groups"] == ["admins", "ops"]
    assert claims["token_use"] == "id"
    assert claims["nonce"] == "nonce-1"

    userinfo = http.get(
        cognito.metadata()["userinfo_endpoint"], headers={"authorization": f"Bearer {body['access_token']}"}
    )
    assert userinfo.json()["sub"] == "user-alice"
    # A code is good once.
    assert redeem(http, cognito, returned["code"], code_verifier=verifier).json()["error"] == "invalid_grant"


def test_pkce_is_checked_when_asked_for(cognito: Provider, http: httpx.Client) -> None:
    _, challenge = pkce()
    url = authorize_url(cognito, code_challenge=challenge, code_challenge_method="S256")
    code = answer(sign_in(http, url, "alice"))["code"]
    refused = redeem(http, cognito, code, code_verifier=pkce()[0])
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_grant"


def test_pkce_is_optional_and_the_secret_may_be_in_the_form(cognito: Provider, http: httpx.Client) -> None:
    """Cognito makes PKCE optional for a client with a secret, which client_secret_post may carry too."""
    code = answer(sign_in(http, authorize_url(cognito, scope="openid"), "bob"))["code"]
    token_endpoint = cognito.metadata()["token_endpoint"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
    secret = {"client_id": cognito.client_id, "client_secret": cognito.client_secret}
    tokens = http.post(token_endpoint, data={**form, **secret})
    assert tokens.status_code == 200, tokens.text
    claims = verified_id_token(http, cognito, tokens.json()["id_token"])
    assert claims["sub"] == "user-bob"
    assert "email" not in claims  # not asked for
    assert "cognito:groups" not in claims


def test_pkce_is_all_or_nothing(cognito: Provider, http: httpx.Client) -> None:
    """A challenge needs its method (S256: plain is refused), and a verifier for a code issued without a challenge
    is refused (no downgrade): a client sends `code_verifier` only when it sent `code_challenge`."""
    _, challenge = pkce()
    no_method = answer(sign_in(http, authorize_url(cognito, code_challenge=challenge), "alice"))
    assert no_method["error"] == "invalid_request"
    plain = answer(sign_in(http, authorize_url(cognito, code_challenge=challenge, code_challenge_method="plain"), "a"))
    assert plain["error"] == "invalid_request"
    code = answer(sign_in(http, authorize_url(cognito), "alice"))["code"]
    assert redeem(http, cognito, code, code_verifier=pkce()[0]).json()["error"] == "invalid_grant"


def test_a_wrong_client_secret_is_401_invalid_client(cognito: Provider, http: httpx.Client) -> None:
    code = answer(sign_in(http, authorize_url(cognito), "alice"))["code"]
    token_endpoint = cognito.metadata()["token_endpoint"]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
    refused = http.post(token_endpoint, data=form, auth=(cognito.client_id, "not-the-secret"))
    assert refused.status_code == 401
    assert refused.json()["error"] == "invalid_client"
    assert refused.headers["www-authenticate"].startswith("Basic ")
    unknown = http.post(token_endpoint, data=form, auth=("another-client", cognito.client_secret))
    assert (unknown.status_code, unknown.json()["error"]) == (401, "invalid_client")
    # The code survives the refusals: the client holding the secret still redeems it.
    assert redeem(http, cognito, code).status_code == 200


def test_refresh_token_grant(cognito: Provider, http: httpx.Client) -> None:
    """Every code exchange brings a refresh token (Cognito has no offline_access scope), and a refresh answers new
    access and ID tokens with the same refresh token (not rotated, as Cognito's default)."""
    code = answer(sign_in(http, authorize_url(cognito), "carol"))["code"]
    first = redeem(http, cognito, code).json()
    refresh_token = first["refresh_token"]
    token_endpoint = cognito.metadata()["token_endpoint"]
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    refreshed = http.post(token_endpoint, data=form, auth=(cognito.client_id, cognito.client_secret))
    assert refreshed.status_code == 200, refreshed.text
    body = refreshed.json()
    assert body["access_token"] != first["access_token"]
    assert verified_id_token(http, cognito, body["id_token"])["sub"] == "user-carol"
    assert body.get("refresh_token", refresh_token) == refresh_token
    again = http.post(token_endpoint, data=form, auth=(cognito.client_id, cognito.client_secret))
    assert again.status_code == 200
    wrong = http.post(token_endpoint, data=form, auth=(cognito.client_id, "not-the-secret"))
    assert wrong.status_code == 401


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://127.0.0.1:9/elsewhere",
        f"{CALLBACK}/",
        f"{CALLBACK}?next=1",
        CALLBACK.replace(":9/", ":10/"),
        CALLBACK.replace("127.0.0.1", "localhost"),
        CALLBACK.replace("http:", "https:"),
    ],
)
def test_a_redirect_uri_not_registered_exactly_is_refused(
    cognito: Provider, http: httpx.Client, redirect_uri: str
) -> None:
    """Refused on the provider's own page (400), never redirected to: no loopback port leeway either."""
    with pytest.raises(SignInError) as refused:
        sign_in(http, authorize_url(cognito, redirect_uri), "alice")
    assert refused.value.status_code == 400
    assert "invalid_redirect_uri" in refused.value.text


def test_redirect_uris_set_after_start_replace_the_others(cognito: Provider, http: httpx.Client) -> None:
    later = "http://127.0.0.1:9/later/callback"
    try:
        cognito.set_redirect_uris([later])
        assert answer(sign_in(http, authorize_url(cognito, later), "dave"))["code"]
        with pytest.raises(SignInError, match="invalid_redirect_uri"):
            sign_in(http, authorize_url(cognito, CALLBACK), "dave")
        with pytest.raises(ValueError, match="must contain members"):
            cognito.set_redirect_uris([])
    finally:
        cognito.set_redirect_uris([CALLBACK])
    assert answer(sign_in(http, authorize_url(cognito), "dave"))["code"]


def test_the_admin_endpoint_needs_its_token(cognito: Provider, http: httpx.Client) -> None:
    wrong = {"authorization": "Bearer not-the-token"}
    assert http.put(f"{cognito.issuer}/test/redirect-uris", json=[CALLBACK], headers=wrong).status_code == 401


def test_an_unknown_resource_is_refused(cognito: Provider, http: httpx.Client) -> None:
    """The pool has no resource server: a `resource` parameter is an error redirected to the client (the front must
    not relay the MCP client's own `resource` upstream)."""
    location = sign_in(http, authorize_url(cognito, resource="https://mcp.example.com/mcp"), "alice")
    assert answer(location)["error"] == "invalid_target"


def test_each_sign_in_is_its_own_session(cognito: Provider, http: httpx.Client) -> None:
    """Another user signs in on the same client; the provider's cookies stay out of the client's jar."""
    http.cookies.set("front", "kept", domain="127.0.0.1")
    for username in ("erin", "frank"):
        code = answer(sign_in(http, authorize_url(cognito), username))["code"]
        assert verified_id_token(http, cognito, redeem(http, cognito, code).json()["id_token"])["sub"] == (
            f"user-{username}"
        )
    assert [cookie.name for cookie in http.cookies.jar] == ["front"]


@pytest.mark.anyio
async def test_sign_in_with_an_async_client(cognito: Provider) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        location = await sign_in(client, authorize_url(cognito), "grace")
    assert answer(location)["code"]


def test_the_sign_in_provider_runs_on_the_node_the_scripts_install() -> None:
    """One Node for every Node tool: `stratus local --sign-in` shares the scripts' install (scripts/node-tools)."""
    tools = (Path(__file__).resolve().parents[1] / "scripts" / "node-tools").read_text()
    assert f"NODE_VERSION={NODE_VERSION}\n" in tools
    assert 'NODE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/stratus/node-$NODE_VERSION"' in tools
