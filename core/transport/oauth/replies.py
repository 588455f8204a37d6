"""How the front reads its requests and answers them: bounded form and JSON bodies, OAuth error objects (RFC 6749
section 5.2), redirects, and CORS for the endpoints a browser-based host calls with `fetch` (metadata, JWKS,
registration, token, revocation; never the pages a user navigates).

And the two pages a user sees at the front: the consent page for a client this browser has not approved (the MCP
security guidance's defence against the confused deputy: a proxy with one upstream client must ask before lending it
to another), and the page that says why an authorization cannot even be sent back to its client."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from stratus.net.request_body import BodyTooLargeError, read_body
from stratus.request.aws_context import request_context
from stratus.transport.asgi import request_headers, send_response
from stratus.transport.oauth.redirect_uris import destination
from stratus.types import Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
CORS = {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
    "access-control-max-age": "86400",
}
PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
}
STYLE = "body{font:16px system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em}code{word-break:break-all}"


class OAuthError(Exception):
    """An error answered as RFC 6749 section 5.2 (and RFC 7591 section 3.2.2) describe it."""

    def __init__(
        self, error: str, description: str, status: int = 400, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status
        self.headers = dict(headers or {})


async def read_limited(receive: Receive) -> bytes:
    """The request body, refused past MAX_BODY_BYTES."""
    try:
        return await read_body(receive, MAX_BODY_BYTES)
    except BodyTooLargeError:
        raise OAuthError("invalid_request", f"the request body is over {MAX_BODY_BYTES} bytes", 413) from None


def single_values(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Parameters by name; RFC 6749 section 3.1: none may be sent more than once."""
    values: dict[str, str] = {}
    for name, value in pairs:
        if name in values:
            raise OAuthError("invalid_request", f"the parameter {name!r} is sent more than once")
        values[name] = value
    return values


async def read_form(scope: Scope, receive: Receive, headers: Mapping[str, str]) -> dict[str, str]:
    if scope["method"] != "POST":
        raise OAuthError("invalid_request", "use POST", 405, {"allow": "POST"})
    if headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded")
    body = await read_limited(receive)
    try:
        return single_values(parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=bool(body)))
    except (UnicodeDecodeError, ValueError):
        raise OAuthError("invalid_request", "the body is not a form") from None


def query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return single_values(parse_qsl(raw, keep_blank_values=True))


async def send_json(send: Send, status: int, document: Any, headers: Mapping[str, str] | None = None) -> None:
    body = json.dumps(document, separators=(",", ":")).encode()
    await send_response(send, status, body, {"content-type": "application/json", **CORS, **NO_STORE, **(headers or {})})


async def send_error(send: Send, error: OAuthError) -> None:
    document = {"error": error.error, "error_description": error.description}
    await send_json(send, error.status, document, error.headers)


async def send_preflight(send: Send) -> None:
    await send_response(send, 204, b"", CORS)


def with_query(url: str, parameters: Mapping[str, str]) -> str:
    """`url` with `parameters` added to its query (RFC 6749 section 3.1.2: a redirect URI's own query is kept)."""
    separator = "&" if urlsplit(url).query else ("" if url.endswith("?") else "?")
    return url + separator + urlencode(parameters)


async def send_with_cookies(
    send: Send, status: int, body: bytes, headers: Mapping[str, str], cookies: Iterable[str] = ()
) -> None:
    """One complete response, with a `Set-Cookie` header per cookie (a mapping holds one header of a name)."""
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    raw += [(b"set-cookie", cookie.encode()) for cookie in cookies]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def send_redirect(send: Send, location: str, cookies: Iterable[str] = ()) -> None:
    await send_with_cookies(send, 302, b"", {"location": location, "cache-control": "no-store"}, cookies)


def source_address(scope: Scope, *, trust_header: bool) -> str:
    """The client's address as the front door saw it: the request context's `sourceIp` (API Gateway's and Function
    URLs', which the client cannot write), else the connection's peer. Behind the Web Adapter the peer is what
    uvicorn took from the client's own `X-Forwarded-For`, so there the context header must be trusted
    (`STRATUS_TRUST_REQUEST_CONTEXT_HEADER`, as template.yaml sets it)."""
    context = request_context(scope, request_headers(scope), trust_header=trust_header)
    if context is not None:
        for part in ("http", "identity"):  # payload 2.0 and Function URLs; REST API payload 1.0
            section = context.get(part)
            address = section.get("sourceIp") if isinstance(section, dict) else None
            if isinstance(address, str) and address:
                return address
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def consent_page(
    *, client_name: str, client_id: str, redirect_uri: str, scopes: list[str], resource: str, action: str, request: str
) -> bytes:
    where = destination(redirect_uri)
    name = escape(client_name or "An application")
    scope_items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes) or "<li>no scopes</li>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Allow access?</title><style>{STYLE}</style></head><body>
<h1>Allow {name} to use <code>{escape(resource)}</code>?</h1>
<p>{name} registered itself; this server has not verified it. Its client ID is <code>{escape(client_id)}</code>.</p>
<p>If you allow it, you will sign in, and the application will act as you at <code>{escape(resource)}</code> with:</p>
<ul>{scope_items}</ul>
<p>After you sign in, your browser goes to <code>{escape(where)}</code>. Allow only an application you
just started yourself.</p>
<form method="post" action="{escape(action)}">
<input type="hidden" name="request" value="{escape(request)}">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></body></html>""".encode()


async def send_page(send: Send, status: int, body: bytes, cookies: tuple[str, ...] = ()) -> None:
    await send_with_cookies(send, status, body, PAGE_HEADERS, cookies)


async def send_refusal(send: Send, status: int, message: str) -> None:
    """A page for an authorization request that cannot be sent back to its client (RFC 6749 section 4.1.2.1: an
    unknown client or redirect URI must not be redirected to)."""
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in refused</title><style>{STYLE}</style></head><body>
<h1>This sign-in cannot go on</h1><p>{escape(message)}</p></body></html>""".encode()
    await send_page(send, status, body)
