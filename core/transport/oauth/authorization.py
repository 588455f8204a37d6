"""The authorization endpoint (OAuth 2.1 section 4.1.1) and the consent form it may show.

A request is checked in RFC 6749 section 4.1.2.1's order: an unknown client or a redirect URI it did not register
gets a page (never a redirect); any other fault is sent back to the redirect URI. PKCE is required with S256 only,
and `resource` (RFC 8707), when sent, must be this server's resource. A browser that has not approved this client
for this redirect URI sees the consent page first; then the user goes to the upstream provider to sign in.

The browser a sign-in belongs to is a random, HTTP-only cookie, whose digest every sign-in record carries. The
consent form and the upstream callback are honoured only from the browser that started the sign-in, so a link that
ends someone else's sign-in in a victim's browser (login CSRF) or a forged consent post leads nowhere.

An anonymous request writes nothing until a user acts: the pending consent is not a record but the form's own hidden
field, sealed (HMAC, with a key derived from STRATUS_SECRET_KEY) to this browser for ten minutes, and its nonce is
claimed once when the form comes back. What does write (a sign-in started, a client metadata document fetched) is
capped per source address (source_caps.py), and every parameter kept is bounded (`state` to MAX_STATE_LENGTH
visible ASCII characters, RFC 6749's VSCHAR). A faulty request is sent back to its redirect URI only from a browser
that approved this client for it: anyone else sees a page (RFC 9700 section 4.11.2: no open redirect).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any

from stratus.auth.front_config import CALLBACK_PATH, CONSENT_PATH, CONSENT_SECONDS, SIGN_IN_SECONDS, FrontConfig
from stratus.protocol.request_state import RequestStateError, StateSealer
from stratus.transport.asgi import request_headers
from stratus.transport.oauth.clients import ClientRegistry
from stratus.transport.oauth.records import FrontRecords, digest
from stratus.transport.oauth.redirect_uris import MAX_URI_LENGTH, redirect_uri_problem
from stratus.transport.oauth.replies import (
    OAuthError,
    consent_page,
    query,
    read_form,
    send_page,
    send_redirect,
    send_refusal,
    with_query,
)
from stratus.transport.oauth.source_caps import SourceCap
from stratus.transport.oauth.upstream import OpenIdProvider, UpstreamError, logger
from stratus.types import Receive, Scope, Send

PKCE_CHALLENGE = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
OPENID_SCOPES = frozenset({"openid", "offline_access", "profile", "email"})
"""Scopes some hosts ask of every server; they grant nothing here and are dropped rather than refused."""
MAX_STATE_LENGTH = 1024
"""The longest `state` kept and sent back: clients send 32 to a few hundred characters."""
STATE_CHARACTERS = frozenset(chr(code) for code in range(0x20, 0x7F))
CONSENT_FORM = "oauth-consent"
"""What a sealed consent form is for (a request state sealed for another purpose does not open as one)."""
COOKIE = "stratus-browser"
SECURE_COOKIE = "__Host-stratus-browser"
"""On https: RFC 6265bis's `__Host-` prefix keeps a sibling subdomain from planting the cookie."""


def cookie_name(secure: bool) -> str:
    return SECURE_COOKIE if secure else COOKIE


def browser_id(scope: Scope, secure: bool) -> str | None:
    """The browser's id from its cookie, if it sent one."""
    wanted = cookie_name(secure)
    for name, value in scope.get("headers") or ():
        if name.lower() != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            key, _, found = pair.strip().partition("=")
            if key == wanted and 20 <= len(found) <= 100:
                return str(found)
    return None


def binding(scope: Scope, secure: bool) -> tuple[str, tuple[str, ...]]:
    """The digest that binds a record to this browser, and the cookie to set when the browser had none."""
    found = browser_id(scope, secure)
    if found is not None:
        return digest(found), ()
    made = secrets.token_urlsafe(32)
    attributes = f"Path=/; Max-Age={CONSENT_SECONDS}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")
    return digest(made), (f"{cookie_name(secure)}={made}; {attributes}",)


def is_same_browser(scope: Scope, secure: bool, bound: str) -> bool:
    found = browser_id(scope, secure)
    return found is not None and secrets.compare_digest(digest(found), bound)


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


def error_redirect(request: dict[str, Any], issuer: str, error: OAuthError) -> str:
    """Where a refused request is sent back: its redirect URI with the error, its state and the issuer (RFC 9207)."""
    parameters = {"error": error.error, "error_description": error.description, "iss": issuer}
    if request.get("state") is not None:
        parameters["state"] = request["state"]
    return with_query(request["redirect_uri"], parameters)


def consent_key(browser: str, request: dict[str, Any]) -> str:
    """What a browser's approval is remembered under: the browser, the client and its redirect URI."""
    return f"{browser}|{request['client_id']}|{request['redirect_uri']}"


class Authorization:
    """GET /authorize and POST /oauth/consent."""

    def __init__(
        self,
        front: FrontConfig,
        clients: ClientRegistry,
        records: FrontRecords,
        upstream: OpenIdProvider,
        *,
        sealer: StateSealer,
        cap: SourceCap,
    ) -> None:
        self._front = front
        self._clients = clients
        self._records = records
        self._upstream = upstream
        self._sealer = sealer
        self._cap = cap

    async def authorize(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await send_refusal(send, 405, "The authorization endpoint takes GET requests.")
            return
        try:
            parameters = query(scope)
            request = await self._client_request(scope, parameters)
            client_name = request.pop("client_name")
        except OAuthError as error:
            await send_refusal(send, error.status, error.description)
            return
        found = browser_id(scope, self._front.secure)
        approved = found is not None and await self._records.marked("consent", consent_key(digest(found), request))
        try:
            self._check(parameters, request)
        except OAuthError as error:
            if approved:
                await send_redirect(send, error_redirect(request, self._front.issuer, error))
            else:  # no redirect for a client this browser never approved: it could be anyone's URI
                await send_refusal(send, 400, f"The application's request is faulty: {error.description}.")
            return
        browser, cookies = binding(scope, self._front.secure)
        request["browser"] = browser
        if approved:
            try:
                await self._cap.take(scope, "sign-ins started")
            except OAuthError as error:
                await send_refusal(send, error.status, error.description)
                return
            await self._to_upstream(send, request, cookies)
            return
        sealed, _ = self._sealer.seal(request, principal=browser, digest=CONSENT_FORM)
        page = consent_page(
            client_name=client_name,
            client_id=request["client_id"],
            redirect_uri=request["redirect_uri"],
            scopes=request["scope"],
            resource=self._front.resource,
            action=self._front.url(CONSENT_PATH),
            request=sealed,
        )
        await send_page(send, 200, page, cookies)

    async def consent(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            form = await read_form(scope, receive, request_headers(scope))
        except OAuthError as error:
            await send_refusal(send, error.status, error.description)
            return
        found = browser_id(scope, self._front.secure)
        try:
            if found is None:
                raise RequestStateError
            request, nonce = self._sealer.open(form.get("request", ""), principal=digest(found), digest=CONSENT_FORM)
            await self._cap.take(scope, "sign-ins started")
        except RequestStateError:
            request, nonce = None, ""
        except OAuthError as error:
            await send_refusal(send, error.status, error.description)
            return
        if request is None or not await self._records.claim("consent-form", nonce, SIGN_IN_SECONDS):
            await send_refusal(
                send,
                400,
                "This consent form has expired, was already answered, or was opened in "
                "another browser. Start the sign-in again from your application.",
            )
            return
        if form.get("decision") != "allow":
            denied = OAuthError("access_denied", "the user did not allow this application")
            await send_redirect(send, error_redirect(request, self._front.issuer, denied))
            return
        await self._records.mark("consent", consent_key(request["browser"], request), CONSENT_SECONDS)
        await self._to_upstream(send, request, ())

    async def _client_request(self, scope: Scope, parameters: dict[str, str]) -> dict[str, Any]:
        client_id = parameters.get("client_id", "")
        state = parameters.get("state")
        if len(client_id) > MAX_URI_LENGTH:
            raise OAuthError("invalid_request", f"The client ID is over {MAX_URI_LENGTH} characters.")
        if state is not None and (len(state) > MAX_STATE_LENGTH or not set(state) <= STATE_CHARACTERS):
            raise OAuthError(
                "invalid_request",
                f"The application's state parameter is over {MAX_STATE_LENGTH} characters or holds characters "
                "other than visible ASCII.",
            )
        client = await self._clients.find(client_id, scope) if client_id else None
        if client is None:
            raise OAuthError(
                "invalid_client",
                "The application's client ID is unknown here: it may have expired. "
                "Start the sign-in again from your application.",
            )
        redirect_uri = parameters.get("redirect_uri")
        if redirect_uri is None and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if redirect_uri not in client.redirect_uris:
            raise OAuthError("invalid_request", "The redirect URI is not one this application registered.")
        if redirect_uri_problem(redirect_uri):  # registered before today's checks: never redirected to
            raise OAuthError("invalid_request", "The application's redirect URI is not one a browser may be sent to.")
        if "authorization_code" not in client.grant_types:
            raise OAuthError(
                "unauthorized_client", "This application did not register for the authorization code grant."
            )
        return {"client_id": client_id, "client_name": client.name, "redirect_uri": redirect_uri, "state": state}

    def _check(self, parameters: dict[str, str], request: dict[str, Any]) -> None:
        if parameters.get("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be code")
        challenge = parameters.get("code_challenge")
        if challenge is None:
            raise OAuthError("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256")
        if parameters.get("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256 (plain is not supported)")
        if not PKCE_CHALLENGE.fullmatch(challenge):
            raise OAuthError("invalid_request", "code_challenge must be 43 to 128 unreserved characters")
        resource = parameters.get("resource", self._front.resource)
        if resource.rstrip("/") != self._front.resource.rstrip("/"):
            raise OAuthError("invalid_target", f"this server issues tokens only for {self._front.resource}")
        requested = parameters.get("scope", "").split()
        unknown = [item for item in requested if item not in self._front.scopes and item not in OPENID_SCOPES]
        if unknown:
            raise OAuthError("invalid_scope", f"unknown scope {unknown[0]!r}")
        granted = [item for item in requested if item in self._front.scopes] or list(self._front.scopes)
        request.update(code_challenge=challenge, scope=granted)

    async def _to_upstream(self, send: Send, request: dict[str, Any], cookies: tuple[str, ...]) -> None:
        state, verifier, nonce = (secrets.token_urlsafe(32) for _ in range(3))
        try:
            location = await self._upstream.authorization_url(
                redirect_uri=self._front.url(CALLBACK_PATH), state=state, nonce=nonce, challenge=s256(verifier)
            )
        except UpstreamError as error:
            logger.warning("the upstream identity provider is unavailable: %s", error)
            failed = OAuthError("temporarily_unavailable", "the identity provider cannot be reached; try again")
            await send_redirect(send, error_redirect(request, self._front.issuer, failed), cookies)
            return
        sign_in = {**request, "verifier": verifier, "nonce": nonce}
        await self._records.put("sign-in", state, sign_in, SIGN_IN_SECONDS)
        await send_redirect(send, location, cookies)
