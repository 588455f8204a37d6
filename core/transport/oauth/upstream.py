"""The upstream OpenID provider users sign in at, through the one client it knows this server as (Amazon Cognito's
app client, or any OpenID Connect provider's): its discovery document, the authorization request (with PKCE and a
nonce of the front's own), and the code exchange, whose ID token is verified and then reduced to who signed in.

Upstream tokens stop here: the front keeps none of them and hands none to a client (the MCP security guidance's
token passthrough rule); only the verified identity goes into the front's own grant.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from http.client import HTTPException
from typing import Any
from urllib.parse import quote, urlencode

from stratus.auth.front_config import FrontConfig
from stratus.auth.jwks import JwksUnavailableError, KeySet
from stratus.types import JsonObject

TIMEOUT_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 1_000_000
ID_TOKEN_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
LEEWAY_SECONDS = 30

logger = logging.getLogger("stratus.auth")


class UpstreamError(Exception):
    """The upstream provider could not be reached, refused the exchange, or sent an ID token that does not verify.
    The message is for the logs: it names no secret, token or code."""


@cache
def _upstream_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="stratus-oidc")


def _request(request: urllib.request.Request) -> JsonObject:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 - URL from settings
            document = json.loads(response.read(MAX_DOCUMENT_BYTES))
    except urllib.error.HTTPError as error:
        raise UpstreamError(f"{request.full_url} answered {error.code}") from None
    except (OSError, ValueError, HTTPException) as error:
        raise UpstreamError(f"{request.full_url}: {type(error).__name__}") from None
    if not isinstance(document, dict):
        raise UpstreamError(f"{request.full_url} did not answer a JSON object")
    return document


def discovery_url(issuer: str) -> str:
    """OpenID Connect Discovery section 4: the issuer, without a trailing slash, then the well-known path (Auth0's
    issuers end in a slash, Cognito's do not)."""
    return f"{issuer.rstrip('/')}/.well-known/openid-configuration"


async def _call(request: urllib.request.Request) -> JsonObject:
    return await asyncio.get_running_loop().run_in_executor(_upstream_thread(), _request, request)


class OpenIdProvider:
    """The upstream provider, discovered on first use (and again after a failure)."""

    def __init__(self, front: FrontConfig) -> None:
        self._front = front
        self._discovery: JsonObject | None = None
        self._keys: KeySet | None = None

    async def _document(self) -> JsonObject:
        if self._discovery is None:
            url = discovery_url(self._front.upstream_issuer)
            document = await _call(urllib.request.Request(url, headers={"accept": "application/json"}))  # noqa: S310
            if document.get("issuer") != self._front.upstream_issuer:
                raise UpstreamError(f"{url} names another issuer: {document.get('issuer')!r}")
            for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not str(document.get(field, "")).startswith(("https://", "http://")):
                    raise UpstreamError(f"{url} has no http(s) {field}")
            self._keys = KeySet(str(document["jwks_uri"]))
            self._discovery = document
        return self._discovery

    async def authorization_url(self, *, redirect_uri: str, state: str, nonce: str, challenge: str) -> str:
        document = await self._document()
        parameters = {
            "response_type": "code",
            "client_id": self._front.upstream_client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self._front.upstream_scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        endpoint = str(document["authorization_endpoint"])
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(parameters)

    async def identify(self, *, code: str, verifier: str, redirect_uri: str, nonce: str) -> dict[str, Any]:
        """Exchange the upstream code and return the verified ID token's claims."""
        document = await self._document()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        headers = {"accept": "application/json", "content-type": "application/x-www-form-urlencoded"}
        methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if "client_secret_basic" in methods:
            # RFC 6749 section 2.3.1: each part form-encoded before the Basic encoding.
            pair = (
                f"{quote(self._front.upstream_client_id, safe='')}:{quote(self._front.upstream_client_secret, safe='')}"
            )
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form.update(client_id=self._front.upstream_client_id, client_secret=self._front.upstream_client_secret)
        request = urllib.request.Request(  # noqa: S310 - checked to be http(s) on discovery
            str(document["token_endpoint"]), data=urlencode(form).encode(), headers=headers, method="POST"
        )
        tokens = await _call(request)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise UpstreamError("the token response has no id_token (is `openid` among the client's scopes?)")
        return await self._verify(id_token, nonce)

    async def _verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        import jwt

        assert self._keys is not None  # set with the discovery document
        try:
            header = jwt.get_unverified_header(id_token)
            if header.get("alg") not in ID_TOKEN_ALGORITHMS:
                raise UpstreamError(f"the ID token is signed with {header.get('alg')!r}")
            jwk = await self._keys.key(header.get("kid"))
            if jwk is None:
                raise UpstreamError("the ID token's key is not in the provider's JWKS")
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key=jwt.PyJWK(jwk).key,
                algorithms=[header["alg"]],
                audience=self._front.upstream_client_id,
                issuer=self._front.upstream_issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, JwksUnavailableError, ValueError, TypeError) as error:
            raise UpstreamError(f"the ID token does not verify: {type(error).__name__}") from None
        if claims.get("nonce") != nonce:
            raise UpstreamError("the ID token's nonce is not the one this sign-in sent")
        return claims
