"""The front's discovery documents: authorization-server metadata (RFC 8414), the same at OpenID discovery's path
(for clients that look there: behind a REST API stage it is the only form that lands inside the stage), and the
JWKS resource servers verify its tokens with."""

from __future__ import annotations

from typing import Any

from stratus.auth.front_config import AUTHORIZE_PATH, JWKS_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH, FrontConfig
from stratus.auth.front_key import ALGORITHM
from stratus.transport.asgi import send_response
from stratus.transport.oauth.replies import send_json, send_preflight
from stratus.types import JsonObject, Receive, Scope, Send


def authorization_server_metadata(front: FrontConfig) -> dict[str, Any]:
    document: dict[str, Any] = {
        "issuer": front.issuer,
        "authorization_endpoint": front.url(AUTHORIZE_PATH),
        "token_endpoint": front.url(TOKEN_PATH),
        "registration_endpoint": front.url(REGISTER_PATH),
        "revocation_endpoint": front.url(REVOKE_PATH),
        "jwks_uri": front.url(JWKS_PATH),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": True,
        # OpenID discovery requires these three; the front issues no ID tokens of its own, so they describe nothing
        # a client can ask for, and clients reading RFC 8414 ignore them.
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
    }
    if front.scopes:
        document["scopes_supported"] = list(front.scopes)
    return document


class PublicDocument:
    """Answers GET with one fixed JSON document, readable from any origin."""

    def __init__(self, document: JsonObject, max_age_seconds: int) -> None:
        self.document = document
        self._cache = {"cache-control": f"max-age={max_age_seconds}", "pragma": ""}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "OPTIONS":
            await send_preflight(send)
        elif scope["method"] not in ("GET", "HEAD"):
            await send_response(send, 405, b"", {"allow": "GET"})
        else:
            await send_json(send, 200, self.document, self._cache)
