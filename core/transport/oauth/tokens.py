"""The token endpoint (OAuth 2.1 section 3.2) and revocation (RFC 7009).

Access tokens are JWTs for this resource alone (`aud`), signed with the front's key and short-lived
(`STRATUS_AUTH_TOKEN_SECONDS`). Refresh tokens are opaque, single use, and rotate on every refresh (OAuth 2.1 section
4.3.1). Every token from one sign-in belongs to one grant: a code or refresh token presented twice (a replay: RFC 6749
section 4.1.2 and OAuth 2.1 section 4.14.2) revokes the grant, and so does revoking any of its tokens. An access
token already issued lives out its short life: resource servers do not look it up.

Both endpoints know who is calling (RFC 6749 section 2.3): a confidential client by its secret, in the Basic header or
the form, or a public client by its ID alone.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import unquote

from stratus.auth.front_config import CODE_SECONDS, FrontConfig
from stratus.auth.front_key import SigningKey
from stratus.transport.asgi import request_headers
from stratus.transport.oauth.authorization import s256
from stratus.transport.oauth.clients import Client, ClientRegistry
from stratus.transport.oauth.records import FrontRecords
from stratus.transport.oauth.replies import OAuthError, read_form, send_error, send_json, send_preflight
from stratus.types import Receive, Scope, Send

logger = logging.getLogger("stratus.auth")
PKCE_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
"""RFC 7636 section 4.1: what a code_verifier may be (so only ASCII reaches the hash)."""
ClientRequest = Callable[[Client, dict[str, str]], Awaitable[dict[str, Any]]]


def _basic(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, colon, secret = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_client", "the Basic credentials are malformed", 401) from None
    if not colon:
        raise OAuthError("invalid_client", "the Basic credentials are malformed", 401)
    return unquote(client_id), unquote(secret)


async def authenticate_client(
    clients: ClientRegistry, form: Mapping[str, str], headers: Mapping[str, str], scope: Scope
) -> Client:
    basic = _basic(headers.get("authorization", ""))
    challenge = {"www-authenticate": 'Basic realm="token"'} if basic else {}
    if basic is not None:
        client_id, secret = basic
        if form.get("client_id", client_id) != client_id:
            raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
    else:
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
    if not client_id:
        raise OAuthError("invalid_client", "no client_id", 401, challenge)
    try:
        client = await clients.find(client_id, scope)
    except OAuthError as error:
        raise OAuthError("invalid_client", error.description, 401, challenge) from None
    if client is None:
        raise OAuthError(
            "invalid_client", "unknown client (its registration may have expired: register again)", 401, challenge
        )
    if client.auth_method != "none" and not client.secret_matches(secret):
        raise OAuthError("invalid_client", "the client's credentials are wrong", 401, challenge)
    return client


class Tokens:
    """POST /token and POST /revoke."""

    def __init__(self, front: FrontConfig, clients: ClientRegistry, records: FrontRecords, key: SigningKey) -> None:
        self._front = front
        self._clients = clients
        self._records = records
        self._key = key

    async def token(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._answer(scope, receive, send, self._grant)

    async def revoke(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._answer(scope, receive, send, self._revocation)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, handle: ClientRequest) -> None:
        """A preflight, or the authenticated client's form handled; any refusal as the RFC's error object."""
        if scope["method"] == "OPTIONS":
            await send_preflight(send)
            return
        try:
            headers = request_headers(scope)
            form = await read_form(scope, receive, headers)
            answer = await handle(await authenticate_client(self._clients, form, headers, scope), form)
        except OAuthError as error:
            await send_error(send, error)
            return
        await send_json(send, 200, answer)

    async def _grant(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            return await self._exchange_code(client, form)
        if grant_type == "refresh_token":
            return await self._refresh(client, form)
        raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")

    async def _revocation(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        token = form.get("token")
        if not token:
            raise OAuthError("invalid_request", "no token to revoke")
        await self._revoke(client, token)
        return {}  # RFC 7009 section 2.2: the same answer for an unknown token

    async def _exchange_code(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        code, verifier = form.get("code"), form.get("code_verifier")
        if not code:
            raise OAuthError("invalid_request", "no code")
        if not verifier:
            raise OAuthError("invalid_request", "PKCE is required: no code_verifier")
        if not PKCE_VERIFIER.fullmatch(verifier):
            raise OAuthError("invalid_request", "code_verifier must be 43 to 128 unreserved characters (RFC 7636)")
        self._check_resource(form)

        def check(grant: dict[str, Any]) -> None:
            if grant["client_id"] != client.client_id:
                raise OAuthError("invalid_grant", "the code was issued to another client")
            if form.get("redirect_uri", grant["redirect_uri"]) != grant["redirect_uri"]:
                raise OAuthError("invalid_grant", "redirect_uri is not the one the code was requested with")
            if not secrets.compare_digest(s256(verifier), grant["code_challenge"]):
                raise OAuthError("invalid_grant", "the code_verifier does not match the code_challenge")

        taken = await self._records.take("code", code, CODE_SECONDS, check)
        if taken.replayed:
            await self._revoke_grant(taken.record)
            logger.warning(
                "an authorization code was presented twice (client %s); its grant is revoked", client.client_id
            )
            raise OAuthError("invalid_grant", "the code was already used; the tokens issued for it are revoked")
        grant = taken.record
        if grant is None:
            raise OAuthError("invalid_grant", "the code is unknown or expired")
        return await self._issue(client, grant, grant["scope"])

    async def _refresh(self, client: Client, form: dict[str, str]) -> dict[str, Any]:
        token = form.get("refresh_token")
        if not token:
            raise OAuthError("invalid_request", "no refresh_token")
        self._check_resource(form)
        asked = form["scope"].split() if "scope" in form else None

        def check(grant: dict[str, Any]) -> None:
            if grant["client_id"] != client.client_id:
                raise OAuthError("invalid_grant", "the refresh token was issued to another client")
            if asked is not None and not set(asked) <= set(grant["scope"]):
                raise OAuthError("invalid_scope", "a refresh may only narrow the scope granted")

        taken = await self._records.take("refresh", token, self._front.refresh_seconds, check)
        if taken.replayed:
            await self._revoke_grant(taken.record)
            logger.warning("a refresh token was presented twice (client %s); its grant is revoked", client.client_id)
            raise OAuthError("invalid_grant", "the refresh token was already used; its grant is revoked")
        grant = taken.record
        if grant is None or await self._records.marked("revoked-grant", grant["grant"]):
            raise OAuthError("invalid_grant", "the refresh token is unknown, expired or revoked")
        return await self._issue(client, grant, grant["scope"] if asked is None else asked)

    def _check_resource(self, form: dict[str, str]) -> None:
        resource = form.get("resource")
        if resource is not None and resource.rstrip("/") != self._front.resource.rstrip("/"):
            raise OAuthError("invalid_target", f"this server issues tokens only for {self._front.resource}")

    async def _issue(self, client: Client, grant: dict[str, Any], scopes: list[str]) -> dict[str, Any]:
        now = int(time.time())
        identity = grant["identity"]
        claims: dict[str, Any] = {
            **identity,
            "iss": self._front.issuer,
            "aud": self._front.resource,
            "client_id": client.client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + self._front.token_seconds,
            "jti": secrets.token_urlsafe(16),
            "sid": grant["grant"],
        }
        answer: dict[str, Any] = {
            "access_token": self._key.sign(claims),
            "token_type": "Bearer",
            "expires_in": self._front.token_seconds,
            "scope": " ".join(scopes),
        }
        if "refresh_token" in client.grant_types:
            refresh = secrets.token_urlsafe(32)
            record = {
                "client_id": client.client_id,
                "scope": grant["scope"],
                "identity": identity,
                "grant": grant["grant"],
            }
            await self._records.put("refresh", refresh, record, self._front.refresh_seconds)
            answer["refresh_token"] = refresh
        return answer

    async def _revoke_grant(self, record: dict[str, Any] | None) -> None:
        if record is not None:
            await self._records.mark("revoked-grant", record["grant"], self._front.refresh_seconds)

    async def _revoke(self, client: Client, token: str) -> None:
        record = await self._records.get("refresh", token)
        if record is not None:
            if record["client_id"] == client.client_id:
                await self._records.mark("revoked-grant", record["grant"], self._front.refresh_seconds)
                await self._records.delete("refresh", token)
            return
        claims = self._key.verified(token, issuer=self._front.issuer, audience=self._front.resource)
        if claims is not None and claims.get("client_id") == client.client_id:
            await self._records.mark("revoked-grant", str(claims["sid"]), self._front.refresh_seconds)
