"""Who is calling the token and revocation endpoints (RFC 6749 section 2.3): a confidential client by its secret, in
the Basic header or the form, or a public client by its ID alone."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from urllib.parse import unquote

from stratus.transport.oauth.clients import Client, ClientRegistry
from stratus.transport.oauth.replies import OAuthError


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


async def authenticate_client(clients: ClientRegistry, form: Mapping[str, str], headers: Mapping[str, str]) -> Client:
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
        client = await clients.find(client_id)
    except OAuthError as error:
        raise OAuthError("invalid_client", error.description, 401, challenge) from None
    if client is None:
        raise OAuthError(
            "invalid_client", "unknown client (its registration may have expired: register again)", 401, challenge
        )
    if client.auth_method != "none" and not client.secret_matches(secret):
        raise OAuthError("invalid_client", "the client's credentials are wrong", 401, challenge)
    return client
