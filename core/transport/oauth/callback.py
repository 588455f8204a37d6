"""Where the upstream provider sends the user back: the sign-in it ends must have started in this browser, its
upstream code is exchanged (and its tokens dropped), and the user's application gets a code of the front's own."""

from __future__ import annotations

import secrets
from typing import Any

from stratus.auth.front_config import CALLBACK_PATH, CODE_SECONDS, SIGN_IN_SECONDS, FrontConfig
from stratus.transport.oauth.authorization import error_redirect, is_same_browser
from stratus.transport.oauth.records import FrontRecords
from stratus.transport.oauth.replies import OAuthError, query, send_redirect, send_refusal, with_query
from stratus.transport.oauth.upstream import OpenIdProvider, UpstreamError, logger
from stratus.types import Receive, Scope, Send

PASSED_ON_ERRORS = frozenset({"access_denied", "temporarily_unavailable", "server_error"})


def identity(claims: dict[str, Any]) -> dict[str, Any]:
    """What the front keeps of who signed in: the subject, the email if any, and the groups (Cognito's or OIDC's)."""
    groups = claims.get("cognito:groups") or claims.get("groups") or []
    kept: dict[str, Any] = {"sub": str(claims["sub"])}
    if isinstance(claims.get("email"), str):
        kept["email"] = claims["email"]
    if isinstance(groups, list) and groups:
        kept["roles"] = [str(group) for group in groups]
    return kept


class Callback:
    def __init__(self, front: FrontConfig, records: FrontRecords, upstream: OpenIdProvider) -> None:
        self._front = front
        self._records = records
        self._upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            parameters = query(scope)
        except OAuthError as error:
            await send_refusal(send, 400, error.description)
            return
        taken = await self._records.take("sign-in", parameters.get("state", ""), SIGN_IN_SECONDS)
        sign_in = taken.fresh
        if sign_in is None:
            await send_refusal(
                send, 400, "This sign-in has expired or was already used. Start again from your application."
            )
            return
        if not is_same_browser(scope, self._front.secure, sign_in["browser"]):
            await send_refusal(
                send,
                400,
                "This sign-in was started in another browser. Start again from your application, in this browser.",
            )
            return
        try:
            location = await self._code_redirect(sign_in, parameters)
        except OAuthError as error:
            location = error_redirect(sign_in, self._front.issuer, error)
        await send_redirect(send, location)

    async def _code_redirect(self, sign_in: dict[str, Any], parameters: dict[str, str]) -> str:
        upstream_error = parameters.get("error")
        if upstream_error is not None or "code" not in parameters:
            error = upstream_error if upstream_error in PASSED_ON_ERRORS else "access_denied"
            raise OAuthError(error, "the sign-in at the identity provider did not complete")
        try:
            claims = await self._upstream.identify(
                code=parameters["code"],
                verifier=sign_in["verifier"],
                redirect_uri=self._front.url(CALLBACK_PATH),
                nonce=sign_in["nonce"],
            )
        except UpstreamError as error:
            logger.warning("a sign-in failed at the upstream identity provider: %s", error)
            raise OAuthError("server_error", "the sign-in at the identity provider failed") from None
        code = secrets.token_urlsafe(32)
        grant = {
            "client_id": sign_in["client_id"],
            "redirect_uri": sign_in["redirect_uri"],
            "code_challenge": sign_in["code_challenge"],
            "scope": sign_in["scope"],
            "identity": identity(claims),
            "grant": secrets.token_urlsafe(16),
        }
        await self._records.put("code", code, grant, CODE_SECONDS)
        answer = {"code": code, "iss": self._front.issuer}
        if sign_in.get("state") is not None:
            answer["state"] = sign_in["state"]
        return with_query(sign_in["redirect_uri"], answer)
