"""`stratus check-deploy`'s sign-in check: at a door that challenges with the stack's own authorization front
(`AuthMode=front`), a browser's first steps of a sign-in, and whether its redirects and cookies come through whole.

Behind the REST API a response is the function's stream relayed by API Gateway, which renames some headers and
folds others; a sign-in needs a `Set-Cookie` (the consent page's form is sealed to the browser that opened it, and
allowing is honoured only with its cookie) and a `302` whose `Location` is the provider's. The check registers a
client for a loopback redirect (RFC 7591), opens `/authorize` with PKCE as a host would, allows on the consent page,
and reports what came back at each step; it stops before the provider's own sign-in, which needs a person.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from stratus.handlers.deploy_http import Answer, send

REDIRECT_URI = "http://127.0.0.1:9/callback"
"""Never reached: the check stops at the redirect to the provider, long before the host's."""


def _json(answer: Answer) -> dict[str, Any]:
    status, _, body = answer
    if status != 200:
        raise LookupError(f"answered {status}")
    document = json.loads(body)
    if not isinstance(document, dict):
        raise LookupError("answered something other than a JSON object")
    return document


def _named_metadata(body: Any) -> str | None:
    """The `resource_metadata` a 401's body names: in its JSON-RPC error's `data`, or at its top level."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    for place in (data, body):
        if isinstance(place, dict) and isinstance(place.get("resource_metadata"), str):
            return str(place["resource_metadata"])
    return None


def _front_metadata(endpoint: str, challenge_body: bytes) -> dict[str, Any] | None:
    """The authorization server metadata of the stack's own front, or None when the challenge names another's."""
    resource = _named_metadata(json.loads(challenge_body))
    if resource is None:
        return None
    servers = _json(send("GET", resource)).get("authorization_servers") or []
    issuer = servers[0] if servers and isinstance(servers[0], str) else None
    if issuer is None or urlsplit(issuer).netloc != urlsplit(endpoint).netloc:
        return None
    # OpenID discovery's path is the one inside a REST API's stage (docs/deploy.md, "Sign-in").
    return _json(send("GET", f"{issuer.rstrip('/')}/.well-known/openid-configuration"))


def sign_in(endpoint: str, challenge_body: bytes) -> str:
    """What a browser met on its way to the provider through this door, as one finding."""
    try:
        metadata = _front_metadata(endpoint, challenge_body)
        if metadata is None:
            return "not this stack's front (another authorization server)"
        return _browse(endpoint, metadata)
    except (LookupError, ValueError, KeyError, OSError) as failed:
        return f"failed: {failed}"


def _browse(endpoint: str, metadata: Mapping[str, Any]) -> str:
    registration = {
        "redirect_uris": [REDIRECT_URI],
        "client_name": "stratus check-deploy",
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    }
    registered = send(
        "POST",
        metadata["registration_endpoint"],
        json.dumps(registration).encode(),
        {"content-type": "application/json"},
    )
    if registered[0] != 201:
        return f"registration answered {registered[0]}"
    client_id = json.loads(registered[2])["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": endpoint,
        "state": secrets.token_urlsafe(8),
    }
    authorize = f"{metadata['authorization_endpoint']}?{urlencode(query)}"
    status, headers, page = send("GET", authorize)
    text = page.decode(errors="replace")
    if status != 200 or 'name="request" value="' not in text:
        return f"authorize answered {status} without the consent page"
    cookies = [cookie.split(";", 1)[0] for cookie in headers.get("set-cookie", [])]
    action = urljoin(authorize, html.unescape(text.split('<form method="post" action="', 1)[1].split('"', 1)[0]))
    handle = text.split('name="request" value="', 1)[1].split('"', 1)[0]
    form = urlencode({"request": html.unescape(handle), "decision": "allow"}).encode()
    sent = {"content-type": "application/x-www-form-urlencoded", **({"cookie": "; ".join(cookies)} if cookies else {})}
    status, headers, _ = send("POST", action, form, sent)
    location = (headers.get("location") or [""])[0]
    if status != 302 or not location:
        return f"consent page ({len(cookies)} cookie), then allowing with it answered {status}"
    where = "the provider" if urlsplit(location).netloc != urlsplit(endpoint).netloc else "this stack"
    return f"consent page ({len(cookies)} cookie), then allowing with it: 302 to {where}"
