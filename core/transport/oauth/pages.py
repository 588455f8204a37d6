"""The two pages a user sees at the front: the consent page for a client this browser has not approved (the MCP
security guidance's defence against the confused deputy: a proxy with one upstream client must ask before lending it
to another), and the page that says why an authorization cannot even be sent back to its client."""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from stratus.transport.oauth.replies import send_with_cookies
from stratus.types import Send

PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
}
STYLE = "body{font:16px system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em}code{word-break:break-all}"


def consent_page(
    *, client_name: str, client_id: str, redirect_uri: str, scopes: list[str], resource: str, action: str, request: str
) -> bytes:
    where = urlsplit(redirect_uri)
    destination = where.netloc if where.scheme in ("http", "https") else f"{where.scheme}:"
    name = escape(client_name or "An application")
    scope_items = "".join(f"<li><code>{escape(scope)}</code></li>" for scope in scopes) or "<li>no scopes</li>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Allow access?</title><style>{STYLE}</style></head><body>
<h1>Allow {name} to use <code>{escape(resource)}</code>?</h1>
<p>{name} registered itself; this server has not verified it. Its client ID is <code>{escape(client_id)}</code>.</p>
<p>If you allow it, you will sign in, and the application will act as you at <code>{escape(resource)}</code> with:</p>
<ul>{scope_items}</ul>
<p>After you sign in, your browser goes to <code>{escape(destination)}</code>. Allow only an application you
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
